// A TCP listener for our gRPC server (grpcServer.ts) that also accepts etcdctl
// 3.4's invalid ":authority". listenWithAuthorityRewrite() binds like grpc-js's
// server.bindAsync (every address a host name resolves to, port 0 picks one)
// and hands each accepted socket to the server as a Duplex whose client→server
// bytes pass through AuthorityRewriter (h2Frames.ts); server→client bytes,
// close, EOF and back-pressure map one to one onto the socket. For an https:// URL the listener is a TLS server
// (tlsTermination.ts) and the rewrite sees the plaintext: TLS is ended here,
// before the :authority layer, which would otherwise see only ciphertext.
//
// etcdctl 3.4 (`endpoint status`, `endpoint hashkv`, `move-leader`) dials each
// endpoint through grpc-go's passthrough resolver with the endpoint string as
// the target, so its requests carry `:authority: http://127.0.0.1:2379`. nghttp2
// (inside Node's http2) rejects an :authority holding "/" (or any character
// outside RFC 3986's authority set) with RST_STREAM PROTOCOL_ERROR; etcd's Go
// server accepts it. We never read :authority, so we accept TCP connections
// ourselves and hand the server a Duplex over each socket in which the client's
// HEADERS frames have such an :authority replaced by a valid one. Everything
// else passes byte for byte; the server→client direction is untouched.
//
// Only those few connections need it, and it costs every connection behind it
// the JS stream path. A connection whose preface shows a grpc-js client (the
// toolkit's own, the npm etcd3 client) is given to the server as the socket
// itself. Any other client's first request decides: grpc-go (so etcdctl) sends
// no HEADERS before the server's SETTINGS, so the listener sends an empty
// SETTINGS of its own, reads up to the first header block and the client's ACK
// of that SETTINGS (taken out: the server session never sent it), and gives the
// server the socket itself when the block's :authority is valid (grpc-go keeps
// one :authority per connection; `etcdctl put`, `check perf`), the rewrite when
// not (the endpoint commands above).
//
// The HPACK details are at the top of hpack.ts.
import net from 'node:net';
import { Duplex } from 'node:stream';
import { splitHostPort } from '../common/urls.js';
import type { GrpcServer } from './grpcServer.js';
import { AuthorityRewriter, EMPTY_SETTINGS, prefaceKind } from './h2Frames.js';
import { replacementAuthority } from './hpack.js';
import { createTlsServer, type ServerTlsOptions } from './tlsTermination.js';

// ---- the connection and the listener ----------------------------------------

/**
 * A client socket as the server's http2 sees it: reads rewritten, writes as they
 * are. http2 wraps a non-net.Socket Duplex in its JSStreamSocket; close, error,
 * EOF (and, through the socket's allowHalfOpen=false, the automatic end that
 * follows it), back-pressure and shutdown map one to one onto the socket.
 */
class RewritingConnection extends Duplex {
  private readonly rewriter: AuthorityRewriter;
  /** The client's address, in net.Socket's `_peername` form. */
  readonly peer: { address?: string; port?: number; family?: string };

  /** `rewriter` may have read the start of the stream already: `initial` is what it gave. */
  constructor(
    private readonly socket: net.Socket,
    rewriter: AuthorityRewriter,
    initial: readonly Buffer[],
  ) {
    super({ allowHalfOpen: true });
    this.peer = { address: socket.remoteAddress, port: socket.remotePort, family: socket.remoteFamily };
    this.rewriter = rewriter;
    for (const b of initial) this.push(b);
    socket.on('data', (chunk: Buffer) => {
      let out: Buffer[];
      try {
        out = this.rewriter.push(chunk);
      } catch (e) {
        this.destroy(e as Error); // a bug here costs this connection, never the process
        return;
      }
      let more = true;
      for (const b of out) more = this.push(b);
      if (!more) socket.pause();
    });
    socket.on('end', () => {
      for (const b of this.rewriter.end()) this.push(b);
      this.push(null);
    });
    socket.on('error', (err) => this.destroy(err));
    socket.on('close', () => this.destroy());
  }

  override _read(): void {
    this.socket.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.socket.write(chunk, cb);
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, cb: (err?: Error | null) => void): void {
    this.socket.cork();
    for (let i = 0; i < chunks.length; i++) {
      if (i === chunks.length - 1) this.socket.write(chunks[i].chunk, cb);
      else this.socket.write(chunks[i].chunk);
    }
    this.socket.uncork();
  }

  override _final(cb: (err?: Error | null) => void): void {
    // Socket errors reach us through 'error'; here only the FIN matters.
    this.socket.end(() => cb());
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.socket.destroy();
    cb(err);
  }
}

/**
 * So a call's getPeer() names the client, as with a plain socket (and
 * callIdentity(call) finds a TLS connection's certificate CN by it): http2's
 * JSStreamSocket has no peer address of its own, but reports `_peername` when
 * set. We set it as each session starts.
 */
const forwarding = new WeakSet<GrpcServer>();
function forwardPeers(server: GrpcServer): void {
  if (forwarding.has(server)) return;
  forwarding.add(server);
  server.onSession((session) => {
    const socket = session.socket as unknown as Record<string, unknown> | undefined;
    if (socket && socket.stream instanceof RewritingConnection) socket._peername = socket.stream.peer;
  });
}

/** How long a new connection may take to send its preface before it gets the rewrite, as every connection once did. */
const PREFACE_WAIT_MS = 1000;

/**
 * Calls `decide` once the client's preface shows who it is, with the bytes
 * read so far put back on the (paused) socket: 'native' for grpc-js (our own
 * tools, the npm etcd3 client; its :authority is always valid), so the server gets
 * the socket itself, read natively by http2 without a JS stream in between;
 * 'probe' for other HTTP/2 clients (grpc-go, so etcdctl 3.4): their first request
 * decides (whenFirstRequest); 'rewrite' for anything else. grpc-js and grpc-go
 * wait for the server's SETTINGS before sending HEADERS, but send their own at
 * once, and grpc-js's is never empty (prefaceKind). A RawConnection: the
 * connection opened with its magic (a peer's message stream or snapshot,
 * transport/rawPeerStream.ts, rawSnapshot.ts).
 */
function whenClassified(socket: net.Socket, raws: readonly RawConnection[], decide: (how: 'native' | 'probe' | 'rewrite' | RawConnection) => void): void {
  const chunks: Buffer[] = [];
  readUntilDecided<'native' | 'probe' | 'rewrite' | RawConnection>(
    socket,
    PREFACE_WAIT_MS,
    'rewrite',
    (chunk) => {
      chunks.push(chunk);
      const head = chunks.length === 1 ? chunk : Buffer.concat(chunks);
      if (raws.some((r) => head[0] === r.magic[0])) {
        const fits = raws.filter((r) => head.subarray(0, r.magic.length).equals(r.magic.subarray(0, head.length)));
        if (fits.length === 0) return 'rewrite';
        return fits.find((r) => head.length >= r.magic.length);
      }
      const kind = prefaceKind(head);
      return kind === undefined ? undefined : kind === 'settings' ? 'native' : kind === 'empty-settings' ? 'probe' : 'rewrite';
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
function readUntilDecided<T>(socket: net.Socket, waitMs: number, onTimeout: T, step: (chunk: Buffer) => T | undefined, done: (how: T) => void): void {
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

/**
 * How long a probed connection may take to send its first request and answer our
 * SETTINGS before it gets the rewrite. A client may connect well before its first
 * call (etcdctl check perf dials all its clients first); it waits for nothing
 * meanwhile, and a PING, which would wait, decides at once.
 */
const FIRST_REQUEST_WAIT_MS = 10_000;
/** Bytes a probed connection may send before it decides; past them it gets the rewrite, whose stream has back-pressure. */
const FIRST_REQUEST_MAX_BYTES = 1 << 20;

/**
 * Sends the client an empty SETTINGS, then reads the (paused) socket through
 * `rewriter` (built to take the client's ACK of it out) until the first header
 * block and that ACK are in, and calls `decide` with what the rewriter gave so
 * far: 'native' when the block passed unchanged; 'rewrite' when its :authority
 * was rewritten or it was not examined, or at once when a PING (a keepalive,
 * which waits for its answer) comes first, or when no request came in time.
 */
function whenFirstRequest(socket: net.Socket, rewriter: AuthorityRewriter, decide: (how: 'native' | 'rewrite', out: Buffer[]) => void): void {
  const out: Buffer[] = [];
  let read = 0;
  readUntilDecided<'native' | 'rewrite'>(
    socket,
    FIRST_REQUEST_WAIT_MS,
    'rewrite',
    (chunk) => {
      for (const b of rewriter.push(chunk)) out.push(b);
      read += chunk.length;
      if (rewriter.firstBlock !== undefined && rewriter.ackStripped) {
        if (rewriter.firstBlock !== 'clean') return 'rewrite';
        // What the rewriter still holds (a frame header cut at the chunk's end, a later block being gathered) goes too, as received.
        for (const b of rewriter.end()) out.push(b);
        return 'native';
      }
      return rewriter.pinged || read > FIRST_REQUEST_MAX_BYTES ? 'rewrite' : undefined;
    },
    (how) => decide(how, out),
  );
  socket.write(EMPTY_SETTINGS);
  socket.resume();
}

/** A kind of connection of our own on a listener: the bytes it opens with, and who takes it. */
export interface RawConnection {
  magic: Buffer;
  accept(socket: net.Socket): void;
}

export interface AuthorityRewriteListener {
  /** The port bound (the one asked for, or the one chosen for port 0). */
  readonly port: number;
  /** Connections handed to the server so far: as sockets (grpc-js clients) and through the rewrite (the rest). */
  connections(): { native: number; rewritten: number };
  /** Refuses new connections from now on; connections already open carry on. */
  stopAccepting(): void;
  /** Stops accepting, drops the connections still open, resolves once all are gone. */
  close(): Promise<void>;
}

/**
 * Binds the gRPC server's services on `hostPort` through the :authority
 * rewrite (instead of server.bindAsync). Like bindAsync, a host name binds
 * every address it resolves to, succeeding if at least one binds; port 0
 * picks a free port (the same one for every address). With `opts.tls` every
 * connection is a TLS one, ended here (ALPN h2) before the rewrite.
 */
export async function listenWithAuthorityRewrite(
  server: GrpcServer,
  hostPort: string,
  opts: {
    tls?: ServerTlsOptions;
    /** Connections that open with one of these magics (after TLS, if any) go to its `accept`, not to the server. */
    raw?: readonly RawConnection[];
  } = {},
): Promise<AuthorityRewriteListener> {
  const { host, port: wanted } = splitHostPort(hostPort);
  const addresses = host === '' ? ['::'] : net.isIP(host) ? [host] : await lookupAll(host);
  forwardPeers(server);
  const sockets = new Set<net.Socket>();
  const counts = { native: 0, rewritten: 0 };
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
    const cache = new Map<number, Buffer>();
    const replacement = (len: number) => {
      let v = cache.get(len);
      if (!v) cache.set(len, (v = Buffer.from(replacementAuthority(h, localPort, len), 'latin1')));
      return v;
    };
    const native = (out: Buffer[]) => {
      counts.native++;
      if (out.length > 0) socket.unshift(Buffer.concat(out));
      server.injectConnection(socket);
    };
    const rewrite = (rewriter: AuthorityRewriter, out: Buffer[]) => {
      counts.rewritten++;
      server.injectConnection(new RewritingConnection(socket, rewriter, out));
    };
    whenClassified(socket, opts.raw ?? [], (how) => {
      if (typeof how === 'object') return how.accept(socket);
      if (how === 'native') return native([]);
      const rewriter = new AuthorityRewriter(replacement, how === 'probe');
      if (how === 'rewrite') return rewrite(rewriter, []);
      whenFirstRequest(socket, rewriter, (decided, out) => (decided === 'native' ? native(out) : rewrite(rewriter, out)));
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
    connections: () => ({ ...counts }),
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

/** A host name's addresses. dns is loaded only here: members listen on IP addresses as a rule, and it costs a fresh member 0.3 MiB. */
async function lookupAll(host: string): Promise<string[]> {
  return (await process.getBuiltinModule('node:dns/promises').lookup(host, { all: true })).map((a) => a.address);
}
