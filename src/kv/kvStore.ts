// The MVCC key-value store a member applies committed entries to (etcd's mvcc +
// applier), on one better-sqlite3 connection. Every apply records the entry's index
// and term in the same SQLite transaction as its effects, so after a crash an entry
// is either wholly applied (and the log is replayed from the next one) or not at all.
// A member holds that transaction open across batches (commitDelayMs), as etcd's
// backend batches its commits: the log, not kv.db, is what makes an apply durable.
//
// This class is the store's one surface; its parts live beside it: the held
// transaction (heldTransaction.ts), checkpoints (checkpoints.ts), hashes and
// defragment (maintenance.ts), snapshots (storeSnapshots.ts), migration imports and
// revision bumps (revisionImport.ts) and history reads (storeReads.ts). Snapshot
// files are checked and installed by the functions of snapshotFile.ts.

import type Database from 'better-sqlite3';
import type { ClusterMetaReader, ClusterMetaWriter } from './clusterMeta.js';
import { Checkpoints } from './checkpoints.js';
import { KvError } from './errors.js';
import { applyKvRequest, applyRange, type ApplyContext } from './kvApplier.js';
import { openKvDatabase } from './kvSchema.js';
import type { StoredRevision } from './keyValueCodec.js';
import { Maintenance } from './maintenance.js';
import { keyRange, ReadTxn, WriteTxn } from './mvccTxn.js';
import type { KeyRange } from './revisionTables.js';
import { RevisionImport } from './revisionImport.js';
import type { KvSnapshotSource } from './snapshotSource.js';
import { StoreCore } from './storeCore.js';
import { readHistory, readKeyAt } from './storeReads.js';
import { StoreSnapshots } from './storeSnapshots.js';
import type { CheckpointResult, HashKvResult, HistoryBatch, KvSnapshotInfo, KeyValue, KvApplyResult, KvRequest, RangeRequest, RangeResponse } from './types.js';

/** What an apply callback may change, all inside the entry's transaction. */
export interface KvWriter {
  /** Applies one KV request as etcd does; an etcd error is returned, with nothing changed. */
  request(req: KvRequest): KvApplyResult;
  /** Deletes the lease's keys (one revision, as etcd) and its record. */
  revokeLease(id: bigint): { found: boolean; deleted: number };
  readonly cluster: ClusterMetaWriter;
}

export interface KvOpenOptions {
  /**
   * true (default): SQLite checkpoints the WAL itself every 1000 pages, inside a
   * commit on this thread, fsyncs included (measured: p99 apply 4-9 ms, max ~50 ms).
   * false: nothing checkpoints until checkpointAsync() is called (p99 apply 0.2-0.5 ms);
   * the caller must then call it regularly or the WAL grows without bound.
   */
  autoCheckpoint?: boolean;
  /** Inspect only: nothing is created or written (datadir inspect, recover plan). */
  readonly?: boolean;
  /** false: the file was just installed from a snapshot checked in transfer; skip SQLite's quick_check (openKvDatabase). */
  quickCheck?: boolean;
  /**
   * 0 (default): every batch commits. Above 0: batches join one open transaction,
   * committed this many ms after its first, after MAX_HELD_BATCHES batches
   * (heldTransaction.ts), and before anything that reads the file from elsewhere
   * (checkpoint, hash, snapshot, makeDurable, defragment, close). A crash loses what
   * it held, so only a caller that replays its log from appliedIndex() at start may
   * set it (a member).
   */
  commitDelayMs?: number;
  knobs?: KvStoreKnobs;
}

/** Test hooks, passed at open. */
export interface KvStoreKnobs {
  /** After every checkpointAsync(): what it made durable, and whether it synced anything. */
  onCheckpoint?(r: CheckpointResult): void;
  /** How long the worker thread (hashes, snapshots, defragment) is kept with nothing to do (readJob.ts; 0: until close). */
  readWorkerIdleMs?: number;
}

export interface KvEntry {
  index: number;
  term: number;
  /** Absent for entries that carry nothing for the KV; their index is still recorded. */
  request?: KvRequest;
}

export class KvStore {
  /**
   * Told when a held transaction's commit fails (a full disk), whoever committed it: SQLite
   * has undone it, so reads would go back in time; stop. Told at once, also where the
   * throw reaches a caller that only logs it (a checkpoint, a hash); reads refuse from then on.
   */
  onCommitFailure: ((e: Error) => void) | undefined;
  /** Told how long each commit of held applies took, in seconds (a member's metrics). */
  onCommit: ((seconds: number) => void) | undefined;
  /** Runs each commit of held applies (a member marks it as the loop's 'commit' span). */
  aroundCommit: ((commit: () => void) => void) | undefined;
  private readonly core: StoreCore;
  private readonly ctx: ApplyContext;
  private readonly writer: KvWriter;
  private readonly checkpoints: Checkpoints;
  private readonly maintenance: Maintenance;
  private readonly snapshots: StoreSnapshots;
  private readonly imports: RevisionImport;

  private constructor(
    db: Database.Database,
    readonly path: string,
    commitDelayMs: number,
    knobs: KvStoreKnobs = {},
  ) {
    const core = new StoreCore(db, path, {
      commitDelayMs,
      readWorkerIdleMs: knobs.readWorkerIdleMs,
      onLost: (e) => this.onCommitFailure?.(e),
      onCommit: (seconds) => this.onCommit?.(seconds),
      aroundCommit: (commit) => (this.aroundCommit ? this.aroundCommit(commit) : commit()),
      writesBlocked: () => (this.maintenance.defragmenting ? `kv: ${path} is being defragmented; writes must wait until it is done` : undefined),
    });
    this.core = core;
    const defragmenting = () => this.maintenance.defragmenting;
    this.checkpoints = new Checkpoints(core, defragmenting, knobs);
    this.maintenance = new Maintenance(core, this.checkpoints);
    this.snapshots = new StoreSnapshots(core, this.checkpoints, defragmenting);
    this.imports = new RevisionImport(core);
    const leaseExists = db.prepare(`SELECT 1 FROM leases WHERE id = ?`).pluck();
    this.ctx = {
      tables: core.tables,
      revs: core.state,
      leaseExists: (id) => leaseExists.get(id) !== undefined,
      atomically: (fn) => core.tx.atomically(fn),
    };
    this.writer = {
      request: (req) => this.applyOne(req),
      revokeLease: (id) => this.revokeLease(id),
      cluster: core.meta,
    };
  }

  /** Opens or creates the KV database file (`:memory:` works, without snapshots). */
  static open(path: string, opts: KvOpenOptions = {}): KvStore {
    const db = openKvDatabase(path, { readonly: opts.readonly, quickCheck: opts.quickCheck });
    if (opts.autoCheckpoint === false) db.pragma('wal_autocheckpoint = 0');
    return new KvStore(db, path, opts.readonly ? 0 : (opts.commitDelayMs ?? 0), opts.knobs);
  }

  close(): void {
    const { core } = this;
    if (core.closed) return;
    try {
      if (!core.tx.failure) core.tx.commit();
    } finally {
      core.closed = true;
      this.checkpoints.close();
      this.snapshots.close();
      // The worker's connection first: ours, closed last, checkpoints the WAL and removes it, as it always did.
      core.jobs.close();
      core.db.close();
    }
  }

  // --- State

  appliedIndex(): number {
    return this.core.state.appliedIndex;
  }

  appliedTerm(): number {
    return this.core.state.appliedTerm;
  }

  currentRevision(): number {
    return this.core.state.current;
  }

  /** etcd's compactMainRev: -1 until the first compaction. */
  compactRevision(): number {
    return this.core.state.compacted;
  }

  /** After a failed commit its members, leases and alarms refuse, as every read does (ClusterMeta.lose). */
  get cluster(): ClusterMetaReader {
    return this.core.meta;
  }

  // --- Reads (serializable: the state as of the last apply)

  /** Throws KvError (compacted, future revision). */
  range(req: RangeRequest): RangeResponse {
    this.core.assertOpen();
    return applyRange(new ReadTxn(this.core.tables, this.core.state), req);
  }

  /** Keys attached to a lease, in key order (for lease revocation and TimeToLive). */
  leaseKeys(id: bigint): Buffer[] {
    return this.core.tables.keysWithLease(id);
  }

  /**
   * Watch history: puts and deletes in revisions [from, to] of the keys in `range`
   * (every key when null), in revision order. At most about `limits.rows` events or
   * `limits.bytes` of keys and values, but a revision is never split; the batch is
   * complete through `through`. Revisions below the compacted one may be missing:
   * check compactRevision() first.
   */
  history(range: KeyRange | null, from: number, to: number, limits: { rows: number; bytes: number }): HistoryBatch {
    this.core.assertOpen();
    return readHistory(this.core.tables, this.core.state, range, from, to, limits);
  }

  /** The key as of revision `rev` (a watch event's prev_kv): undefined if absent or compacted away. */
  keyAt(key: Buffer, rev: number): KeyValue | undefined {
    return readKeyAt(this.core.tables, this.core.state, key, rev);
  }

  // --- Hashes (maintenance.ts)

  /** etcd's HashKV at `revision` (0: current). Throws KvError (compacted, future revision). */
  hashKv(revision = 0): HashKvResult {
    return this.maintenance.hashKv(revision);
  }

  /** Hash of the whole store, applied index and term excluded (Maintenance.Hash). */
  hash(): number {
    return this.maintenance.hash();
  }

  /**
   * hashKv in a worker thread, off the event loop: on a large store hashing takes
   * seconds (about 2.6 s per million revisions). Reads one consistent state, at or
   * after the call; the same question asked again soon is answered without a scan.
   * Rejects with KvError (compacted, future revision).
   */
  hashKvAsync(revision = 0): Promise<HashKvResult> {
    return this.maintenance.hashKvAsync(revision);
  }

  /** hash() in a worker thread (see hashKvAsync). */
  hashAsync(): Promise<number> {
    return this.maintenance.hashAsync();
  }

  // --- Applying committed entries

  /**
   * Commits the transaction applies are held in (commitDelayMs); nothing when none
   * is open. A failed commit leaves the store unusable: every later call throws.
   */
  commit(): void {
    this.core.tx.commit();
  }

  /**
   * Applies entry `index` of `term`: runs fn and records the index and term, in one
   * transaction. If fn throws, nothing of the entry is kept and the error propagates
   * (the entry is not applied). Entries must come in increasing index order.
   */
  apply<T>(index: number, term: number, fn: (w: KvWriter) => T): T {
    this.core.assertOpen();
    return this.core.tx.entry(() => this.applyEntry(index, term, fn));
  }

  private applyEntry<T>(index: number, term: number, fn: (w: KvWriter) => T): T {
    const { state } = this.core;
    if (index <= state.appliedIndex) {
      throw new Error(`kv: entry ${index} is at or below the applied index ${state.appliedIndex}; applying it again would apply it twice`);
    }
    if (term < state.appliedTerm) {
      throw new Error(`kv: entry ${index} has term ${term}, below the applied term ${state.appliedTerm}`);
    }
    const result = fn(this.writer);
    state.appliedIndex = index;
    state.appliedTerm = term;
    return result;
  }

  applyRequest(index: number, term: number, req: KvRequest): KvApplyResult {
    return this.apply(index, term, (w) => w.request(req));
  }

  /** Applies consecutive entries in one transaction (one commit for the batch). */
  applyBatch(entries: readonly KvEntry[]): (KvApplyResult | undefined)[] {
    return this.batch(() => entries.map((e) => this.apply(e.index, e.term, (w) => (e.request ? w.request(e.request) : undefined))));
  }

  /** Runs fn, which may call apply() several times, as one transaction. */
  batch<T>(fn: () => T): T {
    this.core.assertOpen();
    return this.core.tx.atomically(fn);
  }

  /**
   * Writes cluster state that does not come from the log (creating a data dir,
   * recovery into a new cluster, our member ID in a leader's snapshot): committed
   * and made durable before it returns, since no log replays it and what the caller
   * writes next (a marker, the member's identity) relies on it. Never while entries
   * are being applied.
   */
  writeLocal<T>(fn: (cluster: ClusterMetaWriter) => T): T {
    this.core.assertOpen();
    const result = this.core.tx.atomically(() => fn(this.core.meta));
    this.makeDurable();
    return result;
  }

  private applyOne(req: KvRequest): KvApplyResult {
    try {
      return { response: applyKvRequest(this.ctx, req) };
    } catch (err) {
      if (err instanceof KvError) return { error: err };
      throw err;
    }
  }

  private revokeLease(id: bigint): { found: boolean; deleted: number } {
    if (!this.core.meta.deleteLease(id)) return { found: false, deleted: 0 };
    const txn = new WriteTxn(this.core.tables, this.core.state);
    let deleted = 0;
    for (const key of this.leaseKeys(id)) deleted += txn.deleteRange(keyRange(key)).deleted;
    txn.end();
    return { found: true, deleted };
  }

  // --- Revisions that do not come from the log (revisionImport.ts)

  /**
   * After a restore (etcd's `--bump-revision N --mark-compacted`): moves the store's
   * revision forward by n, so no client ever sees a revision go back; with
   * markCompacted everything before the new revision counts as compacted, so
   * watchers and readers of old revisions are told to relist.
   */
  bumpRevision(n: number, markCompacted: boolean): void {
    this.imports.bump(n, markCompacted);
  }

  /**
   * Migration from etcd's `key` bucket: writes stored revisions as they are, each
   * with its own create revision, version and lease; a tombstone takes its key out
   * of the live set. Only into a store nothing has been applied to, in increasing
   * (main, sub) order across calls. The store's revision follows the highest
   * imported; see setRevision.
   */
  importRevisions(batch: readonly StoredRevision[]): void {
    this.imports.revisions(batch);
  }

  /**
   * After importRevisions: sets the store's revision (not below the last imported)
   * and its compaction point (-1: none), removing what that compaction makes
   * unreachable, as etcd finishes a scheduled compaction when it opens its backend.
   */
  setRevision(current: number, compacted: number): void {
    this.imports.setRevision(current, compacted);
  }

  // --- Durability and space (checkpoints.ts, maintenance.ts)

  /**
   * Makes every committed apply durable (synchronous=NORMAL leaves the WAL unsynced
   * between checkpoints) and returns the applied index that is now safe: the Raft
   * log may be compacted up to it.
   */
  makeDurable(): number {
    return this.checkpoints.makeDurable();
  }

  /**
   * Checkpoints the WAL into the database file and makes every apply committed
   * before the call durable; resolves to that applied index. With autoCheckpoint:
   * false, call this regularly (e.g. every second, or when the Raft log wants
   * compacting). The copy runs on this thread (pages from the WAL into the file's
   * page cache: milliseconds), the fsyncs in libuv's pool, so no worker thread (an
   * isolate of its own, about 10 MiB) runs for it. When nothing was committed since
   * the last one, nothing is synced (an idle member does no I/O) and that one's
   * applied index, still durable, is returned.
   */
  checkpointAsync(): Promise<number> {
    return this.checkpoints.run();
  }

  /**
   * kv.db's WAL file is past the size SQLite cuts it back to (KV_WAL_LIMIT_BYTES).
   * SQLite starts the WAL over only when a write begins with every frame copied;
   * under continuous writes a checkpoint never finds that (frames are committed
   * while it syncs), and the WAL grew by about 3 MB/s at one client without end.
   * A checkpoint with applies held back (Member.checkpoint) lets the next write
   * start it over.
   */
  walPastLimit(): boolean {
    return this.checkpoints.walPastLimit();
  }

  /** Rows this store changed since the last checkpoint that copied the whole WAL (since open, before the first). */
  changesSinceCheckpoint(): number {
    return this.checkpoints.changesSince();
  }

  /** The most SQLite's page cache of this connection may hold, in bytes (PRAGMA cache_size: negative is KiB, positive pages). */
  pageCacheLimitBytes(): number {
    const size = this.core.db.pragma('cache_size', { simple: true }) as number;
    return size < 0 ? -size * 1024 : size * (this.core.db.pragma('page_size', { simple: true }) as number);
  }

  /** Whether the worker thread runs now (tests: it ends when idle). */
  get readWorkerRunning(): boolean {
    return this.core.jobs.running;
  }

  /** Bytes the database file takes (etcd's dbSize), as of the last commit. */
  dbSize(): number {
    return this.maintenance.dbSize();
  }

  /** Bytes in use: the file minus its free pages (etcd's dbSizeInUse). */
  dbSizeInUse(): number {
    return this.maintenance.dbSizeInUse();
  }

  /**
   * Rewrites the database without free pages (etcd's defragment), in the worker
   * thread: the event loop keeps running. The worker holds the write lock until
   * it is done, so the caller must not write meanwhile (a write throws rather
   * than wait in SQLite's busy timeout on the event loop); reads go on. A second
   * call while one runs shares it.
   */
  defragment(): Promise<void> {
    return this.maintenance.defragment();
  }

  // --- Snapshots (storeSnapshots.ts)

  /**
   * Writes a consistent snapshot of the whole store to dest (database + sha256).
   * Applies may continue meanwhile; the snapshot holds the state of some applied
   * index at or after the call, which the returned info names.
   */
  saveSnapshot(dest: string): Promise<KvSnapshotInfo> {
    return this.snapshots.save(dest);
  }

  /**
   * A snapshot to stream (a member's Maintenance.Snapshot, a leader's to a peer):
   * a consistent read of the store held while its file's pages are read as they
   * are, no copy made. Applies go on meanwhile. Iterate its chunks once, or
   * release() it: the held read keeps the WAL from being checkpointed.
   */
  openSnapshot(): Promise<KvSnapshotSource> {
    return this.snapshots.open();
  }
}
