// The MVCC key-value store a member applies committed entries to (etcd's mvcc +
// applier), on one better-sqlite3 connection. Every apply records the entry's index
// and term in the same SQLite transaction as its effects, so after a crash an entry
// is either wholly applied (and the log is replayed from the next one) or not at all.
// A member holds that transaction open across batches (commitDelayMs), as etcd's
// backend batches its commits: the log, not kv.db, is what makes an apply durable.

import { statSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { openSqlite } from '../common/sqlite.js';
import { KvError } from './errors.js';
import { ClusterMeta, type ClusterMetaReader, type ClusterMetaWriter } from './clusterMeta.js';
import { applyKvRequest, applyRange, type ApplyContext } from './kvApplier.js';
import { fsyncFile, fsyncFileAsync } from './fsyncFile.js';
import { hashKv, hashStore } from './kvHash.js';
import { KV_WAL_LIMIT_BYTES, openKvDatabase } from './kvSchema.js';
import { keyRange, ReadTxn, WriteTxn, type Revisions } from './mvccTxn.js';
import { DurabilityLostError, ReadJobRunner, type ReadJob } from './readJob.js';
import { RevisionTables, type KeyRange } from './revisionTables.js';
import type { StoredRevision } from './keyValueCodec.js';
import { moveSnapshotIntoPlaceSync, restoreSnapshot, snapshotTrailerStripped, stripSnapshotTrailerSync, verifySnapshot } from './snapshotFile.js';
import { beginHeldRead, type HeldSnapshot } from './snapshotHold.js';
import { snapshotSource, type KvSnapshotSource } from './snapshotSource.js';
import {
  EventType,
  type CheckpointResult,
  type HashKvResult,
  type HistoryBatch,
  type KvSnapshotInfo,
  type KeyValue,
  type KvApplyResult,
  type KvEvent,
  type KvRequest,
  type RangeRequest,
  type RangeResponse,
} from './types.js';

const EMPTY = Buffer.alloc(0);

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
   * committed this many ms after its first, after MAX_HELD_BATCHES batches, and
   * before anything that reads the file from elsewhere (checkpoint, hash, snapshot,
   * makeDurable, defragment, close). A crash loses what it held, so only a caller
   * that replays its log from appliedIndex() at start may set it (a member).
   */
  commitDelayMs?: number;
  knobs?: KvStoreKnobs;
}

/** Batches an open transaction (commitDelayMs) takes before it is committed regardless (as etcd's batch limit). */
const MAX_HELD_BATCHES = 10_000;

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

interface StoreState extends Revisions {
  appliedIndex: number;
  appliedTerm: number;
}

interface StateRow {
  applied_index: number;
  applied_term: number;
  current_revision: number;
  compact_revision: number;
}

/** How long a HashKV result answers the same question again without a scan (hashKvAsync). */
const HASHKV_REUSE_MS = 30_000;

export class KvStore {
  private readonly tables: RevisionTables;
  private readonly meta: ClusterMeta;
  private readonly ctx: ApplyContext;
  private readonly writeStateStmt: Database.Statement;
  private readonly leaseExistsStmt: Database.Statement;
  private readonly pageCountStmt: Database.Statement;
  private readonly pageBytes: number;
  /**
   * The file's pages as of the last commit (the space quota is checked after every
   * write): read inside each write transaction, where SQLite has it at hand, rather
   * than by a read transaction of its own per put. Only this connection changes it.
   */
  private pages: number;
  /** An entry applied inside batch() threw: the whole batch is rolled back, even if the throw was caught. */
  private entryFailed: Error | undefined;
  /** atomically() calls in progress: the outermost one ends a batch. */
  private depth = 0;
  /** The transaction batches join (commitDelayMs): open, with the batches it holds and its commit timer. */
  private held: { batches: number; timer: NodeJS.Timeout } | undefined;
  /** A held transaction's commit failed: the store no longer matches its file. */
  private commitFailure: Error | undefined;
  /**
   * Told when a held transaction's commit fails (a full disk), whoever committed it: SQLite
   * has undone it, so reads would go back in time; stop. Told at once, also where the
   * throw reaches a caller that only logs it (a checkpoint, a hash); reads refuse from then on.
   */
  onCommitFailure: ((e: Error) => void) | undefined;
  /** Told how long each commit of held applies took, in seconds (a member's metrics). */
  onCommit: ((seconds: number) => void) | undefined;
  private readonly beginStmt: Database.Statement;
  private readonly commitStmt: Database.Statement;
  private readonly txn: Database.Transaction<(fn: () => unknown) => unknown>;
  private readonly writer: KvWriter;
  /** Mutated in place (never replaced): transactions hold references to it. */
  private readonly state: StoreState;
  /** The last revision importRevisions wrote (main, sub). */
  private imported: [number, number] = [-1, -1];
  private closed = false;
  /** Checkpoints, hashes and snapshots: one worker thread with its own connection, started at the first, ended when idle. */
  private readonly jobs: ReadJobRunner;
  /** The last HashKV scan's result, for an ask at the same revision soon after (hashKvAsync). */
  private lastHashKv: { revision: number; compacted: number; hash: number; at: number } | undefined;
  /** Rows this connection changed since it opened: the store's only writer, so unchanged means nothing was committed. */
  private readonly totalChangesStmt: Database.Statement;
  /**
   * The last checkpoint that copied the whole WAL: total_changes() read before it,
   * and the applied index it made durable. While total_changes() is the same,
   * a checkpoint has nothing to do and syncs nothing.
   */
  private lastCheckpoint: { changes: number; appliedIndex: number } | undefined;
  /** The tail of the checkpoints asked for: they run one after another. */
  private checkpoints: Promise<unknown> = Promise.resolve();
  /** A second connection whose read transaction pins the WAL while a checkpoint is made durable (checkpointAsync). */
  private pin: { db: Database.Database; appliedIndex: Database.Statement } | undefined;
  /** The defragment in the worker, while it runs (defragment()). */
  private defragmenting: Promise<void> | undefined;
  /** Streamed snapshots' reads held on this thread (holdHere), each on a connection of its own. */
  private readonly heldHere = new Set<Database.Database>();

  private constructor(
    private readonly db: Database.Database,
    readonly path: string,
    private readonly commitDelayMs: number,
    private readonly knobs: KvStoreKnobs = {},
  ) {
    this.tables = new RevisionTables(db);
    this.meta = new ClusterMeta(db);
    const row = db.prepare(`SELECT * FROM state`).get() as StateRow;
    this.state = {
      appliedIndex: row.applied_index,
      appliedTerm: row.applied_term,
      current: row.current_revision,
      compacted: row.compact_revision,
    };
    this.writeStateStmt = db.prepare(`UPDATE state SET applied_index = ?, applied_term = ?, current_revision = ?, compact_revision = ?`);
    this.leaseExistsStmt = db.prepare(`SELECT 1 FROM leases WHERE id = ?`).pluck();
    this.pageCountStmt = db.prepare(`PRAGMA page_count`).pluck();
    this.totalChangesStmt = db.prepare(`SELECT total_changes()`).pluck();
    this.beginStmt = db.prepare(`BEGIN IMMEDIATE`);
    this.commitStmt = db.prepare(`COMMIT`);
    this.jobs = new ReadJobRunner(knobs.readWorkerIdleMs);
    this.pageBytes = db.pragma('page_size', { simple: true }) as number;
    this.pages = this.pageCountStmt.get() as number;
    // Called inside another transaction, better-sqlite3 uses a savepoint instead.
    this.txn = db.transaction((fn: () => unknown) => fn());
    this.ctx = {
      tables: this.tables,
      revs: this.state,
      leaseExists: (id) => this.leaseExistsStmt.get(id) !== undefined,
      atomically: (fn) => this.atomically(fn),
    };
    this.writer = {
      request: (req) => this.applyOne(req),
      revokeLease: (id) => this.revokeLease(id),
      cluster: this.meta,
    };
  }

  /** Opens or creates the KV database file (`:memory:` works, without snapshots). */
  static open(path: string, opts: KvOpenOptions = {}): KvStore {
    const db = openKvDatabase(path, { readonly: opts.readonly, quickCheck: opts.quickCheck });
    if (opts.autoCheckpoint === false) db.pragma('wal_autocheckpoint = 0');
    return new KvStore(db, path, opts.readonly ? 0 : (opts.commitDelayMs ?? 0), opts.knobs);
  }

  close(): void {
    if (this.closed) return;
    try {
      if (!this.commitFailure) this.commit();
    } finally {
      this.closed = true;
      // A checkpoint in flight lets go of its pin (its transaction is rolled back) and fails.
      this.pin?.db.close();
      // So does a snapshot streamed from a read held here: it throws before its trailer.
      for (const reader of this.heldHere) reader.close();
      this.heldHere.clear();
      // The worker's connection first: ours, closed last, checkpoints the WAL and removes it, as it always did.
      this.jobs.close();
      this.db.close();
    }
  }

  // --- State

  appliedIndex(): number {
    return this.state.appliedIndex;
  }

  appliedTerm(): number {
    return this.state.appliedTerm;
  }

  currentRevision(): number {
    return this.state.current;
  }

  /** etcd's compactMainRev: -1 until the first compaction. */
  compactRevision(): number {
    return this.state.compacted;
  }

  /** After a failed commit its members, leases and alarms refuse, as every read does (ClusterMeta.lose). */
  get cluster(): ClusterMetaReader {
    return this.meta;
  }

  // --- Reads (serializable: the state as of the last apply)

  /** Throws KvError (compacted, future revision). */
  range(req: RangeRequest): RangeResponse {
    this.assertOpen();
    return applyRange(new ReadTxn(this.tables, this.state), req);
  }

  /** Keys attached to a lease, in key order (for lease revocation and TimeToLive). */
  leaseKeys(id: bigint): Buffer[] {
    return this.tables.keysWithLease(id);
  }

  /**
   * Watch history: puts and deletes in revisions [from, to] of the keys in `range`
   * (every key when null), in revision order. At most about `limits.rows` events or
   * `limits.bytes` of keys and values, but a revision is never split; the batch is
   * complete through `through`. Revisions below the compacted one may be missing:
   * check compactRevision() first.
   */
  history(range: KeyRange | null, from: number, to: number, limits: { rows: number; bytes: number }): HistoryBatch {
    this.assertOpen();
    const { rows, through } = this.tables.history(range, from, Math.min(to, this.state.current), limits.rows, limits.bytes);
    const events = rows.map((r): KvEvent => {
      const key = Buffer.from(r[0], 'hex');
      if (r[6] === 1) {
        return { type: EventType.Delete, kv: { key, createRevision: 0, modRevision: r[1], version: 0, value: EMPTY, lease: 0n } };
      }
      const kv = {
        key,
        modRevision: r[1],
        createRevision: r[3],
        version: r[4],
        lease: r[5] === 0 ? 0n : BigInt(r[5]),
        value: r[7] ? Buffer.from(r[7], 'hex') : EMPTY,
      };
      return { type: EventType.Put, kv };
    });
    return { events, through: Math.min(through, this.state.current) };
  }

  /** The key as of revision `rev` (a watch event's prev_kv): undefined if absent or compacted away. */
  keyAt(key: Buffer, rev: number): KeyValue | undefined {
    if (rev <= 0 || rev < this.state.compacted || rev > this.state.current) return undefined;
    return this.tables.rangeAt(keyRange(key), rev, rev === this.state.current, 1, false)[0];
  }

  /** etcd's HashKV at `revision` (0: current). Throws KvError (compacted, future revision). */
  hashKv(revision = 0): HashKvResult {
    return hashKv(this.tables, this.state, revision);
  }

  /** Hash of the whole store, applied index and term excluded (Maintenance.Hash). */
  hash(): number {
    return hashStore(this.db, this.tables, this.state);
  }

  /**
   * hashKv in a worker thread, off the event loop: on a large store hashing takes
   * seconds (about 2.6 s per million revisions). Reads one consistent state, at or
   * after the call. Rejects with KvError (compacted, future revision).
   */
  async hashKvAsync(revision = 0): Promise<HashKvResult> {
    // The hash at a revision cannot change until a compaction (which moves
    // `compacted`, part of the key): writes only add later revisions, and an
    // installed snapshot is a new store. So the same question asked again soon
    // (a recovery's checks after each re-add, HASHKV_REUSE_MS apart or less, ask
    // every member at the unchanged revision) is answered without a scan; later
    // asks scan again, so a periodic check still reads the disk.
    const asked = revision > 0 ? revision : this.state.current;
    const last = this.lastHashKv;
    if (last && last.revision === asked && last.compacted === this.state.compacted && Date.now() - last.at < HASHKV_REUSE_MS) {
      return { hash: last.hash, revision: this.state.current, compactRevision: this.state.compacted };
    }
    const r = (await this.inWorker({ kind: 'hashKv', dbPath: this.path, revision })) as HashKvResult;
    // 0 asks for the worker's current revision: the one it hashed.
    this.lastHashKv = { revision: revision > 0 ? revision : r.revision, compacted: r.compactRevision, hash: r.hash, at: Date.now() };
    return r;
  }

  /** hash() in a worker thread (see hashKvAsync). */
  hashAsync(): Promise<number> {
    return this.inWorker({ kind: 'hash', dbPath: this.path }) as Promise<number>;
  }

  private inWorker(job: ReadJob): Promise<unknown> {
    this.assertOpen();
    // A worker opens its own connection; an in-memory database is private to ours.
    if (this.path === ':memory:') {
      return Promise.resolve().then(() => (job.kind === 'hashKv' ? this.hashKv(job.revision) : this.hash()));
    }
    return this.job(job);
  }

  /** A job for the worker, whose own connection sees only committed applies: commit the held ones first. */
  private job(job: ReadJob): Promise<unknown> {
    this.assertOpen();
    this.commit();
    return this.jobs.run(job);
  }

  /**
   * Commits the transaction applies are held in (commitDelayMs); nothing when none
   * is open. A failed commit leaves the store unusable: every later call throws.
   */
  commit(): void {
    const held = this.held;
    if (!held) return;
    clearTimeout(held.timer);
    this.held = undefined;
    const start = process.hrtime.bigint();
    try {
      this.commitStmt.run();
      this.onCommit?.(Number(process.hrtime.bigint() - start) / 1e9);
    } catch (e) {
      throw this.heldLost(`commit of ${held.batches} applied batches to ${this.path} failed: ${(e as Error).message}`);
    }
  }

  /** The held transaction is undone: the store no longer matches its file, for good; the owner is told at once. */
  private heldLost(what: string): Error {
    if (this.held) clearTimeout(this.held.timer);
    this.held = undefined;
    return this.storeLost(what);
  }

  /** The store no longer matches its file, for good: every later call throws, and the owner is told at once. */
  private storeLost(what: string): Error {
    this.commitFailure ??= new Error(`kv: ${what}`);
    this.meta.lose(this.commitFailure);
    this.onCommitFailure?.(this.commitFailure);
    return this.commitFailure;
  }

  /** Opens the transaction batches join, unless one is open or batches commit each. */
  private hold(): void {
    if (this.commitDelayMs <= 0 || this.held) return;
    this.beginStmt.run();
    const timer = setTimeout(() => {
      try {
        this.commit();
      } catch {
        // Told to onCommitFailure and kept in commitFailure: every later call throws it.
      }
    }, this.commitDelayMs);
    this.held = { batches: 0, timer };
  }

  // --- Applying committed entries

  /**
   * Applies entry `index` of `term`: runs fn and records the index and term, in one
   * transaction. If fn throws, nothing of the entry is kept and the error propagates
   * (the entry is not applied). Entries must come in increasing index order.
   */
  apply<T>(index: number, term: number, fn: (w: KvWriter) => T): T {
    this.assertOpen();
    if (this.depth === 0) return this.atomically(() => this.applyEntry(index, term, fn));
    // Inside batch(): no savepoint per entry (a Txn takes its own); a throw fails the
    // whole batch instead, caught or not, since what follows the entry cannot apply.
    try {
      return this.applyEntry(index, term, fn);
    } catch (err) {
      this.entryFailed ??= err instanceof Error ? err : new Error(String(err));
      throw err;
    }
  }

  private applyEntry<T>(index: number, term: number, fn: (w: KvWriter) => T): T {
    if (index <= this.state.appliedIndex) {
      throw new Error(`kv: entry ${index} is at or below the applied index ${this.state.appliedIndex}; applying it again would apply it twice`);
    }
    if (term < this.state.appliedTerm) {
      throw new Error(`kv: entry ${index} has term ${term}, below the applied term ${this.state.appliedTerm}`);
    }
    const result = fn(this.writer);
    this.state.appliedIndex = index;
    this.state.appliedTerm = term;
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
    this.assertOpen();
    return this.atomically(fn);
  }

  /**
   * Writes cluster state that does not come from the log (creating a data dir,
   * recovery into a new cluster, our member ID in a leader's snapshot): committed
   * and made durable before it returns, since no log replays it and what the caller
   * writes next (a marker, the member's identity) relies on it. Never while entries
   * are being applied.
   */
  writeLocal<T>(fn: (cluster: ClusterMetaWriter) => T): T {
    this.assertOpen();
    const result = this.atomically(() => fn(this.meta));
    this.makeDurable();
    return result;
  }

  /** A write that does not come from the log: committed at once (with what was held), since no log replays it. */
  private committed<T>(fn: () => T): T {
    const result = this.atomically(fn);
    this.commit();
    return result;
  }

  /**
   * After a restore (etcd's `--bump-revision N --mark-compacted`): moves the store's
   * revision forward by n, so no client ever sees a revision go back; with
   * markCompacted everything before the new revision counts as compacted, so
   * watchers and readers of old revisions are told to relist.
   */
  bumpRevision(n: number, markCompacted: boolean): void {
    this.assertOpen();
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`bump revision ${n} must be a whole number >= 0`);
    this.committed(() => {
      this.state.current += n;
      if (markCompacted && this.state.current > this.state.compacted) {
        this.tables.compact(this.state.compacted, this.state.current);
        this.state.compacted = this.state.current;
      }
    });
  }

  // --- Import (migration from etcd's `key` bucket)

  /**
   * Writes stored revisions as they are, each with its own create revision,
   * version and lease; a tombstone takes its key out of the live set. Only into a
   * store nothing has been applied to, in increasing (main, sub) order across
   * calls. The store's revision follows the highest imported; see setRevision.
   */
  importRevisions(batch: readonly StoredRevision[]): void {
    this.assertNotApplied('import revisions');
    const blob = (b: Uint8Array) => (Buffer.isBuffer(b) ? b : Buffer.from(b));
    this.committed(() => {
      for (const r of batch) {
        const [m, s] = this.imported;
        if (r.main < m || (r.main === m && r.sub <= s)) {
          throw new Error(`kv: imported revision ${r.main}_${r.sub} does not come after ${m}_${s}; revisions must be imported in order`);
        }
        if (r.tombstone) this.tables.writeTombstone(blob(r.key), r.main, r.sub);
        else this.tables.writePut(blob(r.key), r.main, r.sub, r.createRevision, r.version, r.lease, blob(r.value));
        this.imported = [r.main, r.sub];
        if (r.main > this.state.current) this.state.current = r.main;
      }
    });
  }

  /**
   * After importRevisions: sets the store's revision (not below the last imported)
   * and its compaction point (-1: none), removing what that compaction makes
   * unreachable, as etcd finishes a scheduled compaction when it opens its backend.
   */
  setRevision(current: number, compacted: number): void {
    this.assertNotApplied('set the revision');
    if (!Number.isSafeInteger(current) || current < this.state.current) {
      throw new RangeError(`kv: revision ${current} is below the store's ${this.state.current}`);
    }
    if (!Number.isSafeInteger(compacted) || compacted < -1 || compacted > current) {
      throw new RangeError(`kv: compaction revision ${compacted} must be between -1 and ${current}`);
    }
    this.committed(() => {
      this.state.current = current;
      if (compacted > this.state.compacted) {
        this.tables.compact(this.state.compacted, compacted);
        this.state.compacted = compacted;
      }
    });
  }

  private assertNotApplied(what: string): void {
    this.assertOpen();
    if (this.state.appliedIndex !== 0) {
      throw new Error(`kv: cannot ${what} in ${this.path}: entries up to ${this.state.appliedIndex} are applied; import only into a new store`);
    }
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
    if (!this.meta.deleteLease(id)) return { found: false, deleted: 0 };
    const txn = new WriteTxn(this.tables, this.state);
    let deleted = 0;
    for (const key of this.leaseKeys(id)) deleted += txn.deleteRange(keyRange(key)).deleted;
    txn.end();
    return { found: true, deleted };
  }

  /**
   * Runs fn in a transaction (a savepoint when nested). On a throw, SQLite rolls
   * back and the in-memory revisions and indexes are put back as they were.
   */
  private atomically<T>(fn: () => T): T {
    if (this.defragmenting) throw new Error(`kv: ${this.path} is being defragmented; writes must wait until it is done`);
    const saved = { ...this.state };
    const outermost = this.depth === 0;
    if (outermost) {
      this.entryFailed = undefined;
      this.hold();
    }
    this.depth++;
    try {
      // Inside a held transaction this is a savepoint: a failed batch undoes itself only (but see the catch).
      const result = this.txn.immediate(() => {
        const result = fn();
        if (outermost) {
          if (this.entryFailed !== undefined) throw this.entryFailed;
          this.persistState();
          this.pages = this.pageCountStmt.get() as number;
        }
        return result;
      }) as T;
      if (outermost && this.held && ++this.held.batches >= MAX_HELD_BATCHES) this.commit();
      return result;
    } catch (err) {
      Object.assign(this.state, saved);
      // The cluster state read into memory may hold writes SQLite just undid.
      this.meta.invalidate();
      // A batch that failed on a full disk while spilling pages can make SQLite undo the
      // whole held transaction, the batches before it too (clients have their answers).
      if (outermost && this.held && !this.db.inTransaction) {
        throw this.heldLost(`${this.held.batches} applied batches held for commit to ${this.path} were undone: ${(err as Error).message}`);
      }
      throw err;
    } finally {
      this.depth--;
      if (outermost) this.entryFailed = undefined;
    }
  }

  private persistState(): void {
    const s = this.state;
    this.writeStateStmt.run(s.appliedIndex, s.appliedTerm, s.current, s.compacted);
  }

  // --- Durability and space

  /**
   * Makes every committed apply durable (synchronous=NORMAL leaves the WAL unsynced
   * between checkpoints) and returns the applied index that is now safe: the Raft
   * log may be compacted up to it.
   */
  makeDurable(): number {
    this.assertOpen();
    this.commit();
    if (this.path !== ':memory:') {
      fsyncFile(`${this.path}-wal`);
      fsyncFile(this.path);
    }
    return this.state.appliedIndex;
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
    // One at a time: each holds the pin connection's read across its fsyncs, and a
    // second BEGIN on it fails. The member's timer and a snapshot's start both call this.
    const run = this.checkpoints.then(() => this.checkpointNow());
    this.checkpoints = run.catch(() => undefined);
    return run;
  }

  private async checkpointNow(): Promise<number> {
    this.assertOpen();
    if (this.path === ':memory:') return this.state.appliedIndex;
    // The worker holds the write lock meanwhile: copy after it, not beside it.
    await this.defragmenting?.catch(() => undefined);
    this.assertOpen();
    this.commit();
    const changes = this.totalChangesStmt.get() as number;
    const last = this.lastCheckpoint;
    if (last?.changes === changes) {
      this.knobs.onCheckpoint?.({ appliedIndex: last.appliedIndex, synced: false, complete: true });
      return last.appliedIndex;
    }
    const r = await this.pinnedCheckpoint();
    // Commits after `changes` was read may be in this checkpoint too: then the next one runs again, for nothing.
    this.lastCheckpoint = r.complete ? { changes, appliedIndex: r.appliedIndex } : undefined;
    this.knobs.onCheckpoint?.(r);
    return r.appliedIndex;
  }

  /**
   * A checkpoint whose fsyncs wait in libuv's pool. A read transaction on a second
   * connection pins the WAL as committed now; then
   * 1. the WAL is fsynced: everything committed up to the pin is durable;
   * 2. SQLite copies the WAL's frames into the file without syncing (synchronous=OFF
   *    for that one statement). It copies none past the pin (a checkpoint stops at
   *    the oldest reader), so none the fsync did not cover;
   * 3. the file is fsynced, and only then the pin let go. While a reader holds the
   *    WAL no writer starts it over, so until the copy is durable its source stays.
   * A power cut in 2 or 3 leaves a synced WAL, which SQLite replays at the next open.
   */
  private async pinnedCheckpoint(): Promise<CheckpointResult> {
    this.pin ??= (() => {
      const db = openSqlite(this.path, { fileMustExist: true });
      return { db, appliedIndex: db.prepare('SELECT applied_index FROM state').pluck() };
    })();
    const pin = this.pin.db;
    pin.exec('BEGIN');
    try {
      const appliedIndex = this.pin.appliedIndex.get() as number;
      await fsyncFileAsync(`${this.path}-wal`);
      this.assertOpen();
      // A held transaction of this connection would make the checkpoint fail as locked.
      this.commit();
      this.db.pragma('synchronous = OFF');
      let r: { busy: number; log: number; checkpointed: number };
      try {
        [r] = this.db.pragma('wal_checkpoint(PASSIVE)') as (typeof r)[];
      } finally {
        this.db.pragma('synchronous = NORMAL');
      }
      await fsyncFileAsync(this.path);
      this.assertOpen();
      return { appliedIndex, synced: true, complete: r.checkpointed === r.log };
    } finally {
      if (pin.open && pin.inTransaction) pin.exec('COMMIT');
    }
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
    if (this.path === ':memory:') return false;
    try {
      return statSync(`${this.path}-wal`).size > KV_WAL_LIMIT_BYTES;
    } catch {
      return false;
    }
  }

  /** Rows this store changed since the last checkpoint that copied the whole WAL (since open, before the first). */
  changesSinceCheckpoint(): number {
    return (this.totalChangesStmt.get() as number) - (this.lastCheckpoint?.changes ?? 0);
  }

  /** Whether the worker thread runs now (tests: it ends when idle). */
  get readWorkerRunning(): boolean {
    return this.jobs.running;
  }

  /** Bytes the database file takes (etcd's dbSize), as of the last commit. */
  dbSize(): number {
    return this.pages * this.pageBytes;
  }

  /** Bytes in use: the file minus its free pages (etcd's dbSizeInUse). */
  dbSizeInUse(): number {
    const free = this.db.pragma('freelist_count', { simple: true }) as number;
    return ((this.pageCountStmt.get() as number) - free) * this.pageBytes;
  }

  /**
   * Rewrites the database without free pages (etcd's defragment), in the worker
   * thread: the event loop keeps running. The worker holds the write lock until
   * it is done, so the caller must not write meanwhile (a write throws rather
   * than wait in SQLite's busy timeout on the event loop); reads go on. A second
   * call while one runs shares it.
   */
  defragment(): Promise<void> {
    this.assertOpen();
    if (this.defragmenting) return this.defragmenting;
    this.commit();
    const done = () => {
      this.defragmenting = undefined;
      if (this.closed) return;
      // VACUUM changes no rows: the next checkpoint must not take the store for unchanged.
      this.lastCheckpoint = undefined;
      this.pages = this.pageCountStmt.get() as number;
    };
    const run =
      this.path === ':memory:'
        ? Promise.resolve().then(() => void this.db.exec('VACUUM'))
        : this.jobs.run({ kind: 'defragment', dbPath: this.path }).then(
            () => undefined,
            (e: Error) => {
              throw e instanceof DurabilityLostError ? this.storeLost(e.message) : e;
            },
          );
    this.defragmenting = run.finally(done);
    return this.defragmenting;
  }

  // --- Snapshots

  /**
   * Writes a consistent snapshot of the whole store to dest (database + sha256).
   * Applies may continue meanwhile; the snapshot holds the state of some applied
   * index at or after the call, which the returned info names.
   */
  saveSnapshot(dest: string): Promise<KvSnapshotInfo> {
    this.assertOpen();
    if (this.path === ':memory:') return Promise.reject(new Error('kv: an in-memory store cannot be snapshotted'));
    return this.job({ kind: 'snapshot', dbPath: this.path, dest }) as Promise<KvSnapshotInfo>;
  }

  /**
   * A snapshot to stream (a member's Maintenance.Snapshot, a leader's to a peer):
   * a consistent read of the store held while its file's pages are read as they
   * are, no copy made. Applies go on meanwhile. Iterate its chunks once, or
   * release() it: the held read keeps the WAL from being checkpointed.
   */
  async openSnapshot(): Promise<KvSnapshotSource> {
    this.assertOpen();
    if (this.path === ':memory:') throw new Error('kv: an in-memory store cannot be snapshotted');
    const here = await this.holdHere();
    if (here) return here;
    // Commits kept landing: the worker holds writers off for the two steps (snapshotHold.ts).
    const held = (await this.job({ kind: 'hold', dbPath: this.path })) as HeldSnapshot;
    const stillHeld = this.jobs.holding();
    const release = () => {
      if (stillHeld()) this.jobs.run({ kind: 'release', dbPath: this.path, id: held.id }).catch(() => undefined);
    };
    return snapshotSource(this.path, held, stillHeld, release);
  }

  /**
   * The held read without the worker, whose start (an isolate, a connection) was
   * most of the wait for a first `snapshot save`'s first byte. Once every commit is
   * checkpointed, a read begun on a connection of our own reads the file alone, and
   * no checkpoint writes to the file while it is held (snapshotHold.ts says why).
   * This connection is the store's only writer, so nothing commits between the
   * check and the read's start. Undefined when commits landed during the checkpoint.
   */
  private async holdHere(): Promise<KvSnapshotSource | undefined> {
    // Syncs nothing when nothing was committed since the last complete one.
    await this.checkpointAsync();
    this.assertOpen();
    this.commit();
    if (this.defragmenting || this.lastCheckpoint?.changes !== (this.totalChangesStmt.get() as number)) return undefined;
    const reader = openSqlite(this.path, { fileMustExist: true });
    let held: Omit<HeldSnapshot, 'id'>;
    try {
      held = beginHeldRead(reader);
    } catch (e) {
      reader.close();
      throw e;
    }
    this.heldHere.add(reader);
    const release = () => {
      if (this.heldHere.delete(reader)) reader.close();
    };
    return snapshotSource(this.path, { id: 0, ...held }, () => !this.closed && reader.open, release);
  }

  /** Checks a snapshot's checksum; throws a one-line error when it does not match. */
  static verifySnapshot(src: string | Uint8Array): Promise<{ size: number; sha256: string }> {
    return verifySnapshot(src);
  }

  /** Verifies the snapshot, then installs it as the database at dbPath (close any store on it first). */
  static restoreSnapshot(src: string | Uint8Array, dbPath: string, onProgress?: (copied: number, total: number) => void): Promise<KvSnapshotInfo> {
    return restoreSnapshot(src, dbPath, onProgress);
  }

  /** Checks a received snapshot file and cuts its trailer off, in place (snapshotFile.ts). */
  static stripSnapshotTrailerSync(src: string, opts: { checked?: boolean } = {}): void {
    stripSnapshotTrailerSync(src, opts);
  }

  /** Whether a received snapshot file already had its trailer cut off by an install a crash interrupted. */
  static snapshotTrailerStripped(src: string): boolean {
    return snapshotTrailerStripped(src);
  }

  /** Moves a snapshot file whose trailer is cut off into place as the database at dbPath (close any store on it first). */
  static moveSnapshotIntoPlaceSync(src: string, dbPath: string): void {
    moveSnapshotIntoPlaceSync(src, dbPath);
  }

  private assertOpen(): void {
    if (this.closed) throw new Error(`kv: store ${this.path} is closed`);
    if (this.commitFailure) throw this.commitFailure;
  }
}
