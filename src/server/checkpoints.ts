// kv.db made durable off the event loop, and the Raft log compacted behind it: a
// checkpoint of SQLite's WAL runs in the store's worker thread, never inside an
// apply, and the log is compacted only past what a checkpoint made durable (the log
// replays the rest). Defragmentation rewrites kv.db in the same worker with applies
// held back meanwhile (heldBackApplies.ts).
import type { KvStore } from '../kv/index.js';
import type { RawNode } from '../raft/rawNode.js';
import type { RaftStorage } from '../storage/raftStorage.js';
import type { HeldBackApplies } from './heldBackApplies.js';
import type { Logger } from './logger.js';

/** Rows changed that make a checkpoint due at the next tick (a few hundred puts: about SQLite's own 1000-page auto-checkpoint). */
const CHECKPOINT_CHANGES = 1000;
/** Fewer changes are checkpointed this long after the last checkpoint (two fsyncs of kv.db each, sharing the disk with the log's). */
const CHECKPOINT_MAX_AGE_MS = 30_000;

export interface CheckpointHost {
  log: Logger;
  storage: RaftStorage;
  /** The store now (a leader's snapshot replaces it). */
  kv(): KvStore;
  raft(): RawNode;
  heldBack: HeldBackApplies;
  /** --snapshot-count: applied entries between compactions. */
  snapshotCount: number;
  /** How long a checkpoint took, in seconds (the metrics' histogram). */
  observeCheckpoint(seconds: number): void;
  stopping(): boolean;
  fatal(e: Error): void;
}

export class Checkpoints {
  private timer: NodeJS.Timeout | undefined;
  /** The index the log was last compacted to (or the leader's snapshot installed at). */
  private snapshotIndex: number;
  /** The highest applied index a checkpoint of kv.db has made durable (the log may be compacted up to it). */
  private kvDurable = 0;
  /** The log is compacted once a checkpoint has made kv.db durable up to here (maybeCompact). */
  private compactAt: number | undefined;
  private checkpointing: Promise<unknown> | undefined;
  /** When the last checkpoint ended (or the member started): checkpointIfDue. */
  private lastCheckpointAt = 0;
  private defragmenting: Promise<void> | undefined;

  constructor(private readonly h: CheckpointHost) {
    this.snapshotIndex = h.storage.snapshotMeta().index;
  }

  start(): void {
    this.lastCheckpointAt = Date.now();
    this.timer = setInterval(() => this.checkpointIfDue(), 1000);
  }

  stopTimer(): void {
    if (this.timer) clearInterval(this.timer);
  }

  /** Resolves once the checkpoint and the defragmentation in flight, if any, ended. */
  async settled(): Promise<void> {
    await this.checkpointing;
    await this.defragmenting?.catch(() => undefined);
  }

  /** The leader's snapshot is now also ours: the next compaction counts from it. */
  snapshotInstalled(index: number): void {
    this.snapshotIndex = index;
    this.compactAt = undefined;
  }

  /** kv.db rewritten in the store's worker; applies wait meanwhile, Raft does not (heldBackApplies.ts). */
  defragment(): Promise<void> {
    this.defragmenting ??= this.withAppliesHeld(() => this.h.kv().defragment()).finally(() => (this.defragmenting = undefined));
    return this.defragmenting;
  }

  /** Runs work on kv.db with applies held back meanwhile; an apply that fails once they resume stops the member. */
  private withAppliesHeld<T>(work: () => Promise<T>): Promise<T> {
    return this.h.heldBack.during(work, (e) => this.h.fatal(e));
  }

  /** After each advance: compacts the log once --snapshot-count entries were applied since the last time. */
  maybeCompact(): void {
    // Applies held back: kv.db is not written, so there is nothing new to make durable.
    if (this.h.heldBack.holding) return;
    const applied = this.h.kv().appliedIndex();
    if (applied - this.snapshotIndex < this.h.snapshotCount) return;
    // Compact only past what kv.db has made durable: the log replays the rest. A
    // checkpoint in the store's worker makes it durable, off the event loop (fsyncing
    // kv.db here took 40-60 ms of it at 100 clients, every --snapshot-count entries);
    // the compaction follows at the first advance after that checkpoint.
    if (this.compactAt === undefined) {
      this.compactAt = applied;
      this.checkpoint();
    }
    if (this.kvDurable < this.compactAt) return;
    this.compactAt = undefined;
    const durable = this.kvDurable;
    const raft = this.h.raft();
    const storage = this.h.storage;
    const meta = raft.snapshotMetaAt(durable);
    if (!meta || durable <= Math.max(this.snapshotIndex, storage.snapshotMeta().index)) return;
    raft.compact(durable, new Uint8Array(0));
    storage.saveSnapshot({ meta, data: new Uint8Array(0) });
    storage.compact(durable);
    this.snapshotIndex = durable;
    this.h.log.info({ index: durable }, 'compacted raft log');
  }

  /**
   * Every second: a checkpoint once CHECKPOINT_CHANGES rows changed, or once
   * anything changed CHECKPOINT_MAX_AGE_MS after the last one. A member under load
   * checkpoints every second as before; a few writes (a new cluster's membership,
   * an occasional put) wait, and the store's worker thread is not started for them.
   */
  private checkpointIfDue(): void {
    const changed = this.h.kv().changesSinceCheckpoint();
    if (changed >= CHECKPOINT_CHANGES || (changed > 0 && Date.now() - this.lastCheckpointAt >= CHECKPOINT_MAX_AGE_MS)) this.checkpoint();
  }

  private checkpoint(): void {
    if (this.checkpointing || this.h.stopping()) return;
    const kv = this.h.kv();
    // Past its limit the WAL is only started over with applies held back (KvStore.walPastLimit).
    const whole = kv.walPastLimit();
    const start = process.hrtime.bigint();
    this.checkpointing = (whole ? this.withAppliesHeld(() => kv.checkpointAsync()) : kv.checkpointAsync())
      .then(
        (durable) => {
          this.h.observeCheckpoint(Number(process.hrtime.bigint() - start) / 1e9);
          this.kvDurable = Math.max(this.kvDurable, durable);
        },
        (e: Error) => {
          // A store replaced by a leader's snapshot meanwhile, or closing: nothing was claimed durable.
          if (this.h.stopping() || kv !== this.h.kv()) return this.h.log.warn({ error: e.message }, 'KV checkpoint failed');
          // After a failed fsync the kernel may drop the pages and report the next fsync clean:
          // a later checkpoint would call them durable and the log be compacted past them.
          // Stop, as etcd does when its backend cannot commit; the log replays what kv.db lacks.
          this.h.fatal(new Error(`kv.db checkpoint failed: ${e.message}`));
        },
      )
      .finally(() => {
        this.checkpointing = undefined;
        this.lastCheckpointAt = Date.now();
      });
  }
}
