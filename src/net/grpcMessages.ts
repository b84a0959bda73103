// gRPC's messages on an HTTP/2 stream, for both of our ends (the server,
// grpcServer.ts, and the peer client, grpcClient.ts): each message has a 5-byte
// prefix (a compressed flag, then its big-endian length). A compressed message
// is inflated as the stream's grpc-encoding says (gzip or deflate); zlib is
// loaded only then, as no client of ours compresses.
import type zlibModule from 'node:zlib';

export const GRPC_CONTENT_TYPE = 'application/grpc+proto';

/** A message that announces more bytes than the receiver takes (grpc-js's text). */
export class MessageTooLarge extends Error {
  constructor(size: number, limit: number) {
    super(`Received message larger than max (${size} vs ${limit})`);
  }
}

/** The prefix of a message of `length` bytes, uncompressed. */
export function messagePrefix(length: number): Buffer {
  const prefix = Buffer.allocUnsafe(5);
  prefix[0] = 0;
  prefix.writeUInt32BE(length, 1);
  return prefix;
}

/** `message` with its prefix, in one buffer. */
export function framed(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(5 + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

export interface RawMessage {
  compressed: boolean;
  body: Buffer;
}

/** Cuts a stream's DATA into messages (views of the input where a message lies in one chunk). */
export class MessageReader {
  private chunks: Buffer[] = [];
  private have = 0;

  /** `maxBytes` < 0: no limit. */
  constructor(private readonly maxBytes: number) {}

  /** The messages completed by `chunk`; throws MessageTooLarge as soon as a prefix announces too many bytes. */
  push(chunk: Buffer): RawMessage[] {
    this.chunks.push(chunk);
    this.have += chunk.length;
    const out: RawMessage[] = [];
    while (this.have >= 5) {
      const head = this.chunks[0].length >= 5 ? this.chunks[0] : this.joined();
      const length = head.readUInt32BE(1);
      if (this.maxBytes >= 0 && length > this.maxBytes) throw new MessageTooLarge(length, this.maxBytes);
      if (this.have < 5 + length) break;
      const all = this.chunks[0].length >= 5 + length ? this.chunks[0] : this.joined();
      out.push({ compressed: all[0] === 1, body: all.subarray(5, 5 + length) });
      const rest = all.subarray(5 + length);
      this.chunks = rest.length > 0 ? [rest, ...this.chunks.slice(1)] : this.chunks.slice(1);
      this.have -= 5 + length;
    }
    return out;
  }

  /** Bytes of an unfinished message: not 0 when the stream ends means it was cut short. */
  get pending(): number {
    return this.have;
  }

  private joined(): Buffer {
    const all = Buffer.concat(this.chunks, this.have);
    this.chunks = [all];
    return all;
  }
}

let zlib: typeof zlibModule | undefined;

/** The encodings a compressed message may come in. */
export const ENCODINGS = ['identity', 'gzip', 'deflate'];

/** A compressed message that inflates to more bytes than the receiver takes (grpc-js's text). */
export class InflatedTooLarge extends Error {
  constructor(limit: number) {
    super(`Received message that decompresses to a size larger than ${limit}`);
  }
}

/**
 * A message's bytes: inflated when it is flagged compressed (with `encoding`, which
 * must be gzip or deflate), never past `maxBytes` (< 0: no limit), so a small
 * request cannot inflate to gigabytes on the event loop.
 */
export function messageBody(m: RawMessage, encoding: string | undefined, maxBytes: number): Buffer {
  if (!m.compressed) return m.body;
  zlib ??= process.getBuiltinModule('node:zlib');
  const opts = maxBytes >= 0 ? { maxOutputLength: Math.max(1, maxBytes) } : {};
  try {
    if (encoding === 'gzip') return zlib.gunzipSync(m.body, opts);
    if (encoding === 'deflate') return zlib.inflateSync(m.body, opts);
  } catch (e) {
    if ((e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw new InflatedTooLarge(maxBytes);
    throw e;
  }
  throw new Error(`a compressed message with grpc-encoding ${encoding ?? 'identity'}`);
}
