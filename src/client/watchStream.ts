// One watch on its own gRPC stream, read one response at a time: the stream is
// paused while the caller is busy, so a slow consumer never buffers without bound
// (gRPC flow control pushes back on the server, which falls behind and catches up
// from history, as etcd does).
import * as grpc from '#grpc-js';
import type { WatchClient } from './connection.js';
import { callError, EtcdClientError } from './errors.js';
import { wireNum } from './ids.js';
import { kvFromWire, type KeyValue, type Wire, type WireWatchResponse } from './types.js';

export interface WatchOptions {
  /** exclusive end, as for Range ("\0": every key ≥ key) */
  rangeEnd: Buffer;
  /** first revision to deliver (0: from now) */
  startRevision: number;
}

export interface WatchEvent {
  type: 'PUT' | 'DELETE';
  kv: KeyValue;
}

/** One WatchResponse: events of one or more whole revisions, or a progress notice. */
export interface WatchBatch {
  /** the store's revision when the server sent this response */
  headerRevision: number;
  events: WatchEvent[];
  /** set when the server cancelled the watch (e.g. its start revision was compacted) */
  canceled?: { compactRevision: number; reason: string };
}

type Waiter = { resolve: (b: WatchBatch | undefined) => void; reject: (e: Error) => void };

export class WatchStream {
  private readonly queue: WatchBatch[] = [];
  private waiter?: Waiter;
  private failure?: Error;
  private ended = false;
  private cancelledByUs = false;
  private createdSeen = false;
  private onCreated?: () => void;

  private constructor(
    private readonly call: grpc.ClientDuplexStream<Wire, WireWatchResponse>,
    private readonly endpoint: string,
  ) {
    call.on('data', (res: WireWatchResponse) => this.onResponse(res));
    call.on('error', (err: Error) => this.finish(this.cancelledByUs ? undefined : callError(err, endpoint, 0)));
    call.on('end', () => this.finish(undefined));
  }

  /**
   * Opens the stream and waits (up to `createTimeoutMs`) for the server to confirm
   * the watch; a watch refused at creation (compacted start revision) comes back
   * as a stream whose first batch is `canceled`.
   */
  static async open(
    client: WatchClient,
    endpoint: string,
    key: Buffer,
    opts: WatchOptions,
    createTimeoutMs: number,
    md = new grpc.Metadata(),
  ): Promise<WatchStream> {
    const call = client.Watch(md) as grpc.ClientDuplexStream<Wire, WireWatchResponse>;
    const ws = new WatchStream(call, endpoint);
    call.write({ create_request: { key, range_end: opts.rangeEnd, start_revision: String(opts.startRevision), progress_notify: false } });
    await ws.created(createTimeoutMs);
    return ws;
  }

  private created(timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.close();
        reject(new EtcdClientError(`${this.endpoint}: watch not confirmed within ${timeoutMs}ms; check the endpoint`, 'timeout', this.endpoint));
      }, timeoutMs);
      this.onCreated = () => {
        clearTimeout(timer);
        resolve();
      };
      if (this.createdSeen || this.failure || this.ended) this.onCreated();
    });
  }

  private onResponse(res: WireWatchResponse): void {
    if (res.created) {
      this.createdSeen = true;
      this.onCreated?.();
      // etcd 3.4 answers a create for a compacted revision with created + canceled in one response.
      if (!res.canceled) return;
    }
    const batch: WatchBatch = {
      headerRevision: wireNum(res.header?.revision),
      events: (res.events ?? []).map((e) => ({ type: e.type === 'DELETE' ? 'DELETE' : 'PUT', kv: kvFromWire(e.kv ?? {}) })),
    };
    if (res.canceled) batch.canceled = { compactRevision: wireNum(res.compact_revision), reason: String(res.cancel_reason ?? '') };
    this.push(batch);
  }

  private push(batch: WatchBatch): void {
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = undefined;
      w.resolve(batch);
      return;
    }
    this.queue.push(batch);
    // Backpressure: stop reading until the caller has taken what is queued.
    if (this.queue.length >= 16) this.call.pause();
  }

  private finish(err: Error | undefined): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = err;
    this.onCreated?.();
    const w = this.waiter;
    this.waiter = undefined;
    if (w) {
      if (err) w.reject(err);
      else w.resolve(undefined);
    }
  }

  /** Ask the server for a progress notice (a batch with no events at its current revision). */
  requestProgress(): void {
    if (!this.ended) this.call.write({ progress_request: {} });
  }

  /**
   * The next response, or undefined when none came within `timeoutMs` (the stream
   * is still open) or the stream ended. Throws if the stream failed.
   */
  next(timeoutMs: number): Promise<WatchBatch | undefined> {
    const queued = this.queue.shift();
    if (queued) {
      if (this.queue.length < 4) this.call.resume();
      return Promise.resolve(queued);
    }
    if (this.failure) return Promise.reject(this.failure);
    if (this.ended) return Promise.resolve(undefined);
    this.call.resume();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        resolve(undefined);
      }, timeoutMs);
      this.waiter = {
        resolve: (b) => (clearTimeout(timer), resolve(b)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      };
    });
  }

  get isOpen(): boolean {
    return !this.ended;
  }

  close(): void {
    this.cancelledByUs = true;
    this.call.cancel();
    this.finish(undefined);
  }
}
