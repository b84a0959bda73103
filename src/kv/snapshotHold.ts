// Worker side of a streamed snapshot (readWorker.ts): a read transaction held on
// its own connection, under which the database *file* holds exactly the state that
// read sees, so the member's thread can stream the file's pages as they are (no
// copy, no rebuild; snapshotSource.ts).
//
// Why the file alone is consistent: a read transaction pins the WAL frames it may
// see (at most its "read mark"), and no checkpoint copies a frame past that mark
// into the file while the read is held. So: begin the read, then checkpoint; if
// the checkpoint copied every frame the WAL had (log == checkpointed), the file
// holds every frame up to the read's mark and none after it. (A read begun on a
// fully copied WAL reads the file alone, and then no checkpoint may write to the
// file at all: the same holds.) A commit can land between the read's start and the
// checkpoint; then try again, and after a few tries hold off writers for the two
// steps (BEGIN IMMEDIATE on a third connection), which always succeeds unless
// another reader pins older frames.

import type Database from 'better-sqlite3';
import { openSqlite } from '../common/sqlite.js';

export interface HeldSnapshot {
  id: number;
  pageSize: number;
  pageCount: number;
  appliedIndex: number;
  appliedTerm: number;
  revision: number;
  compactRevision: number;
}

interface StateRow {
  applied_index: number;
  applied_term: number;
  current_revision: number;
  compact_revision: number;
}

/** Tries without holding off writers, then with; a pause between tries lets a member's reader finish. */
const TRIES_FREE = 3;
const TRIES_LOCKED = 5;
const PAUSE_MS = 20;

const holds = new Map<number, Database.Database>();
let nextId = 1;

/** Begins a held read of the database at `path` whose state the file holds; `checkpointer` is the worker's own connection. */
export function holdSnapshot(checkpointer: Database.Database, path: string): HeldSnapshot {
  const reader = openSqlite(path, { fileMustExist: true });
  let locker: Database.Database | undefined;
  try {
    for (let i = 0; i < TRIES_FREE + TRIES_LOCKED; i++) {
      if (i > 0) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, PAUSE_MS);
      if (i >= TRIES_FREE) {
        locker ??= openSqlite(path, { fileMustExist: true });
        locker.exec('BEGIN IMMEDIATE');
      }
      try {
        const held = tryHold(reader, checkpointer);
        if (held) {
          const id = nextId++;
          holds.set(id, reader);
          return { id, ...held };
        }
      } finally {
        if (locker?.inTransaction) locker.exec('ROLLBACK');
      }
    }
    throw new Error(`kv: no consistent read of ${path} for a snapshot: another reader keeps the WAL from being checkpointed; try again`);
  } catch (e) {
    if (reader.inTransaction) reader.exec('ROLLBACK');
    reader.close();
    throw e;
  } finally {
    locker?.close();
  }
}

function tryHold(reader: Database.Database, checkpointer: Database.Database): Omit<HeldSnapshot, 'id'> | undefined {
  const held = beginHeldRead(reader);
  const [r] = checkpointer.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
  if (r.log !== r.checkpointed) {
    reader.exec('ROLLBACK');
    return undefined;
  }
  return held;
}

/**
 * Begins a read transaction on `reader` and returns the state it sees, fixed from
 * here. The caller makes sure the file holds that state (see above).
 */
export function beginHeldRead(reader: Database.Database): Omit<HeldSnapshot, 'id'> {
  reader.exec('BEGIN');
  // The first read starts the transaction.
  const s = reader.prepare('SELECT applied_index, applied_term, current_revision, compact_revision FROM state').get() as StateRow;
  return {
    pageSize: reader.pragma('page_size', { simple: true }) as number,
    pageCount: reader.pragma('page_count', { simple: true }) as number,
    appliedIndex: s.applied_index,
    appliedTerm: s.applied_term,
    revision: s.current_revision,
    compactRevision: s.compact_revision,
  };
}

/** Ends a held read (unknown ids: already released). */
export function releaseSnapshot(id: number): void {
  const reader = holds.get(id);
  if (!reader) return;
  holds.delete(id);
  reader.close();
}

/** Ends every held read: the store is closing, and its file may be replaced next. */
export function releaseAllSnapshots(): void {
  for (const id of [...holds.keys()]) releaseSnapshot(id);
}
