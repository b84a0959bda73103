// A snapshot sent to a peer on a TCP (or TLS) connection of its own, instead of
// the SendSnapshot gRPC call: there, every 1 MiB chunk was copied into a protobuf
// message, then into a gRPC frame, and cut into HTTP/2 DATA frames that the
// receiver copied back together (a learner's 400 MB took about 3 s to arrive).
// Here the file's bytes go to the socket as read and from the socket to the file.
//
// The connection opens with RAW_SNAPSHOT_MAGIC (told apart from HTTP/2 and from
// the raw message stream by the peer listener); the receiver accepts by sending
// the magic back (a member from before raw snapshots sends something else, and
// the sender falls back to gRPC). Then frames, each a 4-byte big-endian word
// (CONTROL_BIT, then the length) and its payload: a control frame holds a
// SnapshotChunk as the gRPC call carries it (the first: sender and Raft message;
// the last: `last` and the CRC-32C of all data), a data frame the snapshot's bytes
// as they are. The receiver answers with one control frame, an Ack (its `error`
// set when the snapshot was not stored), and closes.
import net from 'node:net';
import type tls from 'node:tls';
import type { Ack, TransportHost } from './peerProtocol.js';
import type { NodeId } from '../raft/types.js';
import { connectRaw, MagicReader, peerSerializers } from './rawPeerStream.js';
import { SnapshotReceiver, type ChunkBase, type SnapshotCarrier, type SnapshotChunk } from './snapshotStream.js';

/** What a raw snapshot connection sends first (never the start of an HTTP/2 preface, "PRI *", nor RAW_PEER_MAGIC). */
export const RAW_SNAPSHOT_MAGIC = Buffer.from('LBSNAP1\n', 'latin1');
const CONTROL_BIT = 0x8000_0000;
/** The largest control frame taken (a SnapshotChunk with a Raft message, no data). */
const MAX_CONTROL = 4 << 20;
/** A connection that carries nothing either way for this long is dropped (a peer gone without a reset). */
const IDLE_MS = 60_000;

const chunkCodec = () => peerSerializers('SendSnapshot');
const EMPTY = Buffer.alloc(0);

function frameWord(length: number, control: boolean): Buffer {
  const word = Buffer.allocUnsafe(4);
  word.writeUInt32BE((control ? CONTROL_BIT : 0) + length, 0);
  return word;
}

/** Frames onto the socket, word and payload in one write (corked), no copy. */
function writeFrame(socket: net.Socket, payload: Buffer, control: boolean): boolean {
  socket.cork();
  socket.write(frameWord(payload.length, control));
  const ok = socket.write(payload);
  socket.uncork();
  return ok;
}

function writeControl(socket: net.Socket, message: unknown, encode: (x: unknown) => unknown): boolean {
  return writeFrame(socket, encode(message) as Buffer, true);
}

/**
 * Cuts a byte stream into frames: a control frame's payload whole, a data
 * frame's as the pieces it arrives in (views of the input, never copied).
 */
class FrameCutter {
  private readonly word = Buffer.alloc(4);
  private wordHave = 0;
  private left = 0;
  private control: Buffer[] | undefined;

  constructor(
    private readonly onControl: (payload: Buffer) => void,
    private readonly onData: (piece: Buffer) => void,
  ) {}

  /** Throws on a control frame over MAX_CONTROL. */
  push(chunk: Buffer): void {
    let at = 0;
    while (at < chunk.length) {
      if (this.left === 0) {
        const take = Math.min(4 - this.wordHave, chunk.length - at);
        chunk.copy(this.word, this.wordHave, at, at + take);
        this.wordHave += take;
        at += take;
        if (this.wordHave < 4) return;
        this.wordHave = 0;
        const word = this.word.readUInt32BE(0);
        this.left = word & ~CONTROL_BIT;
        if ((word & CONTROL_BIT) === 0) continue;
        if (this.left > MAX_CONTROL) throw new Error(`snapshot control frame of ${this.left} bytes is over the ${MAX_CONTROL}-byte limit`);
        this.control = [];
        if (this.left === 0) this.endControl();
        continue;
      }
      const take = Math.min(this.left, chunk.length - at);
      const piece = chunk.subarray(at, at + take);
      at += take;
      this.left -= take;
      if (!this.control) this.onData(piece);
      else {
        this.control.push(piece);
        if (this.left === 0) this.endControl();
      }
    }
  }

  private endControl(): void {
    const payload = Buffer.concat(this.control ?? []);
    this.control = undefined;
    this.onControl(payload);
  }
}

/**
 * Dials `url` for a raw snapshot. Resolves to its carrier once the peer accepted
 * it, or to undefined when the peer answered with something else (a member from
 * before raw snapshots: send it over gRPC); rejects when the peer cannot be
 * reached. `done` gets the peer's answer, or the failure, once.
 */
export function dialRawSnapshot(
  url: string,
  secure: tls.ConnectionOptions | undefined,
  done: (err: Error | null, ack?: Ack) => void,
): Promise<SnapshotCarrier | undefined> {
  const socket = connectRaw(url, secure, RAW_SNAPSHOT_MAGIC);
  socket.setNoDelay(true);
  socket.setTimeout(IDLE_MS, () => socket.destroy(new Error(`peer sent nothing for ${IDLE_MS / 1000} s`)));
  const codec = chunkCodec();
  return new Promise((resolve, reject) => {
    let accepted = false;
    let answered = false;
    const answer = (err: Error | null, ack?: Ack) => {
      if (answered) return;
      answered = true;
      if (!accepted) return err ? reject(err) : resolve(undefined);
      done(err, ack);
    };
    const carrier: SnapshotCarrier = {
      writeHeader: (base: ChunkBase, header: Buffer) =>
        void writeControl(socket, { ...base, header, data: EMPTY, last: false, crc32c: 0 }, codec.requestSerialize),
      writeData: (_base: ChunkBase, data: Buffer) => writeFrame(socket, data, false),
      drained: () => new Promise<void>((r) => socket.once('drain', r)),
      writeLast: (base: ChunkBase, crc: number) =>
        void writeControl(socket, { ...base, header: EMPTY, data: EMPTY, last: true, crc32c: crc }, codec.requestSerialize),
      // The peer closes once it has answered.
      end: () => undefined,
      cancel: () => socket.destroy(new Error('snapshot send cancelled')),
    };
    const magic = new MagicReader(RAW_SNAPSHOT_MAGIC);
    const cutter = new FrameCutter(
      (payload) => {
        const ack = codec.responseDeserialize(payload) as Ack;
        answer(ack.error ? new Error(ack.error) : null, ack);
        socket.end();
      },
      () => socket.destroy(new Error('the peer answered a snapshot with data')),
    );
    socket.on('data', (chunk: Buffer) => {
      if (!accepted) {
        const rest = magic.push(chunk);
        if (rest === 'mismatch') {
          answer(null);
          return void socket.destroy();
        }
        if (rest === undefined) return;
        accepted = true;
        resolve(carrier);
        chunk = rest;
      }
      try {
        cutter.push(chunk);
      } catch (e) {
        socket.destroy(e as Error);
      }
    });
    socket.on('error', (e) => answer(e));
    socket.on('close', () => answer(new Error('the peer closed the connection before it answered')));
  });
}

/** The receiving member's side of a connection that opened with RAW_SNAPSHOT_MAGIC. */
export function acceptRawSnapshot(host: TransportHost, heard: (from: NodeId) => void, socket: net.Socket): void {
  const codec = chunkCodec();
  const receiver = new SnapshotReceiver(host, heard, socket);
  let over = false;
  const reply = (ack: Ack) => {
    writeControl(socket, ack, codec.responseSerialize);
    socket.end();
  };
  const cutter = new FrameCutter(
    (payload) => {
      const c = codec.requestDeserialize(payload) as SnapshotChunk;
      receiver.chunk(c);
      if (!c.last) return;
      over = true;
      void receiver.finish().then((o) => reply('ack' in o ? o.ack : { refused: '', superseded_by: '0', error: o.error }));
    },
    (piece) => receiver.data(piece),
  );
  socket.setNoDelay(true);
  socket.setTimeout(IDLE_MS, () => socket.destroy());
  const magic = new MagicReader(RAW_SNAPSHOT_MAGIC);
  let magicSeen = false;
  socket.on('data', (chunk: Buffer) => {
    if (over) return;
    if (!magicSeen) {
      // The listener matched it already; it is still on the socket.
      const rest = magic.push(chunk);
      if (rest === 'mismatch') return void socket.destroy();
      if (rest === undefined) return;
      magicSeen = true;
      chunk = rest;
    }
    try {
      cutter.push(chunk);
    } catch {
      socket.destroy();
    }
  });
  const cutOff = () => {
    if (over) return;
    over = true;
    receiver.abort();
  };
  socket.on('error', cutOff);
  socket.on('close', cutOff);
  socket.write(RAW_SNAPSHOT_MAGIC);
  // The listener paused it while it looked at the first bytes.
  socket.resume();
}
