// The toolkit's node:http2 session for the gRPC calls (net/grpcClient.ts) that
// `snapshot save` makes without grpc-js (Auth.Authenticate, a count-only KV.Range,
// then Maintenance.Snapshot, snapshotStream.ts), on one connection. Loading grpc-js
// and its first call were about 60 ms of a 100k-key save's 280, which is
// measured against etcdctl's.
//
// The wire (gRPC over HTTP/2): a POST whose body is the request message with a
// 5-byte prefix (compressed flag, big-endian length); the answer is such
// messages, then trailers with grpc-status and grpc-message (or, for an early
// failure, both in the headers).
import http2 from 'node:http2';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Endpoint } from './endpoints.js';
import { connectReason, isTlsReason, unreachableError } from './errors.js';
import type { TlsMaterial } from './tls.js';

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
