// Calls served straight from their HTTP/2 stream, as our gRPC server's handlers
// (grpcServer.ts) see them: the part of grpc-js's call objects they use. A
// unary call gets its request and answers through a callback; a
// server-streaming one writes messages and ends (or emits 'error' to end with
// that status); client-streaming and bidi calls also get 'data' per request
// message and 'end' when the client is done. The wire: response headers, the
// messages, trailers with grpc-status and grpc-message; an error before any
// message as a trailers-only response. A message whose serializer gives it in
// parts (src/proto/messageParts.ts: a snapshot's chunks) is written part by
// part, its large field never copied. A unary call honours the client's
// grpc-timeout (callDeadline.ts): one timer, only for a call that sends one.
import { EventEmitter } from 'node:events';
import http2 from 'node:http2';
import { framed, GRPC_CONTENT_TYPE, InflatedTooLarge, messageBody, messagePrefix, MessageReader, MessageTooLarge, type RawMessage } from './grpcMessages.js';
import { respondWithTrailers } from './promptTrailers.js';
import { DEADLINE_EXCEEDED_DETAILS, NO_DEADLINE, parseGrpcTimeout } from './callDeadline.js';
import { GrpcCode } from './grpcCode.js';

export type CallKind = 'unary' | 'serverStream' | 'clientStream' | 'bidi';

/** How a handler answers a call once: an error (its status, see statusOf) or the reply. */
export type Reply<T = unknown> = (err: unknown, value?: T) => void;

/** A call's metadata (request headers), by key. */
export interface CallMetadata {
  get(key: string): Array<string | Buffer>;
}

/** A registered method: its handler and codec. */
export interface Handler {
  type: CallKind;
  func: (call: never, callback: Reply) => void;
  serialize: ((value: unknown) => Buffer) & { parts?(value: unknown): Buffer[] };
  deserialize(bytes: Buffer): unknown;
}

/** A call's outcome: its gRPC status code and text. */
export interface CallStatus {
  code: number;
  details: string;
}

const { OK, Unknown: UNKNOWN, DeadlineExceeded: DEADLINE_EXCEEDED, ResourceExhausted: RESOURCE_EXHAUSTED, Internal: INTERNAL } = GrpcCode;

const RESPONSE_HEADERS = {
  ':status': 200,
  'content-type': GRPC_CONTENT_TYPE,
  'grpc-accept-encoding': 'identity,deflate,gzip',
  'grpc-encoding': 'identity',
};
const OK_TRAILERS = { 'grpc-status': String(OK), 'grpc-message': 'OK' };

function usable(s: http2.ServerHttp2Stream): boolean {
  return !s.destroyed && !s.closed && !s.headersSent;
}

/** A status without a message: headers and trailers in one block, as grpc-js sends it. */
export function respondStatus(stream: http2.ServerHttp2Stream, code: number, details: string): void {
  if (!usable(stream)) return;
  try {
    stream.respond({ ':status': 200, 'content-type': GRPC_CONTENT_TYPE, 'grpc-status': String(code), 'grpc-message': encodeURI(details) }, { endStream: true });
  } catch {
    // the client went away meanwhile: nobody to tell
  }
}

function respondMessage(stream: http2.ServerHttp2Stream, message: Buffer): void {
  if (!usable(stream)) return;
  try {
    respondWithTrailers(stream, RESPONSE_HEADERS, () => OK_TRAILERS);
    stream.end(framed(message));
  } catch {
    // the client went away meanwhile
  }
}

/** grpc-js's serverErrorToStatus: a whole-number code with its details, else UNKNOWN with the message. */
function statusOf(err: unknown): CallStatus {
  const e = err as { code?: unknown; details?: unknown; message?: unknown };
  const message = typeof e.message === 'string' ? e.message : 'Unknown Error';
  if (typeof e.code === 'number' && Number.isInteger(e.code)) return { code: e.code, details: typeof e.details === 'string' ? e.details : message };
  return { code: UNKNOWN, details: message };
}

/** What every handler reads of a call (api/caller.ts): its request, metadata by key, the peer's address. */
class ServerCall<Req = unknown> extends EventEmitter {
  readonly metadata: CallMetadata;
  /** When the client stops waiting (Date.now() scale; NO_DEADLINE without grpc-timeout): work for it is not started after it. */
  deadline = NO_DEADLINE;
  constructor(
    readonly request: Req,
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
}

/** Why a request message was refused: too large once inflated, or not decodable. */
function requestStatus(e: unknown): CallStatus {
  return e instanceof InflatedTooLarge ? { code: RESOURCE_EXHAUSTED, details: e.message } : { code: INTERNAL, details: 'Error deserializing request' };
}

/** The one request message of a unary or server-streaming call, decoded; refusals are answered here. */
function readRequest(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  h: Handler,
  maxReceive: number,
  then: (request: unknown) => void,
): void {
  const encoding = headers['grpc-encoding'] as string | undefined;
  const chunks: Buffer[] = [];
  let size = 0;
  let refused = false;
  let declared: number | undefined;
  stream.on('data', (chunk: Buffer) => {
    if (refused) return;
    chunks.push(chunk);
    size += chunk.length;
    if (declared !== undefined && size > 5 + declared) {
      // More than the one message: refused now, not buffered until the client ends.
      refused = true;
      chunks.length = 0;
      return respondStatus(stream, INTERNAL, 'expected one request message');
    }
    if (declared !== undefined || size < 5) return;
    // As grpc-js: refused as soon as the length prefix announces more than the limit.
    declared = (chunks.length === 1 ? chunk : Buffer.concat(chunks, size)).readUInt32BE(1);
    if (maxReceive >= 0 && declared > maxReceive) {
      refused = true;
      chunks.length = 0;
      respondStatus(stream, RESOURCE_EXHAUSTED, new MessageTooLarge(declared, maxReceive).message);
    }
  });
  stream.once('end', () => {
    if (refused) return;
    const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
    if (body.length < 5 || body[0] > 1 || body.readUInt32BE(1) !== body.length - 5) {
      return respondStatus(stream, INTERNAL, 'expected one request message');
    }
    let request: unknown;
    try {
      request = h.deserialize(messageBody({ compressed: body[0] === 1, body: body.subarray(5) }, encoding, maxReceive));
    } catch (e) {
      const status = requestStatus(e);
      return respondStatus(stream, status.code, status.details);
    }
    then(request);
  });
}

/** A unary call as its handler gets it, and such a handler. */
export type UnaryCall<Req> = ServerCall<Req>;
export type UnaryHandler<Req> = (call: UnaryCall<Req>, reply: Reply) => void;

export function serveUnary(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, h: Handler, maxReceive: number): void {
  const timeout = headers['grpc-timeout'];
  let deadline = NO_DEADLINE;
  if (timeout !== undefined) {
    const ms = parseGrpcTimeout(String(timeout));
    // As grpc-js: a malformed value is refused.
    if (ms === undefined) return respondStatus(stream, INTERNAL, `Invalid grpc-timeout value "${String(timeout)}"`);
    deadline = Date.now() + ms;
    // The answer once the client stops waiting; a later reply finds the stream ended (usable() is false).
    const timer = setTimeout(respondStatus, ms, stream, DEADLINE_EXCEEDED, DEADLINE_EXCEEDED_DETAILS);
    stream.once('close', () => clearTimeout(timer));
  }
  readRequest(stream, headers, h, maxReceive, (request) => {
    // Already too late (the request was slow to arrive): the handler is not run at all.
    if (deadline !== NO_DEADLINE && Date.now() >= deadline) return respondStatus(stream, DEADLINE_EXCEEDED, DEADLINE_EXCEEDED_DETAILS);
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
    const call = new ServerCall(request, headers, stream);
    call.deadline = deadline;
    try {
      h.func(call as never, reply);
    } catch (e) {
      reply(e);
    }
  });
}

/**
 * A call that writes messages (grpc-js's ServerWritableStream, the part of it our
 * handlers use): write() returns false while the stream's buffer is full ('drain'
 * follows) and calls its callback once the message is handed to HTTP/2, end()
 * closes with OK, an 'error' event closes with that error's status, and a client
 * gone away sets `cancelled` and emits 'cancelled'. 'finish' follows the status,
 * 'close' the stream's end.
 */
class WritableCall<Req = unknown> extends ServerCall<Req> {
  cancelled = false;
  private headersSent = false;
  protected status: CallStatus | undefined;

  constructor(
    request: Req,
    headers: http2.IncomingHttpHeaders,
    stream: http2.ServerHttp2Stream,
    private readonly h: Handler,
  ) {
    super(request, headers, stream);
    stream.on('drain', () => this.emit('drain'));
    stream.once('close', () => {
      if (!this.status) {
        this.cancelled = true;
        this.emit('cancelled');
      }
      this.emit('close');
    });
    // As grpc-js: an 'error' event is the call's end with that status.
    this.on('error', (err: unknown) => this.close(statusOf(err)));
  }

  write(value: unknown, cb?: (err?: Error | null) => void): boolean {
    if (this.status || this.cancelled || this.stream.destroyed) {
      if (cb) process.nextTick(cb, new Error('the call has ended'));
      return false;
    }
    let parts: Buffer[];
    try {
      parts = this.h.serialize.parts ? this.h.serialize.parts(value) : [this.h.serialize(value)];
    } catch {
      this.close({ code: INTERNAL, details: 'Error serializing response' });
      if (cb) process.nextTick(cb, new Error('Error serializing response'));
      return false;
    }
    this.sendMetadata();
    let ok = this.stream.write(messagePrefix(parts.reduce((n, p) => n + p.length, 0)), parts.length === 0 ? cb : undefined);
    for (let i = 0; i < parts.length; i++) ok = this.stream.write(parts[i], i === parts.length - 1 ? cb : undefined);
    return ok;
  }

  end(): void {
    this.close({ code: OK, details: 'OK' });
  }

  /** Sends the response headers now (a stream's acceptance, before any message). */
  sendMetadata(): void {
    if (this.headersSent || this.status) return;
    this.headersSent = true;
    try {
      respondWithTrailers(this.stream, RESPONSE_HEADERS, () => {
        const s = this.status ?? { code: OK, details: 'OK' };
        return { 'grpc-status': String(s.code), 'grpc-message': encodeURI(s.details) };
      });
    } catch {
      // the client went away meanwhile
    }
  }

  /** Ends the call once with `status`: in trailers after the headers, or trailers-only before them. */
  protected close(status: CallStatus): void {
    if (this.status || this.cancelled) return;
    this.status = status;
    if (!this.headersSent) respondStatus(this.stream, status.code, status.details);
    else {
      try {
        this.stream.end();
      } catch {
        // the client went away meanwhile
      }
    }
    this.emit('finish');
  }
}

/** A server-streaming call as its handler gets it. */
export type ServerStreamCall<Req = unknown> = WritableCall<Req>;

export function serveServerStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, h: Handler, maxReceive: number): void {
  readRequest(stream, headers, h, maxReceive, (request) => {
    const call = new WritableCall(request, headers, stream, h);
    try {
      h.func(call as never, () => {});
    } catch (e) {
      call.emit('error', e);
    }
  });
}

/**
 * A client-streaming or bidi call: request messages arrive as 'data', the
 * client's half-close as 'end'. A request that cannot be taken (too large, not
 * decodable) ends the call through an 'error' event with its status, so the
 * handler hears of it as of any failure. Nothing arrives once the call has its
 * status, and a client's reset is not an 'end' (its 'cancelled' follows).
 */
class DuplexCall extends WritableCall<undefined> {
  constructor(headers: http2.IncomingHttpHeaders, stream: http2.ServerHttp2Stream, h: Handler, maxReceive: number) {
    super(undefined, headers, stream, h);
    const reader = new MessageReader(maxReceive);
    const encoding = headers['grpc-encoding'] as string | undefined;
    const fail = (status: CallStatus) => this.emit('error', Object.assign(new Error(status.details), status));
    stream.on('data', (chunk: Buffer) => {
      if (this.status || this.cancelled) return;
      let messages: RawMessage[];
      try {
        messages = reader.push(chunk);
      } catch (e) {
        return fail({ code: RESOURCE_EXHAUSTED, details: (e as Error).message });
      }
      for (const m of messages) {
        let value: unknown;
        try {
          value = h.deserialize(messageBody(m, encoding, maxReceive));
        } catch (e) {
          return fail(requestStatus(e));
        }
        this.emit('data', value);
        if (this.status || this.cancelled) return;
      }
    });
    stream.once('end', () => {
      if (this.status || this.cancelled || (stream.rstCode !== undefined && stream.rstCode !== http2.constants.NGHTTP2_NO_ERROR)) return;
      if (reader.pending > 0) return fail({ code: INTERNAL, details: 'the request ended inside a message' });
      this.emit('end');
    });
  }

  /** No more 'data' until resume() (a receiver whose disk is behind). */
  pause(): void {
    this.stream.pause();
  }

  resume(): void {
    this.stream.resume();
  }
}

/** A client-streaming or bidi call as its handler gets it. */
export type StreamingCall = DuplexCall;

export function serveDuplex(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, h: Handler, maxReceive: number): void {
  const call = new DuplexCall(headers, stream, h, maxReceive);
  // A client-streaming call answers once, as a unary one does.
  const reply =
    h.type === 'clientStream'
      ? (((err, value) => {
          if (err) return call.emit('error', err);
          call.write(value);
          call.end();
        }) satisfies Reply)
      : () => {};
  try {
    h.func(call as never, reply);
  } catch (e) {
    call.emit('error', e);
  }
}
