// Snapshot streaming, both ends, over either carrier: a raw connection of its own
// (rawSnapshot.ts: the file's bytes as read, no protobuf or HTTP/2 framing and no
// copy of them on either side) or the peer service's SendSnapshot gRPC call (for
// members from before raw snapshots).
// Sender: streams a snapshot's chunks as they are read, each write waiting for
// the carrier to drain, with a running CRC-32C sent last; the outcome goes to
// host.snapshotSent() exactly once.
// Receiver: writes the data straight to `<file>.tmp` (refusing strangers before
// anything reaches the disk), checks the CRC-32C, fsyncs, renames, fsyncs the
// directory, and only then tells host.snapshotReceived().
import { GrpcCode } from '../net/grpcCode.js';
import { crc32c } from '../common/crc32c.js';
import { readAhead } from '../common/readAhead.js';
import fs from 'node:fs/promises';
import path from 'node:path';
import { decodeMessage, encodeMessage } from '../raft/codec.js';
import type { NodeId } from '../raft/types.js';
import { refusal, type Ack, type OutgoingSnapshot, type TransportHost } from './peerProtocol.js';
import type { PeerClient } from './peerClient.js';
import type { Reply, StreamingCall } from '../net/serverCalls.js';

const SNAPSHOT_CHUNK = 1 << 20;
/** Bytes gathered before one write to the file (a raw connection hands them over in pieces of about 64 KiB). */
const WRITE_BATCH = 1 << 20;
/** File writes under way before the sender is paused: memory held is about this many batches. */
const WRITES_IN_FLIGHT = 2;

/** Who sends a snapshot, named in its first chunk. */
export interface ChunkBase {
  cluster_id: string;
  from: string;
  to: string;
}

/** A snapshot chunk as the SendSnapshot call carries it (and a raw connection its first and last). */
export interface SnapshotChunk extends ChunkBase {
  header: Buffer;
  data: Buffer;
  last: boolean;
  crc32c: number;
}

/** How a sender's bytes travel to the peer; `done` is called once with the peer's answer or the failure. */
export interface SnapshotCarrier {
  /** The first chunk: the sender, and the Raft message without its data. */
  writeHeader(base: ChunkBase, header: Buffer): void;
  /** false: await drained() before the next write. */
  writeData(base: ChunkBase, data: Buffer): boolean;
  drained(): Promise<void>;
  writeLast(base: ChunkBase, crc: number): void;
  end(): void;
  cancel(): void;
}

/** Opens a carrier whose outcome goes to `done`; rejects when the peer cannot be reached. */
export type OpenCarrier = (done: (err: Error | null, ack?: Ack) => void) => Promise<SnapshotCarrier>;

/** The SendSnapshot gRPC call as a carrier. */
export function grpcCarrier(client: PeerClient): OpenCarrier {
  return (done) => {
    const call = client.sendSnapshot(done);
    const write = (c: Partial<SnapshotChunk> & ChunkBase) => call.write({ header: EMPTY, data: EMPTY, last: false, crc32c: 0, ...c });
    return Promise.resolve({
      writeHeader: (base, header) => void write({ ...base, header }),
      writeData: (base, data) => write({ ...base, data }),
      drained: () => new Promise<void>((resolve) => call.once('drain', resolve)),
      writeLast: (base, crc) => void write({ ...base, last: true, crc32c: crc }),
      end: () => call.end(),
      cancel: () => call.cancel(),
    });
  };
}

const EMPTY = Buffer.alloc(0);

/**
 * Streams the snapshot chunk by chunk: each read is asynchronous and each
 * write waits for the carrier to drain, so a large snapshot never holds the event
 * loop (a burst of a whole database once stalled a leader past the election
 * timeout, and every new leader started the same snapshot again).
 * `closed()` says the sender was closed meanwhile: the transfer is then cancelled.
 */
export async function streamSnapshot(open: OpenCarrier, host: TransportHost, peer: NodeId, snap: OutgoingSnapshot, closed: () => boolean): Promise<void> {
  let finished = false;
  let wake: (() => void) | undefined;
  const done = (err: Error | null, ack?: Ack) => {
    if (finished) return;
    finished = true;
    wake?.();
    const ok = !err && !ack?.refused;
    if (ack?.refused) host.refused(peer, ack.refused, BigInt(ack.superseded_by || '0'));
    if (err) host.logEvent('warn', 'snapshot send failed', { peer: peer.toString(16), error: err.message });
    host.snapshotSent(peer, ok);
  };
  let carrier: SnapshotCarrier | undefined;
  const base = { cluster_id: host.clusterId().toString(), from: host.memberId.toString(), to: peer.toString() };
  let bytes = 0;
  try {
    carrier = await open(done);
    const c = carrier;
    // The carrier drained, or the peer answered (or failed) meanwhile.
    const drained = () =>
      new Promise<void>((resolve) => {
        wake = resolve;
        void c.drained().then(resolve);
      }).finally(() => (wake = undefined));
    c.writeHeader(base, Buffer.from(encodeMessage(snap.message)));
    let crc = 0;
    // Bounded by the snapshot's size; leaving the loop early ends the read behind it.
    for await (const data of readAhead(snap.chunks(SNAPSHOT_CHUNK))) {
      if (finished) return;
      if (closed()) {
        c.cancel(); // the outcome reports the failure to Raft
        return;
      }
      crc = crc32c(data, crc);
      bytes += data.length;
      if (!c.writeData(base, data)) await drained();
    }
    if (finished) return;
    c.writeLast(base, crc);
    c.end();
    host.logEvent('info', 'sent snapshot to peer', { peer: peer.toString(16), index: snap.message.snapshot?.meta.index, bytes });
  } catch (e) {
    if (carrier)
      carrier.cancel(); // the outcome reports the failure to Raft
    else done(e as Error);
  } finally {
    snap.done();
  }
}

/** What a receiver answers: an Ack (accepted or refused), or why the snapshot was not stored. */
export type ReceiveOutcome = { ack: Ack } | { error: string; code: GrpcCode };

/**
 * The receiving end, whatever carries the bytes: data is written straight to a
 * file as it comes (the carrier is paused while the disk catches up), so a
 * database of any size is never held in memory. The CRC-32C over every byte is
 * checked and the file made durable before the member is told. `heard(from)`
 * marks the sender as in contact once the snapshot is stored.
 */
export class SnapshotReceiver {
  private header: Buffer | undefined;
  private from = 0n;
  private clusterId = 0n;
  private expectedCrc: number | undefined;
  private crc = 0;
  private bytes = 0;
  private file = '';
  private out: fs.FileHandle | undefined;
  private failed: Error | undefined;
  /** Data not yet handed to a write, and where it goes in the file. */
  private batch: Buffer[] = [];
  private batchBytes = 0;
  private written = 0;
  private inFlight = 0;
  /** Writes go one after another; `pending` is the tail of that chain. */
  private pending: Promise<void> = Promise.resolve();

  constructor(
    private readonly host: TransportHost,
    private readonly heard: (from: NodeId) => void,
    private readonly flow: { pause(): void; resume(): void },
  ) {}

  /** A chunk of the SendSnapshot call (the raw carrier's first and last are chunks too). */
  chunk(c: SnapshotChunk): void {
    if (!this.header && c.header.length > 0) {
      this.header = c.header;
      this.from = BigInt(c.from);
      this.clusterId = BigInt(c.cluster_id);
      // Strangers are refused before anything reaches the disk.
      if (refusal(this.host, this.clusterId, this.from)) this.failed ??= new Error('refused');
    }
    if (c.data.length > 0) this.data(c.data);
    if (c.last) this.expectedCrc = c.crc32c;
  }

  /** Snapshot bytes, in order. */
  data(data: Buffer): void {
    if (this.failed) return;
    if (!this.header) {
      this.failed = new Error('snapshot data came before its header');
      return;
    }
    this.crc = crc32c(data, this.crc);
    this.bytes += data.length;
    this.batch.push(data);
    this.batchBytes += data.length;
    if (this.batchBytes >= WRITE_BATCH) this.flush();
  }

  private flush(): void {
    if (this.batchBytes === 0) return;
    const buffers = this.batch;
    const at = this.written;
    this.written += this.batchBytes;
    this.batch = [];
    this.batchBytes = 0;
    if (++this.inFlight >= WRITES_IN_FLIGHT) this.flow.pause();
    this.pending = this.pending
      .then(async () => {
        if (this.failed) return;
        if (!this.out) {
          this.file = this.host.incomingSnapshotFile(this.from);
          this.out = await fs.open(`${this.file}.tmp`, 'w');
        }
        for (let pos = at; buffers.length > 0;) {
          // writev may write less than asked: go on from where it stopped.
          const { bytesWritten } = await this.out.writev(buffers, pos);
          pos += bytesWritten;
          for (let n = bytesWritten; n > 0 && buffers.length > 0;) {
            if (buffers[0].length <= n) n -= buffers.shift()!.length;
            else {
              buffers[0] = buffers[0].subarray(n);
              n = 0;
            }
          }
        }
      })
      .catch((e: Error) => {
        this.failed ??= e;
      })
      .finally(() => {
        if (this.inFlight-- === WRITES_IN_FLIGHT) this.flow.resume();
      });
  }

  /** The carrier ended before the snapshot was complete: nothing is kept. */
  abort(): void {
    this.failed ??= new Error('the transfer was cut off');
    this.pending = this.pending.then(() => this.discard());
  }

  /**
   * The sender has sent everything: check, store, and say what to answer. Never
   * rejects (both carriers call it unawaited): a write that failed during the
   * transfer, or anything that throws while storing, is answered as INTERNAL, logged,
   * and the transfer's file removed.
   */
  async finish(): Promise<ReceiveOutcome> {
    try {
      return await this.store();
    } catch (e) {
      await this.discard().catch(() => undefined);
      this.host.logEvent('warn', 'could not store a snapshot from a peer', { peer: this.from.toString(16), error: (e as Error).message });
      return { code: GrpcCode.Internal, error: `snapshot not stored: ${(e as Error).message}` };
    }
  }

  private async store(): Promise<ReceiveOutcome> {
    this.flush();
    await this.pending;
    const no = refusal(this.host, this.clusterId, this.from);
    if (no) {
      await this.discard();
      return { ack: no };
    }
    if (this.failed) throw this.failed; // answered by finish()
    if (!this.header || this.expectedCrc === undefined || this.crc !== this.expectedCrc || !this.out) {
      await this.discard();
      this.host.logEvent('warn', 'discarded a damaged snapshot', { peer: this.from.toString(16), bytes: this.bytes });
      return { code: GrpcCode.DataLoss, error: 'snapshot checksum mismatch' };
    }
    await this.out.sync();
    await this.out.close();
    await fs.rename(`${this.file}.tmp`, this.file);
    const dir = await fs.open(path.dirname(this.file), 'r');
    await dir.sync().finally(() => dir.close());
    this.heard(this.from);
    this.host.snapshotReceived(decodeMessage(this.header), this.file);
    return { ack: { refused: '', superseded_by: '0' } };
  }

  private async discard(): Promise<void> {
    await this.out?.close().catch(() => undefined);
    this.out = undefined;
    if (this.file) await fs.rm(`${this.file}.tmp`, { force: true });
  }
}

/** The peer service's SendSnapshot handler. */
export function receiveSnapshot(host: TransportHost, heard: (from: NodeId) => void, call: StreamingCall, cb: Reply<Ack>): void {
  const r = new SnapshotReceiver(host, heard, call);
  call.on('data', (c: SnapshotChunk) => r.chunk(c));
  call.on('error', () => r.abort());
  call.on('end', () => {
    void r.finish().then((o) => ('ack' in o ? cb(null, o.ack) : cb({ code: o.code, details: o.error })));
  });
}
