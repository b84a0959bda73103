// A listener for our gRPC server (grpcServer.ts) that also accepts etcdctl 3.4's
// invalid ":authority". It listens through connectionMux.ts (binding, TLS ended
// before the rewrite sees the plaintext, the sniffing of each connection's
// preface) and hands the server either the socket itself or a Duplex whose
// client→server bytes pass through AuthorityRewriter (h2Frames.ts); server→client
// bytes, close, EOF and back-pressure map one to one onto the socket.
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
// itself. Any other HTTP/2 client's first request decides: grpc-go (so etcdctl) sends
// no HEADERS before the server's SETTINGS, so the listener sends an empty
// SETTINGS of its own, reads up to the first header block and the client's ACK
// of that SETTINGS (taken out: the server session never sent it), and gives the
// server the socket itself when the block's :authority is valid (grpc-go keeps
// one :authority per connection; `etcdctl put`, `check perf`), the rewrite when
// not (the endpoint commands above). A connection that is neither gets the rewrite.
//
// The HPACK details are at the top of hpack.ts.
import type net from 'node:net';
import { Duplex } from 'node:stream';
import { listenMux, readUntilDecided, type MuxOptions } from './connectionMux.js';
import type { GrpcServer } from './grpcServer.js';
import { AuthorityRewriter, EMPTY_SETTINGS } from './h2Frames.js';
import { replacementAuthority } from './hpack.js';

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
 * Binds the gRPC server's services on `hostPort` through the :authority rewrite
 * (instead of server.bindAsync), as connectionMux.ts's listenMux binds. A grpc-js
 * client gets the socket itself; another HTTP/2 client's first request decides
 * (whenFirstRequest); anything else gets the rewrite.
 */
export async function listenWithAuthorityRewrite(server: GrpcServer, hostPort: string, opts: MuxOptions = {}): Promise<AuthorityRewriteListener> {
  forwardPeers(server);
  const counts = { native: 0, rewritten: 0 };
  const mux = await listenMux(hostPort, opts, (socket, kind, local) => {
    const cache = new Map<number, Buffer>();
    const replacement = (len: number) => {
      let v = cache.get(len);
      if (!v) cache.set(len, (v = Buffer.from(replacementAuthority(local.host, local.port, len), 'latin1')));
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
    if (kind === 'grpc-js') return native([]);
    const rewriter = new AuthorityRewriter(replacement, kind === 'http2');
    if (kind === 'unknown') return rewrite(rewriter, []);
    whenFirstRequest(socket, rewriter, (decided, out) => (decided === 'native' ? native(out) : rewrite(rewriter, out)));
  });
  return { port: mux.port, connections: () => ({ ...counts }), stopAccepting: () => mux.stopAccepting(), close: () => mux.close() };
}
