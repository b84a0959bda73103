// A store's maintenance: its hashes (etcd's HashKV and Maintenance.Hash), its size,
// and defragment. The long ones run in the worker thread (readJob.ts), off the
// event loop that keeps Raft ticking.

import type { Checkpoints } from './checkpoints.js';
import { hashKv, hashStore } from './kvHash.js';
import { DurabilityLostError, type ReadJob } from './readJob.js';
import type { StoreCore } from './storeCore.js';
import type { HashKvResult } from './types.js';

/** How long a HashKV result answers the same question again without a scan (hashKvAsync). */
const HASHKV_REUSE_MS = 30_000;

export class Maintenance {
  /** The defragment in the worker, while it runs. */
  defragmenting: Promise<void> | undefined;
  /** The last HashKV scan's result, for an ask at the same revision soon after (hashKvAsync). */
  private lastHashKv: { revision: number; compacted: number; hash: number; at: number } | undefined;
  private readonly pageBytes: number;

  constructor(
    private readonly core: StoreCore,
    private readonly checkpoints: Checkpoints,
  ) {
    this.pageBytes = core.db.pragma('page_size', { simple: true }) as number;
  }

  /** See KvStore.hashKv. */
  hashKv(revision: number): HashKvResult {
    return hashKv(this.core.tables, this.core.state, revision);
  }

  /** See KvStore.hash. */
  hash(): number {
    return hashStore(this.core.db, this.core.tables, this.core.state);
  }

  /** See KvStore.hashKvAsync. */
  async hashKvAsync(revision: number): Promise<HashKvResult> {
    const { state } = this.core;
    // The hash at a revision cannot change until a compaction (which moves
    // `compacted`, part of the key): writes only add later revisions, and an
    // installed snapshot is a new store. So the same question asked again soon
    // (a recovery's checks after each re-add, HASHKV_REUSE_MS apart or less, ask
    // every member at the unchanged revision) is answered without a scan; later
    // asks scan again, so a periodic check still reads the disk.
    const asked = revision > 0 ? revision : state.current;
    const last = this.lastHashKv;
    if (last && last.revision === asked && last.compacted === state.compacted && Date.now() - last.at < HASHKV_REUSE_MS) {
      return { hash: last.hash, revision: state.current, compactRevision: state.compacted };
    }
    const r = (await this.inWorker({ kind: 'hashKv', dbPath: this.core.path, revision })) as HashKvResult;
    // 0 asks for the worker's current revision: the one it hashed.
    this.lastHashKv = { revision: revision > 0 ? revision : r.revision, compacted: r.compactRevision, hash: r.hash, at: Date.now() };
    return r;
  }

  /** See KvStore.hashAsync. */
  hashAsync(): Promise<number> {
    return this.inWorker({ kind: 'hash', dbPath: this.core.path }) as Promise<number>;
  }

  /** Bytes the database file takes (etcd's dbSize), as of the last commit. */
  dbSize(): number {
    return this.core.tx.pages * this.pageBytes;
  }

  /** Bytes in use: the file minus its free pages (etcd's dbSizeInUse). */
  dbSizeInUse(): number {
    const free = this.core.db.pragma('freelist_count', { simple: true }) as number;
    return (this.core.tx.pageCount() - free) * this.pageBytes;
  }

  /** See KvStore.defragment. */
  defragment(): Promise<void> {
    const { core } = this;
    core.assertOpen();
    if (this.defragmenting) return this.defragmenting;
    core.tx.commit();
    const done = () => {
      this.defragmenting = undefined;
      if (core.closed) return;
      // VACUUM changes no rows: the next checkpoint must not take the store for unchanged.
      this.checkpoints.forget();
      core.tx.pages = core.tx.pageCount();
    };
    const run = core.inMemory
      ? Promise.resolve().then(() => void core.db.exec('VACUUM'))
      : core.jobs.run({ kind: 'defragment', dbPath: core.path }).then(
          () => undefined,
          (e: Error) => {
            throw e instanceof DurabilityLostError ? core.tx.lost(e.message) : e;
          },
        );
    this.defragmenting = run.finally(done);
    return this.defragmenting;
  }

  private inWorker(job: ReadJob): Promise<unknown> {
    this.core.assertOpen();
    // A worker opens its own connection; an in-memory database is private to ours.
    if (this.core.inMemory) {
      return Promise.resolve().then(() => (job.kind === 'hashKv' ? this.hashKv(job.revision) : this.hash()));
    }
    return this.core.job(job);
  }
}
