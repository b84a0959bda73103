// TLS terminated by the member itself, in front of whatever serves the
// plaintext (the :authority shim and grpc-js for client and peer URLs, the HTTP
// server for metrics). One tls.Server per listener:
//
// - its key pair and CA are re-read when the files change, checked at every
//   accepted connection before the handshake starts (tlsFiles.ts), as etcd
//   re-reads them at every handshake;
// - with client certificate authentication (etcd's --client-cert-auth,
//   --peer-client-cert-auth, or a trusted CA file, which in etcd 3.4 implies it)
//   a connection whose certificate is missing, expired or from another CA is
//   refused, and so is a peer whose CN is not --peer-cert-allowed-cn. Node
//   checks the chain after the handshake (it never sends an alert for a bad
//   certificate), so we look at the outcome, log who was refused (RefusalLog:
//   rate-limited) and close the connection;
// - a connection that passes carries its certificate's CN: on the socket
//   (`identityOf(socket)`) and, for gRPC handlers, by the peer address grpc-js
//   reports (`callIdentity(call)`), since grpc-js's own auth context is empty
//   for connections we inject.
import type net from 'node:net';
import tls from 'node:tls';
import { systemRoots } from './systemRoots.js';
import { commonName, type WatchedTlsFiles } from './tlsFiles.js';
import type { RefusalLog } from './refusalLog.js';

export interface ServerTlsOptions {
  files: WatchedTlsFiles;
  /** Request a client certificate and refuse a connection without a valid one. */
  clientCertAuth: boolean;
  /** Refuse a valid certificate whose CN is not this one (etcd's --peer-cert-allowed-cn). */
  allowedCn?: string;
  /** Names the listener in logs: 'client', 'peer' or 'metrics'. */
  listener: string;
  /** ALPN protocols offered: ['h2'] for gRPC (grpc-go insists on it). */
  alpn?: string[];
  refusals: RefusalLog;
}

/** Who is at the other end of a TLS connection that was let in. */
export interface ConnectionIdentity {
  /** The verified client certificate's common name; '' without a client certificate. */
  cn: string;
  /** A client certificate was presented and verified against the trusted CA. */
  verified: boolean;
}

const bySocket = new WeakMap<object, ConnectionIdentity>();
const byPeer = new Map<string, ConnectionIdentity>();

/** The identity of a connection accepted by a TLS listener (undefined for plaintext). */
export function identityOf(socket: object): ConnectionIdentity | undefined {
  return bySocket.get(socket);
}

/**
 * The identity of the TLS connection a gRPC call arrived on, found by the
 * address grpc-js reports for it (`call.getPeer()`, "host:port").
 */
export function callIdentity(call: { getPeer(): string }): ConnectionIdentity | undefined {
  return byPeer.get(call.getPeer());
}

const peerKey = (s: net.Socket) => `${s.remoteAddress}:${s.remotePort}`;

/** Node's verification codes in the words operators search for. */
function refusalReason(code: string | Error | undefined): string {
  const c = typeof code === 'string' ? code : (code?.message ?? '');
  const known: Record<string, string> = {
    CERT_HAS_EXPIRED: 'certificate has expired',
    CERT_NOT_YET_VALID: 'certificate is not yet valid',
    UNABLE_TO_GET_ISSUER_CERT: 'certificate signed by unknown authority',
    UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'certificate signed by unknown authority',
    UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'certificate signed by unknown authority',
    SELF_SIGNED_CERT_IN_CHAIN: 'certificate signed by unknown authority',
    DEPTH_ZERO_SELF_SIGNED_CERT: 'certificate signed by unknown authority (self-signed)',
    CERT_SIGNATURE_FAILURE: 'certificate signature failure',
    INVALID_PURPOSE: 'certificate not valid for client authentication (extended key usage)',
    CERT_REVOKED: 'certificate revoked',
  };
  return known[c] ?? c;
}

/** The secure-context options for the files as they are now: without a trusted CA file, client certificates are checked against the system roots, as etcd's (Go's) are. */
function contextOptions(o: ServerTlsOptions): tls.SecureContextOptions {
  const m = o.files.current();
  return { cert: m.cert, key: m.key, ca: m.ca ?? (o.clientCertAuth ? systemRoots() : undefined) };
}

/**
 * A TLS server (not yet listening) that hands each connection it lets in to
 * `onSecure` as a TLSSocket carrying plaintext. The caller listens on it and
 * closes it; `sockets` tracks every accepted TCP connection, handshaking or not.
 */
export function createTlsServer(o: ServerTlsOptions, onSecure: (socket: tls.TLSSocket) => void): tls.Server {
  const server = tls.createServer({
    ...contextOptions(o),
    requestCert: o.clientCertAuth,
    // We look at the verification outcome ourselves, to log who was refused.
    rejectUnauthorized: false,
    ALPNProtocols: o.alpn,
    handshakeTimeout: 10_000,
  });
  // Before the TLSSocket for this connection is made (tls.Server's own
  // 'connection' listener), so a rotated key pair serves this very handshake.
  // The files may be shared by several listeners: each follows their generation.
  let built = o.files.generation;
  server.prependListener('connection', () => {
    o.files.refresh();
    if (o.files.generation === built) return;
    built = o.files.generation;
    server.setSecureContext(contextOptions(o));
  });
  const refuse = (socket: tls.TLSSocket, cn: string, error: string) => {
    o.refusals.refused({ listener: o.listener, remoteAddr: peerKey(socket), cn, error });
    socket.destroy();
  };
  server.on('secureConnection', (socket: tls.TLSSocket) => {
    const remote = peerKey(socket);
    let identity: ConnectionIdentity = { cn: '', verified: false };
    if (o.clientCertAuth) {
      const cert = socket.getPeerCertificate();
      const cn = commonName(cert?.subject);
      if (!cert || !cert.raw) return refuse(socket, '', 'no client certificate presented');
      if (!socket.authorized) return refuse(socket, cn, refusalReason(socket.authorizationError));
      if (o.allowedCn !== undefined && o.allowedCn !== '' && cn !== o.allowedCn) {
        return refuse(socket, cn, `CommonName authentication failed (allowed: ${o.allowedCn})`);
      }
      identity = { cn, verified: true };
    }
    bySocket.set(socket, identity);
    byPeer.set(remote, identity);
    socket.once('close', () => {
      if (byPeer.get(remote) === identity) byPeer.delete(remote);
    });
    onSecure(socket);
  });
  server.on('tlsClientError', (err: Error & { code?: string }, socket: tls.TLSSocket) => {
    // A connection closed before or during the handshake (a port probe, a
    // client giving up) says nothing about who it was.
    if (err.code === 'ECONNRESET' || /socket hang up/.test(err.message)) return;
    const why = err.message.replace(/^error:[0-9A-Fa-f]+:[^:]*:[^:]*:/, '').replace(/\s+/g, ' ');
    o.refusals.refused({ listener: o.listener, remoteAddr: peerKey(socket), cn: '', error: `TLS handshake error: ${why}` });
  });
  server.on('error', () => {}); // accept errors (EMFILE...) are retried by libuv
  return server;
}
