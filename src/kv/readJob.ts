// Long reads (snapshots, hashes of a large store) and defragment run in a
// worker thread on its own SQLite connection: WAL gives a consistent view while
// the member's connection keeps applying (not during defragment, which writes),
// and the event loop (Raft ticks, heartbeats) is not blocked for the time they
// take. (Checkpoints run on the store's own thread, their fsyncs in libuv's pool:
// KvStore.checkpointAsync.)
//
// One worker per store, started at its first job and kept while jobs come: it
// keeps its connection open and runs the jobs one at a time, in the order given
// (a new worker per job cost every member a thread, an isolate and a connection
// every second). A worker with no job in flight and no read held for `idleMs`
// is ended (an idle member keeps ~8 MiB less) and the next job starts a new one.
// A worker that dies fails the jobs it held and is replaced at the next job.
// close() closes the worker's connection before it returns (see there).

import type { Worker } from 'node:worker_threads';
import { kvErrorOf, type KvErrorKind } from './errors.js';
import type { HashKvResult } from './types.js';
import type { KvSnapshotInfo } from './types.js';
import type { HeldSnapshot } from './snapshotHold.js';

export type ReadJob =
  | { kind: 'snapshot'; dbPath: string; dest: string }
  | { kind: 'hashKv'; dbPath: string; revision: number }
  | { kind: 'hash'; dbPath: string }
  /** VACUUM on the worker's connection, which holds the write lock meanwhile (KvStore.defragment). */
  | { kind: 'defragment'; dbPath: string }
  /** A read held open for streaming the file (snapshotHold.ts), until 'release'. */
  | { kind: 'hold'; dbPath: string }
  | { kind: 'release'; dbPath: string; id: number };

export type ReadJobResult = KvSnapshotInfo | HashKvResult | HeldSnapshot | number | null;
export type ReadJobReply = { result: ReadJobResult } | { kvError: KvErrorKind } | { error: string; durabilityLost?: true };

/** A job's failure after which the store's file may not hold what SQLite reads back (a failed fsync): the store is lost. */
export class DurabilityLostError extends Error {}

/** Messages to the worker: a job, or close (its connection, then itself). */
export type ToReadWorker = { id: number; job: ReadJob } | { close: true };
export type FromReadWorker = { id: number; reply: ReadJobReply };

export interface ReadWorkerData {
  /** Int32Array over it: [0] becomes 1 once the worker's connection is closed. */
  closed: SharedArrayBuffer;
}

/** How long close() waits for the job in flight (a snapshot of a large store takes seconds). */
const CLOSE_WAIT_MS = 120_000;
/** How long a worker with nothing to do is kept. */
export const READ_WORKER_IDLE_MS = 10_000;
/** How long ending an idle worker may wait for its connection to close (it has no job: milliseconds). */
const REAP_WAIT_MS = 10_000;

interface Pending {
  kind: ReadJob['kind'];
  resolve(r: ReadJobResult): void;
  reject(e: Error): void;
}

export class ReadJobRunner {
  private worker: Worker | undefined;
  private closedFlag = new Int32Array(new SharedArrayBuffer(4));
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  /** Reads the worker holds ('hold' replied, no 'release' given yet): it is not ended while one is. */
  private readonly held = new Set<number>();
  private idleTimer: NodeJS.Timeout | undefined;

  /** `idleMs`: how long a worker with nothing to do is kept (0: kept until close). */
  constructor(private readonly idleMs = READ_WORKER_IDLE_MS) {}

  /** Whether a worker is running now (tests: it is ended when idle). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  /** Runs the job after those given before it. The store's errors come back as the shared constants (kvErrorOf). */
  run(job: ReadJob): Promise<ReadJobResult> {
    if (this.closed) return Promise.reject(new Error(`kv: store ${job.dbPath} is closed`));
    this.stopIdleTimer();
    const worker = this.worker ?? this.start();
    const id = this.nextId++;
    if (job.kind === 'release') this.held.delete(job.id);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { kind: job.kind, resolve, reject });
      // Jobs in flight keep the process alive, as they always did; an idle worker does not.
      worker.ref();
      worker.postMessage({ id, job } satisfies ToReadWorker);
    });
  }

  /**
   * Whether the worker that runs jobs now keeps running (and the runner is open):
   * call it right after a 'hold' resolves, and it says later whether that read is
   * still held. A worker that died or was closed dropped its reads.
   */
  holding(): () => boolean {
    const worker = this.worker;
    return () => !this.closed && worker !== undefined && this.worker === worker;
  }

  /**
   * Lets the worker finish the jobs it was given, closes its connection and ends it.
   * Blocks until that connection is closed: the caller may replace the database file
   * next (a leader's snapshot), and a connection closing after that would take itself
   * for the file's last one and delete the new file's WAL by name.
   */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stopIdleTimer();
    const worker = this.worker;
    if (!worker) return;
    this.end(worker, CLOSE_WAIT_MS);
  }

  /** Asks the worker to close its connection and end, and waits (blocking) until the connection is closed. */
  private end(worker: Worker, waitMs: number): void {
    worker.postMessage({ close: true } satisfies ToReadWorker);
    if (Atomics.wait(this.closedFlag, 0, 0, waitMs) === 'timed-out') void worker.terminate();
    // Otherwise it ends by itself once its replies are out (terminating now could drop them).
  }

  private stopIdleTimer(): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  /**
   * Nothing in flight and no read held: end the worker after idleMs unless a job
   * comes first. Its connection is closed before the timer's callback returns, as
   * in close(): the member's own connection is the file's last one whenever it
   * is replaced.
   */
  private armIdleTimer(worker: Worker): void {
    if (this.idleMs <= 0 || this.closed || this.pending.size > 0 || this.held.size > 0) return;
    this.stopIdleTimer();
    this.idleTimer = setTimeout(() => {
      this.idleTimer = undefined;
      if (this.worker !== worker || this.closed || this.pending.size > 0 || this.held.size > 0) return;
      this.worker = undefined;
      this.end(worker, REAP_WAIT_MS);
    }, this.idleMs);
    this.idleTimer.unref();
  }

  private start(): Worker {
    this.closedFlag = new Int32Array(new SharedArrayBuffer(4));
    // worker_threads is loaded here, not at start-up: an idle member may never start a worker (0.4 MiB).
    const worker = new (process.getBuiltinModule('node:worker_threads').Worker)(new URL('./readWorker.js', import.meta.url), {
      workerData: { closed: this.closedFlag.buffer } satisfies ReadWorkerData,
    });
    this.worker = worker;
    worker.on('message', (m: FromReadWorker) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.pending.delete(m.id);
      if (this.pending.size === 0) worker.unref();
      const r = m.reply;
      if ('result' in r && p.kind === 'hold') this.held.add((r.result as HeldSnapshot).id);
      if ('result' in r) p.resolve(r.result);
      else if ('kvError' in r) p.reject(kvErrorOf(r.kvError));
      else p.reject(r.durabilityLost ? new DurabilityLostError(r.error) : new Error(r.error));
      this.armIdleTimer(worker);
    });
    worker.once('error', (err) => this.failAll(worker, () => err));
    worker.once('exit', (code) => this.failAll(worker, (p) => new Error(`kv ${p.kind} worker exited with code ${code} before reporting`)));
    return worker;
  }

  /** The worker died: every job it held fails, and the next job starts a new one. */
  private failAll(worker: Worker, error: (p: Pending) => Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    this.held.clear();
    this.stopIdleTimer();
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(error(p));
  }
}
