// Making a store's applies durable: its WAL fsynced, or checkpointed into the
// database file with the fsyncs in libuv's pool (KvStore.checkpointAsync). With
// synchronous=NORMAL SQLite leaves the WAL unsynced between checkpoints, so the
// Raft log may be compacted only up to the applied index one of these returns.

import { statSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { openSqlite } from '../common/sqlite.js';
import { fsyncFile, fsyncFileAsync } from './fsyncFile.js';
import { KV_WAL_LIMIT_BYTES } from './kvSchema.js';
import type { StoreCore } from './storeCore.js';
import type { CheckpointResult } from './types.js';

export class Checkpoints {
  /** Rows this connection changed since it opened: the store's only writer, so unchanged means nothing was committed. */
  private readonly totalChangesStmt: Database.Statement;
  /**
   * The last checkpoint that copied the whole WAL: total_changes() read before it,
   * and the applied index it made durable. While total_changes() is the same,
   * a checkpoint has nothing to do and syncs nothing.
   */
  private last: { changes: number; appliedIndex: number } | undefined;
  /** The tail of the checkpoints asked for: they run one after another. */
  private tail: Promise<unknown> = Promise.resolve();
  /** A second connection whose read transaction pins the WAL while a checkpoint is made durable. */
  private pin: { db: Database.Database; appliedIndex: Database.Statement } | undefined;

  constructor(
    private readonly core: StoreCore,
    /** The defragment running in the worker, which holds the write lock meanwhile. */
    private readonly defragmenting: () => Promise<void> | undefined,
    /** Test hooks (KvStoreKnobs). */
    private readonly knobs: { onCheckpoint?(r: CheckpointResult): void },
  ) {
    this.totalChangesStmt = core.db.prepare(`SELECT total_changes()`).pluck();
  }

  /** See KvStore.makeDurable. */
  makeDurable(): number {
    const { core } = this;
    core.assertOpen();
    core.tx.commit();
    if (!core.inMemory) {
      fsyncFile(`${core.path}-wal`);
      fsyncFile(core.path);
    }
    return core.state.appliedIndex;
  }

  /** See KvStore.checkpointAsync. */
  run(): Promise<number> {
    // One at a time: each holds the pin connection's read across its fsyncs, and a
    // second BEGIN on it fails. The member's timer and a snapshot's start both call this.
    const run = this.tail.then(() => this.checkpointNow());
    this.tail = run.catch(() => undefined);
    return run;
  }

  /** Whether nothing was committed since the last checkpoint that copied the whole WAL. */
  upToDate(): boolean {
    return this.last?.changes === this.changes();
  }

  /** Rows this store changed since the last checkpoint that copied the whole WAL (since open, before the first). */
  changesSince(): number {
    return this.changes() - (this.last?.changes ?? 0);
  }

  /** The file changed without changing rows (VACUUM): the next checkpoint must not take the store for unchanged. */
  forget(): void {
    this.last = undefined;
  }

  /** See KvStore.walPastLimit. */
  walPastLimit(): boolean {
    if (this.core.inMemory) return false;
    try {
      return statSync(`${this.core.path}-wal`).size > KV_WAL_LIMIT_BYTES;
    } catch {
      return false;
    }
  }

  /** A checkpoint in flight lets go of its pin (its transaction is rolled back) and fails. */
  close(): void {
    this.pin?.db.close();
  }

  private changes(): number {
    return this.totalChangesStmt.get() as number;
  }

  private async checkpointNow(): Promise<number> {
    const { core } = this;
    core.assertOpen();
    if (core.inMemory) return core.state.appliedIndex;
    // The worker holds the write lock meanwhile: copy after it, not beside it.
    await this.defragmenting()?.catch(() => undefined);
    core.assertOpen();
    core.tx.commit();
    const changes = this.changes();
    const last = this.last;
    if (last?.changes === changes) {
      this.knobs.onCheckpoint?.({ appliedIndex: last.appliedIndex, synced: false, complete: true });
      return last.appliedIndex;
    }
    const r = await this.pinnedCheckpoint();
    // Commits after `changes` was read may be in this checkpoint too: then the next one runs again, for nothing.
    this.last = r.complete ? { changes, appliedIndex: r.appliedIndex } : undefined;
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
    const { core } = this;
    this.pin ??= (() => {
      const db = openSqlite(core.path, { fileMustExist: true });
      return { db, appliedIndex: db.prepare('SELECT applied_index FROM state').pluck() };
    })();
    const pin = this.pin.db;
    pin.exec('BEGIN');
    try {
      const appliedIndex = this.pin.appliedIndex.get() as number;
      await fsyncFileAsync(`${core.path}-wal`);
      core.assertOpen();
      // A held transaction of this connection would make the checkpoint fail as locked.
      core.tx.commit();
      core.db.pragma('synchronous = OFF');
      let r: { busy: number; log: number; checkpointed: number };
      try {
        [r] = core.db.pragma('wal_checkpoint(PASSIVE)') as (typeof r)[];
      } finally {
        core.db.pragma('synchronous = NORMAL');
      }
      await fsyncFileAsync(core.path);
      core.assertOpen();
      return { appliedIndex, synced: true, complete: r.checkpointed === r.log };
    } finally {
      if (pin.open && pin.inTransaction) pin.exec('COMMIT');
    }
  }
}
