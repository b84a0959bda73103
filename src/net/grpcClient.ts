// gRPC calls on a node:http2 session of our own, without grpc-js: unary calls
// (the toolkit's `snapshot save`, a member's Identity and Forward to its peers)
// and streaming ones (a peer's message stream and snapshot for members that take
// no raw connection). GrpcChannel keeps one session to a peer URL, dialled when
// a call needs it and again after it broke, and pings it while calls are open.
//
// The wire (gRPC over HTTP/2): a POST whose body is request messages with
// grpcMessages.ts's prefix; the answer is such messages, then trailers with
// grpc-status and grpc-message (or, for an early failure, both in the headers).
import { EventEmitter } from 'node:events';
import http2 from 'node:http2';
import net from 'node:net';
import tls from 'node:tls';
import { hostPort, splitHostPort } from '../common/urls.js';
import { framed, messageBody, MessageReader, type RawMessage } from './grpcMessages.js';
import { GrpcCode } from '../net/grpcCode.js';

const UNAVAILABLE: number = GrpcCode.Unavailable;
const DEADLINE_EXCEEDED: number = GrpcCode.DeadlineExceeded;
const INTERNAL: number = GrpcCode.Internal;
const CANCELLED: number = GrpcCode.Canceled;

/** grpc-js's name of a code, for messages in its form ("14 UNAVAILABLE: ..."): GrpcCode's, in capitals with underscores. */
const codeName = (code: number): string => (GrpcCode[code] ?? 'Unknown').replace(/(?<=[a-z])(?=[A-Z])/g, '_').toUpperCase();

/** A failed call: its status code and details (as callError reads a grpc-js error). */
export class StreamError extends Error {
  constructor(
    readonly code: number,
    readonly details: string,
  ) {
    super(details);
  }
}

/** A failed peer call, with grpc-js's message form: "14 UNAVAILABLE: connect ECONNREFUSED ...". */
function peerError(code: number, details: string): StreamError {
  const e = new StreamError(code, details);
  e.message = `${code} ${codeName(code)}: ${details}`;
  return e;
}

/** A call's outcome from its trailers (or its trailers-only headers): nothing when OK, else the StreamError. */
function callStatus(status: http2.IncomingHttpHeaders | undefined): StreamError | undefined {
  const code = Number(status?.['grpc-status'] ?? NaN);
  if (!Number.isInteger(code)) return new StreamError(UNAVAILABLE, 'the call ended without a gRPC status');
  if (code === 0) return undefined; // OK
  const raw = status?.['grpc-message'];
  const text = Array.isArray(raw) ? raw.join(', ') : (raw ?? '');
  try {
    return new StreamError(code, decodeURIComponent(text)); // grpc-message is percent-encoded
  } catch {
    return new StreamError(code, text);
  }
}

/** A started call: its stream, and once that has ended, its gRPC status (undefined: OK). */
export interface GrpcCall {
  stream: http2.ClientHttp2Stream;
  outcome(): StreamError | undefined;
}

/** Starts a call of `path` (e.g. "/etcdserverpb.KV/Range") with `metadata`; `request`, if given, is its one message and ends the request. */
export function startCall(session: http2.ClientHttp2Session, path: string, request: Uint8Array | undefined, metadata: Record<string, string>): GrpcCall {
  const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...metadata });
  let status: http2.IncomingHttpHeaders | undefined;
  stream.on('response', (headers) => {
    if (headers['grpc-status'] !== undefined) status = headers; // trailers-only: an early failure
  });
  stream.on('trailers', (trailers: http2.IncomingHttpHeaders) => (status = trailers));
  if (request) stream.end(framed(request));
  return { stream, outcome: () => callStatus(status) };
}

/**
 * One unary call: the response message, or a StreamError. At `timeoutMs` it fails
 * with DEADLINE_EXCEEDED whatever the connection is doing (a stream on a session
 * still connecting closes only once it connects).
 */
export function unaryCall(
  session: http2.ClientHttp2Session,
  path: string,
  request: Uint8Array,
  metadata: Record<string, string>,
  timeoutMs: number,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const call = startCall(session, path, request, metadata);
    const req = call.stream;
    const chunks: Buffer[] = [];
    let failure: Error | undefined;
    let settled = false;
    const settle = (err: Error | undefined, value?: Buffer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve(value!);
    };
    const timer = setTimeout(() => {
      settle(new StreamError(DEADLINE_EXCEEDED, 'Deadline exceeded'));
      req.close(http2.constants.NGHTTP2_CANCEL);
    }, timeoutMs);
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', (err: Error) => (failure ??= new StreamError(UNAVAILABLE, err.message)));
    req.on('close', () => {
      const bad = failure ?? call.outcome();
      if (bad) return settle(bad);
      const body = Buffer.concat(chunks);
      const length = body.length >= 5 ? body.readUInt32BE(1) : -1;
      if (body[0] !== 0 || length !== body.length - 5) {
        return settle(new StreamError(INTERNAL, `malformed response to ${path} (${body.length} bytes, not one uncompressed message)`));
      }
      settle(undefined, body.subarray(5));
    });
  });
}

/** A method's codec, as a service definition has it (proto/load.ts). */
export interface MethodCodec<Req, Res> {
  path: string;
  requestSerialize(value: Req): Buffer;
  responseDeserialize(bytes: Buffer): Res;
}

/**
 * A streaming call, as grpc-js's client streams are used: write() a request
 * (false while the stream's buffer is full, 'drain' follows), end() the
 * requests, cancel(). Events: 'metadata' when the server accepted the call,
 * 'data' per response message, then 'end' if it ended OK or 'error' (a
 * StreamError) if not.
 */
export class ClientStreamCall<Req, Res> extends EventEmitter {
  private readonly call: GrpcCall;
  private failure: StreamError | undefined;
  private settled = false;

  constructor(
    private readonly channel: GrpcChannel,
    private readonly method: MethodCodec<Req, Res>,
    maxReceive: number,
  ) {
    super();
    this.call = channel.started(startCall(channel.session(), method.path, undefined, {}));
    const s = this.call.stream;
    const reader = new MessageReader(maxReceive);
    let responseEncoding: string | undefined;
    s.on('response', (headers: http2.IncomingHttpHeaders) => {
      responseEncoding = headers['grpc-encoding'] as string | undefined;
      if (headers['grpc-status'] === undefined) this.emit('metadata', headers);
      // A trailers-only answer: the call is over, whether or not we are done sending.
      else this.settle();
    });
    s.on('data', (chunk: Buffer) => {
      if (this.failure || this.settled) return;
      let messages: RawMessage[];
      try {
        messages = reader.push(chunk);
        for (const m of messages) this.emit('data', method.responseDeserialize(messageBody(m, responseEncoding, maxReceive)));
      } catch (e) {
        this.failure = new StreamError(INTERNAL, (e as Error).message);
        s.close(http2.constants.NGHTTP2_CANCEL);
      }
    });
    // The server's status ends the call even while our side is still open (Node closes the stream only once both are done).
    s.on('trailers', () => setImmediate(() => this.settle())); // after any message still on its way to 'data'
    s.on('drain', () => this.emit('drain'));
    s.on('error', (err: Error) => (this.failure ??= new StreamError(UNAVAILABLE, this.channel.lastError ?? err.message)));
    s.on('close', () => this.settle());
  }

  /** Reports the call's outcome once ('end' for OK, else 'error'), and closes the stream if it is still open. */
  private settle(): void {
    if (this.settled) return;
    this.settled = true;
    const bad = this.failure ?? this.call.outcome();
    if (!this.call.stream.closed) this.call.stream.close(bad ? http2.constants.NGHTTP2_CANCEL : http2.constants.NGHTTP2_NO_ERROR);
    if (bad) this.emit('error', peerError(bad.code, bad.details));
    else this.emit('end');
  }

  write(value: Req): boolean {
    const s = this.call.stream;
    if (this.settled || s.destroyed || s.writableEnded) return false;
    return s.write(framed(this.method.requestSerialize(value)));
  }

  end(): void {
    const s = this.call.stream;
    if (!s.destroyed && !s.writableEnded) s.end();
  }

  cancel(): void {
    this.failure ??= new StreamError(CANCELLED, 'Cancelled on client');
    if (!this.call.stream.destroyed) this.call.stream.close(http2.constants.NGHTTP2_CANCEL);
  }
}

/** As grpc-go grows its receive window: a large message is never held back a round trip per 64 KiB. */
const WINDOW = 16 << 20;
/** grpc-js's keepalive defaults for our peers: a ping every 10 s while calls are open, the session dropped when one is not answered in 20 s. */
const KEEPALIVE_MS = 10_000;
const KEEPALIVE_TIMEOUT_MS = 20_000;
/** grpc-js's least connect timeout: a session not set up by then (SYNs dropped, a TLS handshake that stalls) is dropped. */
const CONNECT_TIMEOUT_MS = 20_000;

/** One HTTP/2 session to a peer URL (http:// or https://, with `tlsOptions`: a servername there replaces the URL's host), dialled when a call needs one. */
export class GrpcChannel {
  private current: http2.ClientHttp2Session | undefined;
  /** Calls open on the channel: keepalive pings only while there are some. */
  private open = 0;
  /** Why the last session failed, for the calls it took down (connect ECONNREFUSED ...). */
  lastError: string | undefined;

  constructor(
    private readonly url: string,
    private readonly tlsOptions: tls.ConnectionOptions | undefined,
  ) {}

  /** The session, dialled anew if there is none or it broke: calls made before it connects wait in it. */
  session(): http2.ClientHttp2Session {
    const s = this.current;
    if (s && !s.closed && !s.destroyed) return s;
    const { host, port } = splitHostPort(hostPort(this.url));
    const secure = this.url.startsWith('https:');
    const session = http2.connect(`${secure ? 'https' : 'http'}://${hostPort(this.url)}`, {
      createConnection: () =>
        secure
          ? tls.connect({
              ...this.tlsOptions,
              host,
              port,
              servername: this.tlsOptions?.servername ?? (net.isIP(host) ? undefined : host),
              ALPNProtocols: ['h2'],
            })
          : net.connect({ host, port }),
      settings: { enablePush: false, initialWindowSize: WINDOW },
      maxSessionMemory: Number.MAX_SAFE_INTEGER,
    });
    this.lastError = undefined;
    session.on('error', (err: Error) => (this.lastError = err.message));
    session.socket?.on?.('error', (err: Error) => (this.lastError ??= err.message));
    session.once('remoteSettings', () => session.setLocalWindowSize(WINDOW));
    const connectTimer = setTimeout(() => session.destroy(new Error(`no connection within ${CONNECT_TIMEOUT_MS / 1000} s`)), CONNECT_TIMEOUT_MS);
    connectTimer.unref();
    session.once('connect', () => clearTimeout(connectTimer));
    session.once('close', () => clearTimeout(connectTimer));
    const keepalive = setInterval(() => {
      if (session.destroyed || this.open === 0) return;
      const timer = setTimeout(() => session.destroy(), KEEPALIVE_TIMEOUT_MS);
      timer.unref();
      try {
        session.ping((err) => {
          clearTimeout(timer);
          if (err) session.destroy();
        });
      } catch {
        clearTimeout(timer);
      }
    }, KEEPALIVE_MS);
    keepalive.unref();
    session.once('close', () => clearInterval(keepalive));
    this.current = session;
    return session;
  }

  /** Counts `call` as open until its stream closes (keepalive pings meanwhile). */
  started(call: GrpcCall): GrpcCall {
    this.open++;
    call.stream.once('close', () => this.open--);
    return call;
  }

  /** A unary call, answered within `timeoutMs`; a failure is a StreamError in grpc-js's message form. */
  async unary<Req, Res>(m: MethodCodec<Req, Res>, request: Req, timeoutMs: number): Promise<Res> {
    this.open++;
    try {
      return m.responseDeserialize(await unaryCall(this.session(), m.path, m.requestSerialize(request), {}, timeoutMs));
    } catch (e) {
      const err = e as StreamError;
      const details = err.code === UNAVAILABLE && this.lastError ? this.lastError : err.details;
      throw peerError(err.code ?? UNAVAILABLE, details ?? err.message);
    } finally {
      this.open--;
    }
  }

  /** A client-streaming or bidi call. */
  stream<Req, Res>(m: MethodCodec<Req, Res>, maxReceive: number): ClientStreamCall<Req, Res> {
    return new ClientStreamCall(this, m, maxReceive);
  }

  close(): void {
    this.current?.close();
    this.current = undefined;
  }
}
