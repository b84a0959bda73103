// The SQLite transaction a store's writes run in. Every batch records the applied
// index and term with its effects, so after a crash an entry is either wholly
// applied or not at all. A member holds the transaction open across batches
// (commitDelayMs), as etcd's backend batches its commits: the log, not kv.db, is
// what makes an apply durable. A failed commit (a full disk) has SQLite undo what
// was held, so the store no longer matches its file: it is lost for good.

import type Database from 'better-sqlite3';
import type { ClusterMeta } from './clusterMeta.js';
import type { Revisions } from './mvccTxn.js';

/** Batches an open transaction (commitDelayMs) takes before it is committed regardless (as etcd's batch limit). */
const MAX_HELD_BATCHES = 10_000;

/** Mutated in place (never replaced): transactions hold references to it. */
export interface StoreState extends Revisions {
  appliedIndex: number;
  appliedTerm: number;
}

interface StateRow {
  applied_index: number;
  applied_term: number;
  current_revision: number;
  compact_revision: number;
}

/** The state row as the file holds it. */
export function readStoreState(db: Database.Database): StoreState {
  const row = db.prepare(`SELECT * FROM state`).get() as StateRow;
  return { appliedIndex: row.applied_index, appliedTerm: row.applied_term, current: row.current_revision, compacted: row.compact_revision };
}

export interface HeldTransactionOptions {
  /** 0: every batch commits. Above 0: batches join one open transaction, committed this many ms after its first. */
  commitDelayMs: number;
  /** Told once when the store is lost (see KvStore.onCommitFailure). */
  onLost(e: Error): void;
  /** Told how long each commit of held applies took, in seconds (a member's metrics). */
  onCommit?(seconds: number): void;
  /** Runs each commit of held applies (a member marks it for its stall watchdog). */
  aroundCommit?(commit: () => void): void;
  /** Why writes must wait now (a defragment holds the write lock), if they must. */
  writesBlocked(): string | undefined;
}

export class HeldTransaction {
  /**
   * The file's pages as of the last commit (the space quota is checked after every
   * write): read inside each write transaction, where SQLite has it at hand, rather
   * than by a read transaction of its own per put. Only this connection changes it.
   */
  pages: number;
  /** An entry applied inside a batch threw: the whole batch is rolled back, even if the throw was caught. */
  private entryFailed: Error | undefined;
  /** atomically() calls in progress: the outermost one ends a batch. */
  private depth = 0;
  /** The transaction batches join (commitDelayMs): open, with the batches it holds and its commit timer. */
  private held: { batches: number; timer: NodeJS.Timeout } | undefined;
  /** The store no longer matches its file: every later call throws this. */
  private lostWith: Error | undefined;
  private readonly beginStmt: Database.Statement;
  private readonly commitStmt: Database.Statement;
  private readonly writeStateStmt: Database.Statement;
  private readonly pageCountStmt: Database.Statement;
  private readonly txn: Database.Transaction<(fn: () => unknown) => unknown>;

  constructor(
    private readonly db: Database.Database,
    private readonly path: string,
    private readonly state: StoreState,
    private readonly meta: ClusterMeta,
    private readonly opts: HeldTransactionOptions,
  ) {
    this.beginStmt = db.prepare(`BEGIN IMMEDIATE`);
    this.commitStmt = db.prepare(`COMMIT`);
    this.writeStateStmt = db.prepare(`UPDATE state SET applied_index = ?, applied_term = ?, current_revision = ?, compact_revision = ?`);
    this.pageCountStmt = db.prepare(`PRAGMA page_count`).pluck();
    this.pages = this.pageCount();
    // Called inside another transaction, better-sqlite3 uses a savepoint instead.
    this.txn = db.transaction((fn: () => unknown) => fn());
  }

  /** Why the store is unusable, once it is. */
  get failure(): Error | undefined {
    return this.lostWith;
  }

  /** The file's pages now (PRAGMA page_count). */
  pageCount(): number {
    return this.pageCountStmt.get() as number;
  }

  /**
   * Runs one entry's fn: as a batch of its own, or inside the batch in progress
   * with no savepoint per entry (a Txn takes its own); a throw then fails the
   * whole batch, caught or not, since what follows the entry cannot apply.
   */
  entry<T>(fn: () => T): T {
    if (this.depth === 0) return this.atomically(fn);
    try {
      return fn();
    } catch (err) {
      this.entryFailed ??= err instanceof Error ? err : new Error(String(err));
      throw err;
    }
  }

  /**
   * Runs fn in a transaction (a savepoint when nested). On a throw, SQLite rolls
   * back and the in-memory revisions and indexes are put back as they were.
   */
  atomically<T>(fn: () => T): T {
    const blocked = this.opts.writesBlocked();
    if (blocked) throw new Error(blocked);
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
          const s = this.state;
          this.writeStateStmt.run(s.appliedIndex, s.appliedTerm, s.current, s.compacted);
          this.pages = this.pageCount();
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

  /** A write that does not come from the log: committed at once (with what was held), since no log replays it. */
  committed<T>(fn: () => T): T {
    const result = this.atomically(fn);
    this.commit();
    return result;
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
      if (this.opts.aroundCommit) this.opts.aroundCommit(() => this.commitStmt.run());
      else this.commitStmt.run();
      this.opts.onCommit?.(Number(process.hrtime.bigint() - start) / 1e9);
    } catch (e) {
      throw this.heldLost(`commit of ${held.batches} applied batches to ${this.path} failed: ${(e as Error).message}`);
    }
  }

  /** The store no longer matches its file, for good: every later call throws, and the owner is told at once. */
  lost(what: string): Error {
    this.lostWith ??= new Error(`kv: ${what}`);
    this.meta.lose(this.lostWith);
    this.opts.onLost(this.lostWith);
    return this.lostWith;
  }

  /** The held transaction is undone: the store is lost (see lost()). */
  private heldLost(what: string): Error {
    if (this.held) clearTimeout(this.held.timer);
    this.held = undefined;
    return this.lost(what);
  }

  /** Opens the transaction batches join, unless one is open or batches commit each. */
  private hold(): void {
    if (this.opts.commitDelayMs <= 0 || this.held) return;
    this.beginStmt.run();
    const timer = setTimeout(() => {
      try {
        this.commit();
      } catch {
        // Told to onLost and kept in failure: every later call throws it.
      }
    }, this.opts.commitDelayMs);
    this.held = { batches: 0, timer };
  }
}
