// Unary and server-streaming calls served straight from their HTTP/2 stream.
// grpc-js builds, per call, an intercepting call, a Metadata object, a stream
// decoder, a metric recorder, a deadline timer and a dozen closures around the
// handler; for a put that is more than the rest of the leader's client-side work.
// Here a call whose request is plain (application/grpc, identity encoding) runs
// the handler grpc-js would run (the server's own registration: the same
// function, the same codec) with the same wire: response headers, the messages,
// trailers; an error before any message as a trailers-only response. A streamed
// message whose serializer gives it in parts (src/proto/messageParts.ts: a
// snapshot's chunks) is written part by part, its large field never copied.
// Bidi and client-streaming calls and compressed requests go to grpc-js as
// before. The handler map and the http2 server are grpc-js internals
// (authorityListener.ts reaches them the same way); when they are not found,
// grpc-js serves everything.
import type * as grpc from '#grpc-js';
import { EventEmitter } from 'node:events';
import type http2 from 'node:http2';
import { respondWithTrailers } from './promptTrailers.js';

interface Handler {
  type: string;
  func: (call: unknown, callback: (err: unknown, value?: unknown) => void) => void;
  serialize: ((value: unknown) => Buffer) & { parts?(value: unknown): Buffer[] };
  deserialize(bytes: Buffer): unknown;
}

const OK = 0;
const UNKNOWN = 2;
const RESOURCE_EXHAUSTED = 8;
const INTERNAL = 13;

const RESPONSE_HEADERS = {
  ':status': 200,
  'content-type': 'application/grpc+proto',
  'grpc-accept-encoding': 'identity,deflate,gzip',
  'grpc-encoding': 'identity',
};
const OK_TRAILERS = { 'grpc-status': String(OK), 'grpc-message': 'OK' };

/** What the handlers read of a call (api/caller.ts): the request, metadata by key, the peer's address. */
class DirectCall extends EventEmitter {
  readonly metadata: { get(key: string): Array<string | Buffer> };
  constructor(
    readonly request: unknown,
    headers: http2.IncomingHttpHeaders,
    protected readonly stream: http2.ServerHttp2Stream,
  ) {
    super();
    this.metadata = {
      get: (key) => {
        const v = headers[key];
        return v === undefined ? [] : Array.isArray(v) ? v : [v];
      },
    };
  }
  /** "address:port", as grpc-js's getPeer() (callIdentity finds a TLS connection's CN by it). */
  getPeer(): string {
    const s = this.stream.session?.socket;
    if (!s?.remoteAddress) return 'unknown';
    return s.remotePort ? `${s.remoteAddress}:${s.remotePort}` : s.remoteAddress;
  }
  getAuthContext(): Record<string, never> {
    return {};
  }
}

function usable(s: http2.ServerHttp2Stream): boolean {
  return !s.destroyed && !s.closed && !s.headersSent;
}

/** A status without a message: headers and trailers in one block, as grpc-js sends it. */
function respondStatus(stream: http2.ServerHttp2Stream, code: number, details: string): void {
  if (!usable(stream)) return;
  try {
    stream.respond(
      { ':status': 200, 'content-type': 'application/grpc+proto', 'grpc-status': String(code), 'grpc-message': encodeURI(details) },
      { endStream: true },
    );
  } catch {
    // the client went away meanwhile: nobody to tell
  }
}

function respondMessage(stream: http2.ServerHttp2Stream, message: Buffer): void {
  if (!usable(stream)) return;
  const frame = Buffer.allocUnsafe(5 + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  message.copy(frame, 5);
  try {
    respondWithTrailers(stream, RESPONSE_HEADERS, () => OK_TRAILERS);
    stream.end(frame);
  } catch {
    // the client went away meanwhile
  }
}

/** grpc-js's serverErrorToStatus: a whole-number code with its details, else UNKNOWN with the message. */
function statusOf(err: unknown): { code: number; details: string } {
  const e = err as { code?: unknown; details?: unknown; message?: unknown };
  const message = typeof e.message === 'string' ? e.message : 'Unknown Error';
  if (typeof e.code === 'number' && Number.isInteger(e.code)) return { code: e.code, details: typeof e.details === 'string' ? e.details : message };
  return { code: UNKNOWN, details: message };
}

/** Reads the one request message of a call, then hands it decoded to `then`; refusals are answered here. */
function readRequest(stream: http2.ServerHttp2Stream, h: Handler, maxReceive: number, then: (request: unknown) => void): void {
  stream.on('error', () => {}); // a reset stream ends in 'close'; nothing to report
  const chunks: Buffer[] = [];
  let size = 0;
  let refused = false;
  let declared: number | undefined;
  stream.on('data', (chunk: Buffer) => {
    if (refused) return;
    chunks.push(chunk);
    size += chunk.length;
    if (declared !== undefined || size < 5) return;
    // As grpc-js: refused as soon as the length prefix announces more than the limit.
    declared = (chunks.length === 1 ? chunk : Buffer.concat(chunks, size)).readUInt32BE(1);
    if (maxReceive >= 0 && declared > maxReceive) {
      refused = true;
      chunks.length = 0;
      respondStatus(stream, RESOURCE_EXHAUSTED, `Received message larger than max (${declared} vs ${maxReceive})`);
    }
  });
  stream.once('end', () => {
    if (refused) return;
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
    if (body.length < 5 || body[0] !== 0 || body.readUInt32BE(1) !== body.length - 5) {
      return respondStatus(stream, INTERNAL, 'expected one uncompressed request message');
    }
    let request: unknown;
    try {
      request = h.deserialize(body.subarray(5));
    } catch {
      return respondStatus(stream, INTERNAL, 'Error deserializing request');
    }
    then(request);
  });
}

function serveUnary(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, h: Handler, maxReceive: number): void {
  readRequest(stream, h, maxReceive, (request) => {
    const reply = (err: unknown, value?: unknown) => {
      if (err) {
        const status = statusOf(err);
        return respondStatus(stream, status.code, status.details);
      }
      let message: Buffer;
      try {
        message = h.serialize(value);
      } catch {
        return respondStatus(stream, INTERNAL, 'Error serializing response');
      }
      respondMessage(stream, message);
    };
    try {
      h.func(new DirectCall(request, headers, stream), reply);
    } catch (e) {
      reply(e);
    }
  });
}

/**
 * A server-streaming call as its handler sees one (grpc-js's ServerWritableStream,
 * the part of it our handlers use): write() returns false while the stream's
 * buffer is full ('drain' follows), end() closes with OK, an 'error' event closes
 * with that error's status, and a client gone away sets `cancelled` and emits
 * 'cancelled'.
 */
class DirectWritableCall extends DirectCall {
  cancelled = false;
  private headersSent = false;
  private status: { code: number; details: string } | undefined;

  constructor(
    request: unknown,
    headers: http2.IncomingHttpHeaders,
    stream: http2.ServerHttp2Stream,
    private readonly h: Handler,
  ) {
    super(request, headers, stream);
    stream.on('drain', () => this.emit('drain'));
    stream.once('close', () => {
      if (this.status) return;
      this.cancelled = true;
      this.emit('cancelled');
    });
    // As grpc-js: an 'error' event is the call's end with that status.
    this.on('error', (err: unknown) => this.close(statusOf(err)));
  }

  write(value: unknown): boolean {
    if (this.status || this.cancelled || this.stream.destroyed) return false;
    let parts: Buffer[];
    try {
      parts = this.h.serialize.parts ? this.h.serialize.parts(value) : [this.h.serialize(value)];
    } catch {
      this.close({ code: INTERNAL, details: 'Error serializing response' });
      return false;
    }
    this.sendHeaders();
    const prefix = Buffer.allocUnsafe(5);
    prefix[0] = 0;
    prefix.writeUInt32BE(
      parts.reduce((n, p) => n + p.length, 0),
      1,
    );
    let ok = this.stream.write(prefix);
    for (const p of parts) ok = this.stream.write(p);
    return ok;
  }

  end(): void {
    this.close({ code: OK, details: 'OK' });
  }

  private sendHeaders(): void {
    if (this.headersSent) return;
    this.headersSent = true;
    respondWithTrailers(this.stream, RESPONSE_HEADERS, () => {
      const s = this.status ?? { code: OK, details: 'OK' };
      return { 'grpc-status': String(s.code), 'grpc-message': encodeURI(s.details) };
    });
  }

  /** Ends the call once with `status`: in trailers after the messages, or trailers-only before any. */
  private close(status: { code: number; details: string }): void {
    if (this.status || this.cancelled) return;
    this.status = status;
    if (!this.headersSent) return respondStatus(this.stream, status.code, status.details);
    try {
      this.stream.end();
    } catch {
      // the client went away meanwhile
    }
  }
}

function serveStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, h: Handler, maxReceive: number): void {
  readRequest(stream, h, maxReceive, (request) => {
    const call = new DirectWritableCall(request, headers, stream, h);
    try {
      h.func(call, () => {});
    } catch (e) {
      call.emit('error', e);
    }
  });
}

/** grpc-js's default for grpc.max_receive_message_length. */
const DEFAULT_MAX_RECEIVE = 4 << 20;

/**
 * From now on, unary and server-streaming calls to `server` that arrive on `h2`
 * (one of its http2 servers) are served here; everything else still goes to
 * grpc-js's own 'stream' listener, which must already be attached. Returns how
 * many were.
 */
export function serveCallsDirectly(server: grpc.Server, h2: unknown): () => number {
  let served = 0;
  const count = () => served;
  const internals = server as unknown as { handlers?: unknown; options?: Record<string, unknown> };
  const handlers = internals.handlers;
  if (!(handlers instanceof Map) || !(h2 instanceof EventEmitter)) return count;
  const limit = internals.options?.['grpc.max_receive_message_length'];
  const maxReceive = typeof limit === 'number' ? limit : DEFAULT_MAX_RECEIVE;
  const theirs = h2.listeners('stream') as Array<(...args: unknown[]) => void>;
  if (theirs.length === 0) return count;
  h2.removeAllListeners('stream');
  h2.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, ...rest: unknown[]) => {
    const h = handlers.get(headers[':path']) as Handler | undefined;
    const plain =
      (h?.type === 'unary' || h?.type === 'serverStream') &&
      String(headers['content-type'] ?? '').startsWith('application/grpc') &&
      (headers['grpc-encoding'] === undefined || headers['grpc-encoding'] === 'identity');
    if (plain) {
      served++;
      return h.type === 'unary' ? serveUnary(stream, headers, h, maxReceive) : serveStream(stream, headers, h, maxReceive);
    }
    for (const l of theirs) l.call(h2, stream, headers, ...rest);
  });
  return count;
}
