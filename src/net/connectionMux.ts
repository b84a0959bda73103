// The connection sniffer every listener of ours uses (the client URLs' gRPC
// server, the peer URLs' gRPC server and raw peer streams): it binds as grpc-js's
// server.bindAsync does (every address a host name resolves to, port 0 picks one),
// ends TLS for an https:// URL (tlsTermination.ts; what follows sees the
// plaintext), and reads the start of each accepted connection to tell who is
// calling before anything else sees it:
//   - a connection that opens with one of our magics (a peer's message stream or
//     snapshot, transport/rawPeerStream.ts, rawSnapshot.ts) goes to its taker;
//   - a grpc-js client (the toolkit's own, the npm etcd3 client) sends a non-empty
//     SETTINGS at once (h2Frames.ts prefaceKind): 'grpc-js';
//   - any other HTTP/2 client (grpc-go, so etcdctl) sends an empty one: 'http2';
//   - anything else, or nothing within PREFACE_WAIT_MS: 'unknown'.
// What is read to decide is put back on the socket, paused, for whoever takes it.
// authorityListener.ts decides what each kind gets (the :authority rewrite or not).
import net from 'node:net';
import { splitHostPort } from '../common/urls.js';
import { prefaceKind } from './h2Frames.js';
import { createTlsServer, type ServerTlsOptions } from './tlsTermination.js';

/** A kind of connection of our own on a listener: the bytes it opens with, and who takes it. */
export interface RawConnection {
  magic: Buffer;
  accept(socket: net.Socket): void;
}

/** Who an HTTP/2 (or unrecognised) connection's preface shows is calling. */
export type ClientKind = 'grpc-js' | 'http2' | 'unknown';

export interface MuxOptions {
  tls?: ServerTlsOptions;
  /** Connections that open with one of these magics (after TLS, if any) go to its `accept`. */
  raw?: readonly RawConnection[];
}

export interface MuxListener {
  /** The port bound (the one asked for, or the one chosen for port 0). */
  readonly port: number;
  /** Refuses new connections from now on; connections already open carry on. */
  stopAccepting(): void;
  /** Stops accepting, drops the connections still open, resolves once all are gone. */
  close(): Promise<void>;
}

/** The address and port a connection was accepted on (IPv4-mapped IPv6 addresses as IPv4). */
export interface LocalEnd {
  host: string;
  port: number;
}

/** How long a new connection may take to send its preface before it counts as 'unknown'. */
const PREFACE_WAIT_MS = 1000;

/**
 * Listens on `hostPort` and hands each connection that is not a RawConnection to
 * `accept` once its preface shows the kind of client, the socket paused with what
 * was read put back. Like bindAsync, a host name binds every address it resolves
 * to, succeeding if at least one binds; port 0 picks a free port (the same one for
 * every address). With `opts.tls` every connection is a TLS one, ended here (ALPN
 * h2 unless the options say otherwise).
 */
export async function listenMux(
  hostPort: string,
  opts: MuxOptions,
  accept: (socket: net.Socket, kind: ClientKind, local: LocalEnd) => void,
): Promise<MuxListener> {
  const { host, port: wanted } = splitHostPort(hostPort);
  const addresses = host === '' ? ['::'] : net.isIP(host) ? [host] : await lookupAll(host);
  const sockets = new Set<net.Socket>();
  const servers: net.Server[] = [];
  const serverClosed: Array<Promise<void>> = [];
  let port = wanted;
  let firstError: Error | undefined;

  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  };
  const onConnection = (socket: net.Socket) => {
    const local = socket.localAddress;
    const localPort = socket.localPort;
    if (local === undefined || localPort === undefined) {
      socket.destroy(); // reset before we saw it
      return;
    }
    track(socket);
    socket.on('error', () => {}); // reported through the connection; never unhandled
    socket.setNoDelay(true); // what http2 does to a plain socket (it cannot to a wrapped one)
    const h = local.includes(':') && local.startsWith('::ffff:') && net.isIPv4(local.slice(7)) ? local.slice(7) : local;
    whenClassified(socket, opts.raw ?? [], (how) => {
      if (typeof how === 'object') how.accept(socket);
      else accept(socket, how, { host: h, port: localPort });
    });
  };

  const tlsOptions = opts.tls ? { ...opts.tls, alpn: opts.tls.alpn ?? ['h2'] } : undefined;
  for (const address of addresses) {
    let srv: net.Server;
    if (tlsOptions) {
      srv = createTlsServer(tlsOptions, onConnection);
      srv.on('connection', track); // the TCP connection, closed by close() even mid-handshake
    } else {
      srv = net.createServer({ allowHalfOpen: false }, onConnection);
    }
    try {
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen({ host: address, port }, () => {
          srv.off('error', reject);
          resolve();
        });
      });
      srv.on('error', () => {}); // accept errors (EMFILE...) are retried by libuv
      port = (srv.address() as net.AddressInfo).port;
      servers.push(srv);
      serverClosed.push(new Promise<void>((resolve) => srv.once('close', () => resolve())));
    } catch (e) {
      firstError ??= e as Error;
    }
  }
  if (servers.length === 0) {
    throw firstError ?? new Error(`no address to listen on for ${hostPort}`);
  }

  const stopAccepting = () => {
    for (const s of servers) if (s.listening) s.close();
  };
  let closed: Promise<void> | undefined;
  return {
    port,
    stopAccepting,
    close() {
      closed ??= (async () => {
        stopAccepting();
        for (const s of sockets) s.destroy();
        await Promise.all(serverClosed);
      })();
      return closed;
    },
  };
}

/**
 * Calls `decide` once the client's preface shows who it is, with the bytes read
 * so far put back on the (paused) socket. grpc-js and grpc-go wait for the
 * server's SETTINGS before sending HEADERS, but send their own at once, and
 * grpc-js's is never empty (prefaceKind).
 */
function whenClassified(socket: net.Socket, raws: readonly RawConnection[], decide: (how: ClientKind | RawConnection) => void): void {
  const chunks: Buffer[] = [];
  readUntilDecided<ClientKind | RawConnection>(
    socket,
    PREFACE_WAIT_MS,
    'unknown',
    (chunk) => {
      chunks.push(chunk);
      const head = chunks.length === 1 ? chunk : Buffer.concat(chunks);
      if (raws.some((r) => head[0] === r.magic[0])) {
        const fits = raws.filter((r) => head.subarray(0, r.magic.length).equals(r.magic.subarray(0, head.length)));
        if (fits.length === 0) return 'unknown';
        return fits.find((r) => head.length >= r.magic.length);
      }
      const kind = prefaceKind(head);
      return kind === undefined ? undefined : kind === 'settings' ? 'grpc-js' : kind === 'empty-settings' ? 'http2' : 'unknown';
    },
    (how) => {
      if (chunks.length > 0) socket.unshift(Buffer.concat(chunks));
      decide(how);
    },
  );
}

/**
 * Feeds each chunk the socket reads to `step` until it returns a decision (or
 * `waitMs` passes: `onTimeout`), then stops reading, pauses the socket and calls
 * `done`. A client gone first (EOF, close), or a step that throws (a bug here
 * costs this connection, never the process), destroys the socket instead.
 */
export function readUntilDecided<T>(socket: net.Socket, waitMs: number, onTimeout: T, step: (chunk: Buffer) => T | undefined, done: (how: T) => void): void {
  let decided = false;
  const finish = (how: T | undefined) => {
    if (decided) return;
    decided = true;
    clearTimeout(timer);
    socket.off('data', onData);
    socket.off('end', onGone);
    socket.off('close', onGone);
    if (how === undefined || socket.destroyed) return void socket.destroy();
    socket.pause();
    done(how);
  };
  const onData = (chunk: Buffer) => {
    let how: T | undefined;
    try {
      how = step(chunk);
    } catch {
      return finish(undefined);
    }
    if (how !== undefined) finish(how);
  };
  const onGone = () => finish(undefined);
  const timer = setTimeout(() => finish(onTimeout), waitMs);
  socket.on('data', onData);
  socket.once('end', onGone);
  socket.once('close', onGone);
}

/** A host name's addresses. dns is loaded only here: members listen on IP addresses as a rule, and it costs a fresh member 0.3 MiB. */
async function lookupAll(host: string): Promise<string[]> {
  return (await process.getBuiltinModule('node:dns/promises').lookup(host, { all: true })).map((a) => a.address);
}
