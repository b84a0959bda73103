// Snapshots of a live store: written to a file by the worker, or streamed from a
// read held open while applies go on (snapshotHold.ts, snapshotSource.ts).

import type Database from 'better-sqlite3';
import { openSqlite } from '../common/sqlite.js';
import type { Checkpoints } from './checkpoints.js';
import { beginHeldRead, type HeldSnapshot } from './snapshotHold.js';
import { snapshotSource, type KvSnapshotSource } from './snapshotSource.js';
import type { StoreCore } from './storeCore.js';
import type { KvSnapshotInfo } from './types.js';

export class StoreSnapshots {
  /** Streamed snapshots' reads held on this thread (holdHere), each on a connection of its own. */
  private readonly heldHere = new Set<Database.Database>();

  constructor(
    private readonly core: StoreCore,
    private readonly checkpoints: Checkpoints,
    private readonly defragmenting: () => Promise<void> | undefined,
  ) {}

  /** See KvStore.saveSnapshot. */
  save(dest: string): Promise<KvSnapshotInfo> {
    const { core } = this;
    core.assertOpen();
    if (core.inMemory) return Promise.reject(new Error('kv: an in-memory store cannot be snapshotted'));
    return core.job({ kind: 'snapshot', dbPath: core.path, dest }) as Promise<KvSnapshotInfo>;
  }

  /** See KvStore.openSnapshot. */
  async open(): Promise<KvSnapshotSource> {
    const { core } = this;
    core.assertOpen();
    if (core.inMemory) throw new Error('kv: an in-memory store cannot be snapshotted');
    const here = await this.holdHere();
    if (here) return here;
    // Commits kept landing: the worker holds writers off for the two steps (snapshotHold.ts).
    const held = (await core.job({ kind: 'hold', dbPath: core.path })) as HeldSnapshot;
    const stillHeld = core.jobs.holding();
    const release = () => {
      if (stillHeld()) core.jobs.run({ kind: 'release', dbPath: core.path, id: held.id }).catch(() => undefined);
    };
    return snapshotSource(core.path, held, stillHeld, release);
  }

  /** A snapshot streamed from a read held here throws before its trailer. */
  close(): void {
    for (const reader of this.heldHere) reader.close();
    this.heldHere.clear();
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
    const { core } = this;
    // Syncs nothing when nothing was committed since the last complete one.
    await this.checkpoints.run();
    core.assertOpen();
    core.tx.commit();
    if (this.defragmenting() || !this.checkpoints.upToDate()) return undefined;
    const reader = openSqlite(core.path, { fileMustExist: true });
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
    return snapshotSource(core.path, { id: 0, ...held }, () => !core.closed && reader.open, release);
  }
}
