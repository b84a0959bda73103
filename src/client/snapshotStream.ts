// Maintenance.Snapshot read straight off HTTP/2, not through grpc-js. grpc-js
// joins a message's 16 KiB DATA frames into one fresh buffer per message (1 MiB
// from a Lifeboat member) before protobufjs decodes it; on a VM every such
// buffer costs its page faults, and for a 41 MB snapshot that was a fifth of the
// client's time. Here each frame's blob bytes are copied into one reused batch
// buffer as they arrive, and the caller writes and hashes the batch.
//
// The call (http2Calls.ts): an empty SnapshotRequest; the answer is a series of
// SnapshotResponse messages (etcd's rpc.proto): header = 1, remaining_bytes = 2
// (varint), blob = 3 (bytes).
import http2 from 'node:http2';
import { GrpcCode } from '../net/grpcCode.js';
import { startCall, StreamError } from '../net/grpcClient.js';
import type { SnapshotChunk } from './types.js';

const UNAVAILABLE = GrpcCode.Unavailable;
const INTERNAL = GrpcCode.Internal;

/** No data for the inactivity limit. */
export class StreamStalled extends Error {}

/** Bytes handed to the caller at once: the batch is reused after the caller asks for the next one. */
const BATCH = 1 << 20;
/** Received bytes waiting for the caller beyond which the stream is paused (HTTP/2 flow control then holds the server). */
const QUEUE_HIGH = 4 << 20;

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;

/**
 * Parses a stream of gRPC-framed SnapshotResponse messages that arrives in
 * pieces cut anywhere. feed() returns the blob bytes of the piece (views of
 * it); remainingBytes is the last value the server announced.
 */
export class SnapshotResponseParser {
  remainingBytes = 0;
  /** bytes of the current message not read yet (0 between messages) */
  private messageLeft = 0;
  /** a message prefix or a field's tag and varint, collected across pieces */
  private readonly head = Buffer.alloc(20);
  private headLen = 0;
  /** bytes of the current field's payload still to come: blob bytes (passed on) or others (skipped) */
  private blobLeft = 0;
  private skipLeft = 0;

  /** Whether the stream may end here: between messages. */
  get atBoundary(): boolean {
    return this.messageLeft === 0 && this.headLen === 0;
  }

  feed(piece: Buffer): Buffer[] {
    const blobs: Buffer[] = [];
    let i = 0;
    while (i < piece.length) {
      if (this.messageLeft === 0) {
        // The 5-byte prefix.
        const n = Math.min(5 - this.headLen, piece.length - i);
        piece.copy(this.head, this.headLen, i, i + n);
        this.headLen += n;
        i += n;
        if (this.headLen < 5) break;
        if (this.head[0] !== 0) throw new StreamError(INTERNAL, 'the server sent a compressed snapshot message, which was not asked for');
        this.messageLeft = this.head.readUInt32BE(1);
        this.headLen = 0;
        this.remainingBytes = 0; // proto3 leaves a 0 out
        continue;
      }
      const take = Math.min(this.messageLeft, piece.length - i);
      if (this.blobLeft > 0 || this.skipLeft > 0) {
        const n = Math.min(take, this.blobLeft || this.skipLeft);
        if (this.blobLeft > 0) {
          blobs.push(piece.subarray(i, i + n));
          this.blobLeft -= n;
        } else {
          this.skipLeft -= n;
        }
        i += n;
        this.messageLeft -= n;
        continue;
      }
      // A field's tag and its varint (a value or a length): a few bytes, taken one at a time.
      if (this.headLen === this.head.length) throw malformed('a field header longer than 20 bytes');
      this.head[this.headLen++] = piece[i++];
      this.messageLeft--;
      this.fieldHeader();
      if (this.messageLeft === 0 && this.headLen !== 0) throw malformed('a field cut off at the end of its message');
    }
    return blobs;
  }

  /** Acts on the collected field header once it is whole. */
  private fieldHeader(): void {
    const tag = varint(this.head, 0, this.headLen);
    if (!tag) return;
    const field = Math.floor(tag.value / 8);
    const wire = tag.value % 8;
    if (wire === WIRE_I64 || wire === WIRE_I32) {
      this.skipLeft = wire === WIRE_I64 ? 8 : 4;
    } else if (wire === WIRE_VARINT || wire === WIRE_LEN) {
      const v = varint(this.head, tag.end, this.headLen);
      if (!v) return;
      if (wire === WIRE_VARINT) {
        if (field === 2) this.remainingBytes = v.value;
      } else {
        if (v.value > this.messageLeft) throw malformed(`a field of ${v.value} bytes in the ${this.messageLeft} left of its message`);
        if (field === 3) this.blobLeft = v.value;
        else this.skipLeft = v.value;
      }
    } else {
      throw malformed(`wire type ${wire}`);
    }
    this.headLen = 0;
  }
}

function malformed(what: string): StreamError {
  return new StreamError(INTERNAL, `malformed snapshot message from the server (${what})`);
}

/** A protobuf varint in buf[from, to), or undefined if it is not whole yet. Up to 2^53. */
function varint(buf: Buffer, from: number, to: number): { value: number; end: number } | undefined {
  let value = 0;
  let scale = 1;
  for (let i = from; i < to; i++) {
    value += (buf[i] & 0x7f) * scale;
    if ((buf[i] & 0x80) === 0) return { value, end: i + 1 };
    scale *= 128;
  }
  return undefined;
}

export interface SnapshotStreamOptions {
  /** a session from dialSession (http2Calls.ts); the caller closes it */
  session: http2.ClientHttp2Session;
  /** call metadata (the auth token) */
  metadata: Record<string, string>;
  /** no data for this long: StreamStalled */
  inactivityMs: number;
}

/**
 * The snapshot's bytes in batches. Each chunk's blob is valid until the next is
 * asked for (one buffer is reused). Throws StreamError (status and details, as
 * callError reads them) or StreamStalled.
 */
export async function* readSnapshotStream(o: SnapshotStreamOptions): AsyncGenerator<SnapshotChunk, void, undefined> {
  let failure: Error | undefined;
  const onSessionError = (err: Error) => (failure ??= new StreamError(UNAVAILABLE, err.message));
  o.session.on('error', onSessionError);
  // An empty SnapshotRequest.
  const call = startCall(o.session, '/etcdserverpb.Maintenance/Snapshot', new Uint8Array(0), o.metadata);
  const req = call.stream;
  // 'data' events, not the stream's async iterator: that reads everything buffered
  // at once, joined into a fresh buffer (the very cost this module avoids).
  const queue: Buffer[] = [];
  let queued = 0;
  let ended = false;
  let stalled = false;
  let wake: (() => void) | undefined;
  const wakeUp = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      stalled = true;
      req.destroy();
      wakeUp();
    }, o.inactivityMs);
  };
  req.on('data', (piece: Buffer) => {
    queue.push(piece);
    queued += piece.length;
    if (queued >= QUEUE_HIGH) req.pause();
    arm();
    wakeUp();
  });
  req.on('end', () => ((ended = true), wakeUp()));
  req.on('close', () => ((ended = true), wakeUp()));
  req.on('error', (err: Error) => ((failure ??= new StreamError(UNAVAILABLE, err.message)), wakeUp()));
  const parser = new SnapshotResponseParser();
  const batch = Buffer.allocUnsafe(BATCH);
  let used = 0;
  try {
    arm();
    for (;;) {
      const piece = queue.shift();
      if (piece === undefined) {
        if (ended || stalled || failure) break;
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      queued -= piece.length;
      if (queued < QUEUE_HIGH / 2 && req.isPaused()) req.resume();
      for (let blob of parser.feed(piece)) {
        while (blob.length > 0) {
          const n = blob.copy(batch, used);
          used += n;
          blob = blob.subarray(n);
          if (used === BATCH) {
            yield { remainingBytes: parser.remainingBytes, blob: batch };
            used = 0;
          }
        }
      }
    }
    if (stalled) throw new StreamStalled();
    if (failure) throw failure;
    const bad = call.outcome();
    if (bad) throw bad;
    if (!parser.atBoundary) throw malformed('the stream ended inside a message');
    if (used > 0) yield { remainingBytes: parser.remainingBytes, blob: batch.subarray(0, used) };
  } finally {
    clearTimeout(timer);
    o.session.off('error', onSessionError);
    if (!req.closed) req.close(http2.constants.NGHTTP2_CANCEL);
  }
}
