// gRPC calls on a node:http2 session of our own, without grpc-js: all that
// `snapshot save` makes (Auth.Authenticate, a count-only KV.Range, then
// Maintenance.Snapshot, snapshotStream.ts), on one connection. Loading grpc-js
// and its first call were about 60 ms of a 100k-key save's 280, which is
// measured against etcdctl's.
//
// The wire (gRPC over HTTP/2): a POST whose body is the request message with a
// 5-byte prefix (compressed flag, big-endian length); the answer is such
// messages, then trailers with grpc-status and grpc-message (or, for an early
// failure, both in the headers).
import http2 from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';
import { GrpcCode } from '../api/errors.js';
import type { Endpoint } from './endpoints.js';
import { connectReason, isTlsReason, unreachableError } from './errors.js';
import type { TlsMaterial } from './tls.js';

/** A failed call as callError reads a grpc-js error: its status code and details. */
export class StreamError extends Error {
  constructor(
    readonly code: number,
    readonly details: string,
  ) {
    super(details);
  }
}

/** As grpc-go (etcdctl) grows its receive window: the server is never held back a round trip per 64 KiB. */
const WINDOW = 16 << 20;
const CLOSED_AFTER_HANDSHAKE = 'the server closed the connection after the TLS handshake: it may not accept the client certificate';
/** grpc-js's reconnect backoff within the dial timeout (connection.ts): first, and at most. */
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 1000;

/**
 * A session to `endpoint` once the server's SETTINGS arrived, within the dial
 * timeout. A refused connection is tried again until then, as grpc-js does; a TLS
 * failure is reported at once. Errors are unreachableError's one line.
 */
export async function dialSession(endpoint: Endpoint, tls: TlsMaterial | undefined, dialTimeoutMs: number): Promise<http2.ClientHttp2Session> {
  const deadline = Date.now() + dialTimeoutMs;
  let reason: string | undefined;
  for (let backoff = RETRY_FIRST_MS; ; backoff = Math.min(2 * backoff, RETRY_MAX_MS)) {
    const left = deadline - Date.now();
    if (left <= 0) throw unreachableError(endpoint.text, dialTimeoutMs, reason);
    const r = await connectOnce(endpoint, tls, left);
    if (typeof r !== 'string') return r;
    reason = r;
    if (isTlsReason(r)) throw unreachableError(endpoint.text, dialTimeoutMs, r);
    await sleep(Math.max(0, Math.min(backoff, deadline - Date.now())));
  }
}

function connectOnce(endpoint: Endpoint, tls: TlsMaterial | undefined, ms: number): Promise<http2.ClientHttp2Session | string> {
  return new Promise((resolve) => {
    const session = http2.connect(`${tls ? 'https' : 'http'}://${endpoint.address}`, {
      ...(tls ? { secureContext: tls.secureContext, ...tls.verify } : {}),
      settings: { initialWindowSize: WINDOW, enablePush: false },
    });
    let settled = false;
    const done = (r: http2.ClientHttp2Session | string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      session.off('remoteSettings', onSettings).off('error', onError).off('close', onClose);
      // From here a call's own stream reports what broke it (and a failed session is gone).
      session.on('error', () => {});
      if (typeof r === 'string') session.destroy();
      resolve(r);
    };
    const onSettings = () => {
      session.setLocalWindowSize(WINDOW);
      done(session);
    };
    const onError = (err: Error) => done(connectReason(err.message));
    // Closed before HTTP/2 was set up: over TLS, a server that refused our client
    // certificate (a Lifeboat member sends no alert); plaintext to a TLS port
    // otherwise, in grpc-js's words, which connectReason explains.
    const onClose = () => done(tls ? CLOSED_AFTER_HANDSHAKE : connectReason('Failed to connect'));
    const timer = setTimeout(() => done('timed out'), ms);
    session.once('remoteSettings', onSettings).once('error', onError).once('close', onClose);
    // A server that refuses our client certificate (TLS 1.3: after our side of the
    // handshake is done) sends an alert the socket reports, and the session does not.
    // Left on once settled: the session's proxy refuses calls once it lets the socket go.
    session.socket.once('error', onError);
  });
}

/** `message` with gRPC's 5-byte prefix, uncompressed. */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.alloc(5 + message.length);
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

/** A call's outcome from its trailers (or its trailers-only headers): nothing when OK, else the StreamError. */
function callStatus(status: http2.IncomingHttpHeaders | undefined): StreamError | undefined {
  const code = Number(status?.['grpc-status'] ?? NaN);
  if (!Number.isInteger(code)) return new StreamError(GrpcCode.Unavailable, 'the call ended without a gRPC status');
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

/** Starts a call of `path` (e.g. "/etcdserverpb.KV/Range") with the metadata (the auth token) and sends its one request. */
export function startCall(session: http2.ClientHttp2Session, path: string, request: Uint8Array, metadata: Record<string, string>): GrpcCall {
  const stream = session.request({ ':method': 'POST', ':path': path, 'content-type': 'application/grpc', te: 'trailers', ...metadata });
  let status: http2.IncomingHttpHeaders | undefined;
  stream.on('response', (headers) => {
    if (headers['grpc-status'] !== undefined) status = headers; // trailers-only: an early failure
  });
  stream.on('trailers', (trailers: http2.IncomingHttpHeaders) => (status = trailers));
  stream.end(grpcFrame(request));
  return { stream, outcome: () => callStatus(status) };
}

/** One unary call: the response message, or a StreamError (DEADLINE_EXCEEDED after `timeoutMs`). */
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
    const timer = setTimeout(() => {
      failure ??= new StreamError(GrpcCode.DeadlineExceeded, 'Deadline exceeded');
      req.close(http2.constants.NGHTTP2_CANCEL);
    }, timeoutMs);
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('error', (err: Error) => (failure ??= new StreamError(GrpcCode.Unavailable, err.message)));
    req.on('close', () => {
      clearTimeout(timer);
      const bad = failure ?? call.outcome();
      if (bad) return reject(bad);
      const body = Buffer.concat(chunks);
      const length = body.length >= 5 ? body.readUInt32BE(1) : -1;
      if (body[0] !== 0 || length !== body.length - 5) {
        return reject(new StreamError(GrpcCode.Internal, `malformed response to ${path} (${body.length} bytes, not one uncompressed message)`));
      }
      resolve(body.subarray(5));
    });
  });
}
