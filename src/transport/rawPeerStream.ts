// Raft envelopes between members over a TCP (or TLS) connection of their own
// instead of a grpc-js bidi stream: every message otherwise went through grpc-js's
// call, message framing and HTTP/2 DATA frames on both sides, about a third of
// the time a serial put spends between members. Same protobuf Envelope and Ack
// as the gRPC Stream method, framed as a 4-byte big-endian length then the
// message; the connection opens with RAW_PEER_MAGIC (told apart from HTTP/2 by
// the peer listener, net/authorityListener.ts), and the receiver accepts the
// stream by sending the magic back, as gRPC's response headers did (a member that
// speaks only gRPC sends HTTP/2 bytes instead, and the sender falls back to gRPC).
// Snapshots, Identity and Forward stay on gRPC.
import { EventEmitter } from 'node:events';
import net from 'node:net';
import tls from 'node:tls';
import { ProtoReader, ProtoWriter } from '../common/protobufWire.js';
import { hostPort, splitHostPort } from '../common/urls.js';
import { serviceDefinition } from '../proto/load.js';
import type { Ack, Envelope } from './peerProtocol.js';

/** What a raw peer connection sends first (never the start of an HTTP/2 preface, "PRI *"). */
export const RAW_PEER_MAGIC = Buffer.from('LBPEER1\n', 'latin1');
/** The largest frame taken, as the gRPC stream's message limit (an envelope is at most about 4 MiB). */
const MAX_FRAME = 64 << 20;
/**
 * Liveness, which gRPC's keepalive pings gave: a receiver that is getting data
 * answers with an empty frame at most every KEEPALIVE_MS, and a sender that wrote
 * but heard nothing for DEAD_AFTER_MS drops the connection (a peer host gone
 * without a reset would otherwise hold it for the many minutes TCP retries).
 */
const KEEPALIVE_MS = 2000;
const DEAD_AFTER_MS = 10_000;

interface Codec {
  encodeEnvelope(e: Envelope): Buffer;
  decodeEnvelope(b: Buffer): Envelope;
  encodeAck(a: Ack): Buffer;
  decodeAck(b: Buffer): Ack;
}
type Serializers = Record<'requestSerialize' | 'requestDeserialize' | 'responseSerialize' | 'responseDeserialize', (x: unknown) => unknown>;

/** A peer service method's own gRPC serializers: one definition of the messages, whatever carries them. */
export function peerSerializers(method: 'Stream' | 'SendSnapshot'): Serializers {
  return serviceDefinition('lifeboat.peer.Peer')[method] as unknown as Serializers;
}

let codec: Codec | undefined;
function codecOf(): Codec {
  if (codec) return codec;
  const m = peerSerializers('Stream');
  codec = {
    encodeEnvelope: m.requestSerialize as Codec['encodeEnvelope'],
    decodeEnvelope: m.requestDeserialize as Codec['decodeEnvelope'],
    encodeAck: m.responseSerialize as Codec['encodeAck'],
    decodeAck: m.responseDeserialize as Codec['decodeAck'],
  };
  return codec;
}

/** Cuts a byte stream into frames' payloads (views of the input where a frame lies in one chunk). */
class FrameReader {
  private chunks: Buffer[] = [];
  private have = 0;

  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk);
    this.have += chunk.length;
    const out: Buffer[] = [];
    for (;;) {
      if (this.have < 4) return out;
      let head = this.chunks[0];
      if (head.length < 4) head = this.merge();
      const len = uint32At(head, 0);
      if (len > MAX_FRAME) throw new Error(`peer frame of ${len} bytes is over the ${MAX_FRAME}-byte limit`);
      if (this.have < 4 + len) return out;
      if (head.length < 4 + len) head = this.merge();
      out.push(head.subarray(4, 4 + len));
      const rest = head.subarray(4 + len);
      this.chunks[0] = rest;
      this.have -= 4 + len;
      if (rest.length === 0) this.chunks.shift();
    }
  }

  private merge(): Buffer {
    const all = Buffer.concat(this.chunks, this.have);
    this.chunks = [all];
    return all;
  }
}

/** Reads `magic` off the start of a stream: what follows it, undefined until it is whole, or 'mismatch'. */
export class MagicReader {
  private seen = 0;

  constructor(private readonly magic: Buffer) {}

  push(chunk: Buffer): Buffer | undefined | 'mismatch' {
    const take = Math.min(this.magic.length - this.seen, chunk.length);
    if (!chunk.subarray(0, take).equals(this.magic.subarray(this.seen, this.seen + take))) return 'mismatch';
    this.seen += take;
    return this.seen < this.magic.length ? undefined : chunk.subarray(take);
  }
}

/**
 * Envelopes as frames of one raw connection, in the Envelope message's bytes. Its
 * first three fields (cluster, sender, receiver) hardly ever change on a
 * connection, so their bytes are encoded once and, on receipt, compared rather
 * than decoded: turning those 64-bit IDs into decimal strings and back for every
 * envelope was most of what an idle leader allocated.
 */
export class EnvelopeFrames {
  private sent: { env: Envelope; head: Buffer } | undefined;
  private seen: { env: Envelope; head: Buffer } | undefined;

  /** `env` as a whole frame: the 4-byte length, the header fields' bytes, then each message (field 4). */
  frame(env: Envelope): Buffer {
    let s = this.sent;
    if (!s || s.env.cluster_id !== env.cluster_id || s.env.from !== env.from || s.env.to !== env.to) s = this.sent = headOf(env);
    let size = s.head.length;
    for (const m of env.messages) size += m.length + 11;
    const w = new ProtoWriter(4 + size).raw(NO_LENGTH).raw(s.head);
    for (const m of env.messages) w.bytesAlways(4, m);
    const out = w.view();
    putUint32(out, 0, out.length - 4);
    return out;
  }

  /** A frame's payload as an Envelope; the header fields are decoded only when they differ from the last frame's. */
  read(payload: Buffer): Envelope {
    const s = this.seen;
    if (s && startsWith(payload, s.head)) {
      const messages = messagesFrom(payload, s.head.length);
      if (messages) return { cluster_id: s.env.cluster_id, from: s.env.from, to: s.env.to, messages };
    }
    const env = codecOf().decodeEnvelope(payload);
    const h = headOf(env);
    this.seen = startsWith(payload, h.head) ? h : undefined;
    return env;
  }
}

const NO_LENGTH = Buffer.alloc(4);

function headOf(env: Envelope): { env: Envelope; head: Buffer } {
  return { env, head: codecOf().encodeEnvelope({ cluster_id: env.cluster_id, from: env.from, to: env.to, messages: [] }) };
}

/** Field 4 (bytes) repeated from `start` to the end, as views; undefined if anything else is there. */
function messagesFrom(payload: Buffer, start: number): Buffer[] | undefined {
  const r = new ProtoReader(payload, start);
  const out: Buffer[] = [];
  while (!r.done) {
    if (r.uint() !== MESSAGES_TAG) return undefined;
    out.push(r.bytes());
  }
  return out;
}

// Not Buffer's methods that take offsets: those check their arguments through a
// wrapper of Node's that all such calls share, and on an idle member that wrapper
// alone soon got hot enough for V8's optimizing compiler (about 4 MiB more memory
// once it first runs). Nor loops over bytes: one got as hot.

function startsWith(b: Buffer, prefix: Buffer): boolean {
  return b.length >= prefix.length && b.subarray(0, prefix.length).equals(prefix);
}

function uint32At(b: Buffer, at: number): number {
  return b[at] * 0x100_0000 + ((b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]);
}

function putUint32(b: Buffer, at: number, n: number): void {
  b[at] = n >>> 24;
  b[at + 1] = (n >>> 16) & 0xff;
  b[at + 2] = (n >>> 8) & 0xff;
  b[at + 3] = n & 0xff;
}

/** Field 4, length-delimited. */
const MESSAGES_TAG = (4 << 3) | 2;

/** One frame onto the socket, header and payload in one write (corked), no copy. */
function writeFrame(socket: net.Socket, payload: Buffer): boolean {
  const head = Buffer.allocUnsafe(4);
  putUint32(head, 0, payload.length);
  socket.cork();
  socket.write(head);
  const ok = socket.write(payload);
  socket.uncork();
  return ok;
}

/**
 * One end of a raw peer connection: after the other end's magic, frames decoded
 * with `decode` and emitted as 'data' (empty ones are keepalives); 'error' once on
 * a failure, else 'end' once when the connection ends.
 */
abstract class RawPeerEnd<In> extends EventEmitter {
  protected ended = false;
  private magicSeen = false;

  constructor(
    protected readonly socket: net.Socket,
    decode: (frame: Buffer) => In,
    notMagic: string,
  ) {
    super();
    const reader = new FrameReader();
    const magic = new MagicReader(RAW_PEER_MAGIC);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => {
      this.heard();
      if (!this.magicSeen) {
        const rest = magic.push(chunk);
        if (rest === 'mismatch') return this.fail(new Error(notMagic));
        if (rest === undefined) return;
        this.magicSeen = true;
        this.opened();
        chunk = rest;
      }
      let frames: Buffer[];
      try {
        frames = reader.push(chunk);
      } catch (e) {
        return this.fail(e as Error);
      }
      if (frames.length > 0) this.received();
      for (const f of frames) {
        if (f.length === 0) continue;
        let m: In;
        try {
          m = decode(f);
        } catch (e) {
          return this.fail(e as Error);
        }
        this.emit('data', m);
      }
    });
    socket.on('error', (e) => this.fail(e));
    socket.on('end', () => this.finish());
    socket.on('close', () => this.finish());
  }

  /** Bytes arrived. */
  protected heard(): void {}
  /** The other end's magic arrived. */
  protected opened(): void {}
  /** Frames arrived. */
  protected received(): void {}
  /** The connection is over (either way). */
  protected closed(): void {}

  end(): void {
    this.socket.end();
  }

  protected fail(e: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.closed();
    this.socket.destroy();
    this.emit('error', e);
  }

  private finish(): void {
    if (this.ended) return;
    this.ended = true;
    this.closed();
    this.emit('end');
  }
}

/**
 * The sending member's side: events 'metadata' (the receiver accepted), 'data'
 * (an Ack), 'drain', 'error' and 'end', as the gRPC stream it replaces.
 */
export class RawPeerClientStream extends RawPeerEnd<Ack> {
  private accepted = false;
  private isConnected = false;
  private heardAt = Date.now();
  /** Written since the last liveness check. */
  private wrote = false;
  private readonly liveness: NodeJS.Timeout;
  private readonly frames = new EnvelopeFrames();

  /** `deadAfterMs`: tests shorten DEAD_AFTER_MS. */
  constructor(socket: net.Socket, deadAfterMs = DEAD_AFTER_MS) {
    super(socket, (f) => codecOf().decodeAck(f), 'the peer did not accept a raw message stream');
    socket.once(socket instanceof tls.TLSSocket ? 'secureConnect' : 'connect', () => (this.isConnected = true));
    socket.on('drain', () => this.emit('drain'));
    this.liveness = setInterval(() => {
      if (this.wrote && Date.now() - this.heardAt > deadAfterMs) this.fail(new Error(`peer sent nothing for ${deadAfterMs / 1000} s`));
      this.wrote = false;
    }, deadAfterMs / 2);
    this.liveness.unref();
  }

  protected override heard(): void {
    this.heardAt = Date.now();
  }

  protected override opened(): void {
    this.accepted = true;
    this.emit('metadata');
  }

  protected override closed(): void {
    clearInterval(this.liveness);
  }

  /** Whether the receiver accepted the stream (a peer that speaks only gRPC closes it first). */
  get wasAccepted(): boolean {
    return this.accepted;
  }

  /** Whether the connection (and its TLS handshake) was made. */
  get connected(): boolean {
    return this.isConnected;
  }

  write(env: Envelope): boolean {
    if (this.ended) return true;
    this.wrote = true;
    return this.socket.write(this.frames.frame(env));
  }
}

/** Dials a peer URL: TLS (with `secure`) for https://, TCP otherwise; `magic` goes first. */
export function connectRaw(url: string, secure: tls.ConnectionOptions | undefined, magic: Buffer): net.Socket {
  const { host, port } = splitHostPort(hostPort(url));
  const socket = url.startsWith('https:')
    ? tls.connect({ ...secure, host, port, servername: secure?.servername ?? (net.isIP(host) ? undefined : host) })
    : net.connect({ host, port });
  socket.write(magic);
  return socket;
}

/** Dials a peer URL for a raw message stream. */
export function dialRawPeer(url: string, secure: tls.ConnectionOptions | undefined): RawPeerClientStream {
  return new RawPeerClientStream(connectRaw(url, secure, RAW_PEER_MAGIC));
}

/**
 * The receiving member's side of a connection that opened with the magic: what
 * the peer service's Stream handler uses of a gRPC call (sendMetadata, write, end;
 * events 'data' with an Envelope, 'error', 'end').
 */
export class RawPeerServerCall extends RawPeerEnd<Envelope> {
  private keptAliveAt = Date.now();

  constructor(socket: net.Socket) {
    const frames = new EnvelopeFrames();
    super(socket, (f) => frames.read(f), 'not a raw peer stream');
    // The listener paused it while it looked at the first bytes.
    socket.resume();
  }

  protected override received(): void {
    if (Date.now() - this.keptAliveAt < KEEPALIVE_MS) return;
    this.keptAliveAt = Date.now();
    writeFrame(this.socket, Buffer.alloc(0));
  }

  /** Accepts the stream: the magic, sent back. */
  sendMetadata(): void {
    if (!this.ended) this.socket.write(RAW_PEER_MAGIC);
  }

  write(ack: Ack): boolean {
    if (this.ended) return true;
    return writeFrame(this.socket, codecOf().encodeAck(ack));
  }
}
