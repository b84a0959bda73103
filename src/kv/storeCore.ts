// What the parts of a KvStore share (kvStore.ts): its one connection, the revision
// state as of the last apply, the transaction its writes run in, and the worker
// thread that runs its long reads on a connection of its own.

import type Database from 'better-sqlite3';
import { ClusterMeta } from './clusterMeta.js';
import { HeldTransaction, readStoreState, type StoreState } from './heldTransaction.js';
import { ReadJobRunner, type ReadJob } from './readJob.js';
import { RevisionTables } from './revisionTables.js';

export interface StoreCoreOptions {
  commitDelayMs: number;
  readWorkerIdleMs: number | undefined;
  /** Told once when the store is lost. */
  onLost(e: Error): void;
  /** Told how long each commit of held applies took, in seconds (a member's metrics). */
  onCommit?(seconds: number): void;
  /** Runs each commit of held applies. */
  aroundCommit?(commit: () => void): void;
  /** Why writes must wait now, if they must. */
  writesBlocked(): string | undefined;
}

export class StoreCore {
  closed = false;
  readonly tables: RevisionTables;
  readonly meta: ClusterMeta;
  readonly state: StoreState;
  readonly tx: HeldTransaction;
  /** Checkpoints, hashes and snapshots: one worker thread with its own connection, started at the first, ended when idle. */
  readonly jobs: ReadJobRunner;

  constructor(
    readonly db: Database.Database,
    readonly path: string,
    opts: StoreCoreOptions,
  ) {
    this.tables = new RevisionTables(db);
    this.meta = new ClusterMeta(db);
    this.state = readStoreState(db);
    this.tx = new HeldTransaction(db, path, this.state, this.meta, opts);
    this.jobs = new ReadJobRunner(opts.readWorkerIdleMs);
  }

  /** An in-memory database: private to this connection, so no worker, snapshot or fsync. */
  get inMemory(): boolean {
    return this.path === ':memory:';
  }

  /** Throws once the store is closed, or lost (a failed commit). */
  assertOpen(): void {
    if (this.closed) throw new Error(`kv: store ${this.path} is closed`);
    if (this.tx.failure) throw this.tx.failure;
  }

  /** A job for the worker, whose own connection sees only committed applies: commit the held ones first. */
  job(job: ReadJob): Promise<unknown> {
    this.assertOpen();
    this.tx.commit();
    return this.jobs.run(job);
  }
}
