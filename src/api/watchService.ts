// etcd's Watch service (etcdserverpb.Watch, one bidirectional stream per client
// connection with many watches on it): the wire side. It turns stream messages into
// calls on a WatchSession the member opens (src/server/watchHub.ts), and writes the
// session's responses back, splitting large ones when the watch asked for fragments,
// and counting the bytes gRPC has not sent yet so the member can stop writing to a
// client that does not read (its watches then catch up from history, never buffered).
//
// Also the open-stream bookkeeping Watch and LeaseKeepAlive share: streams that sent
// `hasleader: true` (etcdctl and clientv3 do) are ended with "etcdserver: no leader"
// when the member has had no leader for three election timeouts, as etcd does, so the
// client moves to another member; and every stream is ended when the member stops.
import type { GrpcServer } from '../net/grpcServer.js';
import type { StreamingCall } from '../net/serverCalls.js';
import { ErrLearnerNotSupported, ErrNoLeader, ErrStopped } from './errors.js';
import { EventType, type KeyValue } from '../kv/types.js';
import { kvToWire, type WireEnum, type WireInt } from './convert.js';
import { serviceDefinition } from '../proto/load.js';
import { toStatus, type Header } from './services.js';
import { callerOf, type Caller } from './caller.js';
import { ErrInvalidAuthToken, ErrAuthOldRevision, ErrPermissionDenied, ErrUserEmpty } from './errors.js';
import { toEtcdError } from './errors.js';

/** A WatchCreateRequest, typed. */
export interface WatchCreate {
  key: Buffer;
  /** Empty: the single key; "\0": every key >= key; otherwise [key, rangeEnd). */
  rangeEnd: Buffer;
  /** 0: from the next revision. */
  startRevision: number;
  progressNotify: boolean;
  noPut: boolean;
  noDelete: boolean;
  prevKv: boolean;
  /** 0: the server picks one. */
  watchId: bigint;
  fragment: boolean;
}

export interface WatchEventOut {
  type: EventType;
  kv: KeyValue;
  prevKv?: KeyValue;
}

export interface WatchResponseOut {
  watchId: bigint;
  /** header.revision */
  revision: number;
  created?: boolean;
  canceled?: boolean;
  compactRevision?: number;
  cancelReason?: string;
  events: WatchEventOut[];
}

/** Where a session writes. */
export interface WatchSink {
  /** Writes a response; with `fragment`, one above the size limit goes out in pieces. */
  send(r: WatchResponseOut, fragment: boolean): void;
  /** False while more than the stream's budget of bytes waits to be sent to the client. */
  writable(): boolean;
  /** Bytes written to the stream that gRPC has not handed to the connection yet. */
  pendingBytes(): number;
}

/** One client stream's watches, kept by the member. */
export interface WatchSession {
  create(r: WatchCreate): void;
  cancel(watchId: bigint): void;
  progress(): void;
  /** The sink has room again (after writable() was false). */
  drained(): void;
  close(): void;
}

export interface WatchBackend {
  header(revision: number): Header;
  currentRevision(): number;
  isLearner(): boolean;
  /** Why the caller may not watch [key, rangeEnd) (no read permission, a bad token), or undefined. */
  watchRefusal(c: Caller, key: Uint8Array, rangeEnd: Uint8Array): Error | undefined;
  openWatchSession(sink: WatchSink): WatchSession;
}

/** What the open-stream bookkeeping needs from the member. */
export interface StreamHost {
  /** Milliseconds the member has been without a leader (0 while it has one). */
  leaderlessMs(): number;
  /** How long without a leader before `hasleader` streams are ended (etcd: 3 election timeouts). */
  readonly noLeaderCancelMs: number;
}

/** etcd's default --max-request-bytes: a fragmenting watch splits responses above this. */
export const MAX_RESPONSE_BYTES = 1.5 * 1024 * 1024;
/** Stop writing a stream's events once this many bytes wait to be sent... */
export const STREAM_HIGH_WATER = 1024 * 1024;
/** ...and start again when the client has read it down to this. */
export const STREAM_LOW_WATER = 256 * 1024;

type AnyStream = StreamingCall;

/** Open Watch and LeaseKeepAlive streams: ended on no leader (when asked) and at stop. */
export class OpenStreams {
  private readonly streams = new Map<AnyStream, { requireLeader: boolean }>();
  private readonly timer: NodeJS.Timeout;
  private stopped = false;

  constructor(private readonly host: StreamHost) {
    this.timer = setInterval(() => this.checkLeader(), Math.max(100, Math.min(1000, host.noLeaderCancelMs / 3)));
    this.timer.unref();
  }

  /** Tracks a new stream; false (and the stream ended) when it must not start. */
  add(call: AnyStream): boolean {
    if (this.stopped) {
      endWith(call, ErrStopped);
      return false;
    }
    const requireLeader = call.metadata.get('hasleader')[0] === 'true';
    if (requireLeader && this.host.leaderlessMs() > 0) {
      endWith(call, ErrNoLeader);
      return false;
    }
    this.streams.set(call, { requireLeader });
    const forget = () => this.streams.delete(call);
    call.on('close', forget);
    call.on('finish', forget);
    call.on('error', forget);
    call.on('cancelled', forget);
    return true;
  }

  get size(): number {
    return this.streams.size;
  }

  private checkLeader(): void {
    if (this.host.leaderlessMs() < this.host.noLeaderCancelMs) return;
    for (const [call, s] of this.streams) {
      if (!s.requireLeader) continue;
      this.streams.delete(call);
      endWith(call, ErrNoLeader);
    }
  }

  /** Ends every stream (the member is stopping) so the gRPC server can shut down. */
  closeAll(): void {
    this.stopped = true;
    clearInterval(this.timer);
    for (const call of [...this.streams.keys()]) endWith(call, ErrStopped);
    this.streams.clear();
  }
}

/** Ends a server stream with an etcd error as its status. */
export function endWith(call: AnyStream, e: unknown): void {
  const st = toStatus(e);
  try {
    call.emit('error', Object.assign(new Error(st.details), { code: st.code, details: st.details }));
  } catch {
    // already ended
  }
}

/* eslint-disable @typescript-eslint/no-explicit-any */
/** A response as protobufjs takes it. */
type Wire = Record<string, any>;

// A WatchRequest as grpc-js hands it over (oneofs: request_union names the field set).
interface WireWatchCreateRequest {
  key?: Uint8Array;
  range_end?: Uint8Array;
  start_revision?: WireInt;
  progress_notify?: boolean;
  filters?: WireEnum[];
  prev_kv?: boolean;
  watch_id?: WireInt;
  fragment?: boolean;
}
interface WireWatchRequest {
  request_union?: string;
  create_request?: WireWatchCreateRequest | null;
  cancel_request?: { watch_id?: WireInt } | null;
  progress_request?: object | null;
}

const num = (v: unknown): number => (v === undefined || v === null || v === '' ? 0 : Number(v));
const big = (v: unknown): bigint => (v === undefined || v === null || v === '' ? 0n : BigInt(v as string));
const buf = (v: unknown): Buffer => (v ? Buffer.from(v as Uint8Array) : Buffer.alloc(0));

export function watchCreateFromWire(w: WireWatchCreateRequest): WatchCreate {
  const filters: unknown[] = w.filters ?? [];
  return {
    key: buf(w.key),
    rangeEnd: buf(w.range_end),
    startRevision: num(w.start_revision),
    progressNotify: !!w.progress_notify,
    noPut: filters.some((f) => f === 'NOPUT' || f === 0),
    noDelete: filters.some((f) => f === 'NODELETE' || f === 1),
    prevKv: !!w.prev_kv,
    watchId: big(w.watch_id),
    fragment: !!w.fragment,
  };
}

const KV_OVERHEAD = 48;
const kvBytes = (kv: KeyValue) => kv.key.length + kv.value.length + KV_OVERHEAD;
const eventBytes = (e: WatchEventOut) => 8 + kvBytes(e.kv) + (e.prevKv ? kvBytes(e.prevKv) : 0);

/** About the encoded size of a response (for fragmenting and for the stream's budget). */
export function responseBytes(r: WatchResponseOut): number {
  let n = 64 + (r.cancelReason?.length ?? 0);
  for (const e of r.events) n += eventBytes(e);
  return n;
}

/**
 * etcd's sendFragments: a response under the limit, or with fewer than two events,
 * goes whole; otherwise events are packed into pieces of at most `max` bytes (at
 * least one event each), every piece but the last marked `fragment`.
 */
export function fragments(r: WatchResponseOut, max = MAX_RESPONSE_BYTES): Array<WatchResponseOut & { fragment: boolean }> {
  if (r.events.length < 2 || responseBytes(r) < max) return [{ ...r, fragment: false }];
  const out: Array<WatchResponseOut & { fragment: boolean }> = [];
  let cur: WatchEventOut[] = [];
  let size = 64;
  for (const e of r.events) {
    const n = eventBytes(e);
    if (cur.length > 0 && size + n >= max) {
      out.push({ ...r, events: cur, fragment: true });
      cur = [];
      size = 64;
    }
    cur.push(e);
    size += n;
  }
  out.push({ ...r, events: cur, fragment: false });
  return out;
}

const EVENT_TYPES = ['PUT', 'DELETE'];

function responseToWire(r: WatchResponseOut & { fragment?: boolean }, header: Header): Wire {
  return {
    header,
    watch_id: r.watchId.toString(),
    created: !!r.created,
    canceled: !!r.canceled,
    compact_revision: String(r.compactRevision ?? 0),
    cancel_reason: r.cancelReason ?? '',
    fragment: !!r.fragment,
    events: r.events.map((e) => ({ type: EVENT_TYPES[e.type], kv: kvToWire(e.kv), prev_kv: e.prevKv ? kvToWire(e.prevKv) : null })),
  };
}

/** A gRPC watch stream as a WatchSink, with its unsent bytes counted. */
class StreamSink implements WatchSink {
  private pending = 0;
  private blocked = false;
  session: WatchSession | undefined;
  closed = false;

  constructor(
    private readonly call: AnyStream,
    private readonly header: (rev: number) => Header,
  ) {}

  send(r: WatchResponseOut, fragment: boolean): void {
    if (this.closed) return;
    for (const part of fragment ? fragments(r) : [{ ...r, fragment: false }]) {
      const size = responseBytes(part);
      this.pending += size;
      this.call.write(responseToWire(part, this.header(part.revision)), () => {
        this.pending -= size;
        if (this.blocked && this.pending <= STREAM_LOW_WATER && !this.closed) {
          this.blocked = false;
          this.session?.drained();
        }
      });
    }
    if (this.pending > STREAM_HIGH_WATER) this.blocked = true;
  }

  writable(): boolean {
    return !this.blocked && !this.closed;
  }

  pendingBytes(): number {
    return this.closed ? 0 : this.pending;
  }
}

/**
 * etcd 3.4's answer to a watch the user may not make: created and canceled at once,
 * watch ID -1, the reason the gRPC error's whole text ("rpc error: code = PermissionDenied
 * desc = etcdserver: permission denied"); the stream stays open.
 */
function refusedWatch(err: Error, revision: number): WatchResponseOut {
  const etcd = toEtcdError(err);
  const known = [ErrInvalidAuthToken, ErrAuthOldRevision, ErrUserEmpty].find((x) => etcd && x.is(etcd)) ?? ErrPermissionDenied;
  return {
    watchId: -1n,
    revision,
    created: true,
    canceled: true,
    cancelReason: `rpc error: code = ${GRPC_CODE_NAMES[known.code]} desc = ${known.message}`,
    events: [],
  };
}

/** grpc-go's names of the codes a refused watch can carry. */
const GRPC_CODE_NAMES: Partial<Record<number, string>> = { 3: 'InvalidArgument', 7: 'PermissionDenied', 16: 'Unauthenticated' };

export function registerWatchService(server: GrpcServer, b: WatchBackend, streams: OpenStreams): void {
  server.addService(serviceDefinition('etcdserverpb.Watch'), {
    Watch: (call: AnyStream) => {
      if (b.isLearner()) {
        endWith(call, ErrLearnerNotSupported);
        return;
      }
      if (!streams.add(call)) return;
      const sink = new StreamSink(call, (rev) => b.header(rev));
      const caller = callerOf(call);
      const session = b.openWatchSession(sink);
      sink.session = session;
      const close = () => {
        if (sink.closed) return;
        sink.closed = true;
        session.close();
      };
      call.on('data', (req: WireWatchRequest) => {
        if (sink.closed) return;
        try {
          const kind =
            req.request_union ??
            (req.create_request ? 'create_request' : req.cancel_request ? 'cancel_request' : req.progress_request ? 'progress_request' : undefined);
          if (kind === 'create_request' && req.create_request) {
            const create = watchCreateFromWire(req.create_request);
            const refused = b.watchRefusal(caller, create.key, create.rangeEnd);
            if (refused) sink.send(refusedWatch(refused, b.currentRevision()), false);
            else session.create(create);
          } else if (kind === 'cancel_request' && req.cancel_request) session.cancel(big(req.cancel_request.watch_id));
          else if (kind === 'progress_request') session.progress();
          // Anything else is ignored, as etcd does.
        } catch (e) {
          close();
          endWith(call, e);
        }
      });
      call.on('end', () => {
        close();
        call.end();
      });
      call.on('error', close);
      call.on('cancelled', close);
      call.on('close', close);
    },
  });
}
