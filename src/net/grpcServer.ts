// A member's gRPC server, on node:http2 without grpc-js: the services'
// handlers by path, and each call served from its HTTP/2 stream
// (serverCalls.ts). grpc-js's server built, per call, an intercepting call, a
// Metadata object, a stream decoder, a deadline timer and a dozen closures, and
// the package with its server and client was about 4 MiB of an idle member.
// Connections come from our own listeners (authorityListener.ts), which hand
// each accepted socket (or the :authority rewrite over it) to injectConnection.
//
// As grpc-js's server: unknown methods are UNIMPLEMENTED, a request message over
// the limit RESOURCE_EXHAUSTED, gzip and deflate requests are taken, the session
// memory is not bounded (Node degrades badly at its bound), and shutdown lets
// calls in flight finish (tryShutdown) or cuts them (forceShutdown).
import http2 from 'node:http2';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import type { ServiceDefinition } from '../proto/load.js';
import { ENCODINGS } from './grpcMessages.js';
import { GrpcCode } from '../net/grpcCode.js';
import { respondStatus, serveDuplex, serveServerStream, serveUnary, type CallKind, type Handler, type Reply } from './serverCalls.js';

/** grpc-js's default for grpc.max_receive_message_length. */
const DEFAULT_MAX_RECEIVE = 4 << 20;

const kindOf = (requestStream: boolean, responseStream: boolean): CallKind =>
  requestStream ? (responseStream ? 'bidi' : 'clientStream') : responseStream ? 'serverStream' : 'unary';

/** A service's handlers by method name (e.g. `Range`), each taking the call and, where it answers once, a callback. */
export type ServiceHandlers = Record<string, (call: never, callback: Reply) => void>;

export class GrpcServer {
  private readonly h2: http2.Http2Server;
  private readonly handlers = new Map<string, Handler>();
  private readonly sessions = new Set<http2.ServerHttp2Session>();
  private readonly maxReceive: number;
  private served = 0;

  constructor(opts: { maxReceiveMessageLength?: number } = {}) {
    this.maxReceive = opts.maxReceiveMessageLength ?? DEFAULT_MAX_RECEIVE;
    this.h2 = http2.createServer({ maxSendHeaderBlockLength: Number.MAX_SAFE_INTEGER, maxSessionMemory: Number.MAX_SAFE_INTEGER });
    this.h2.setTimeout(0);
    this.h2.on('session', (session: http2.ServerHttp2Session) => {
      this.sessions.add(session);
      session.once('close', () => this.sessions.delete(session));
    });
    // A broken connection is reported through its streams ('close'); nothing else to do.
    this.h2.on('sessionError', () => {});
    this.h2.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders) => this.serve(stream, headers));
  }

  /** Serves `service`'s methods with `impl`'s handlers of the same names (methods without one are UNIMPLEMENTED). */
  addService(service: ServiceDefinition, impl: ServiceHandlers): void {
    for (const [name, m] of Object.entries(service)) {
      const func = impl[name];
      if (!func) continue;
      this.handlers.set(m.path, {
        type: kindOf(m.requestStream, m.responseStream),
        func,
        serialize: m.responseSerialize as Handler['serialize'],
        deserialize: m.requestDeserialize,
      });
    }
  }

  /** Serves the HTTP/2 connection on `conn` (a socket, or the :authority rewrite's stream over one). */
  injectConnection(conn: net.Socket | Duplex): void {
    this.h2.emit('connection', conn);
  }

  /** The session a socket handed to injectConnection became: listeners attached to it run before ours. */
  onSession(listener: (session: http2.ServerHttp2Session) => void): void {
    this.h2.prependListener('session', listener);
  }

  /** Calls served so far. */
  calls(): number {
    return this.served;
  }

  /** Ends every connection once its calls in flight are done; `done` when all are. */
  tryShutdown(done: () => void): void {
    const open = [...this.sessions];
    if (open.length === 0) return void setImmediate(done);
    let left = open.length;
    for (const s of open) {
      s.once('close', () => --left === 0 && done());
      s.close();
    }
  }

  /** Cuts every connection now. */
  forceShutdown(): void {
    for (const s of this.sessions) s.destroy();
    this.sessions.clear();
  }

  private serve(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void {
    // A reset stream ends in 'close', which the call handles; an 'error' left unheard would throw.
    stream.on('error', () => {});
    if (!String(headers['content-type'] ?? '').startsWith('application/grpc')) {
      try {
        stream.respond({ ':status': 415 }, { endStream: true });
      } catch {
        // gone already
      }
      return;
    }
    const path = String(headers[':path'] ?? '');
    const h = this.handlers.get(path);
    if (!h) return respondStatus(stream, GrpcCode.Unimplemented, `The server does not implement the method ${path}`);
    const encoding = headers['grpc-encoding'];
    if (encoding !== undefined && !ENCODINGS.includes(String(encoding))) {
      return respondStatus(stream, GrpcCode.Unimplemented, `Received message compressed with unsupported encoding "${String(encoding)}"`);
    }
    this.served++;
    if (h.type === 'unary') serveUnary(stream, headers, h, this.maxReceive);
    else if (h.type === 'serverStream') serveServerStream(stream, headers, h, this.maxReceive);
    else serveDuplex(stream, headers, h, this.maxReceive);
  }
}
