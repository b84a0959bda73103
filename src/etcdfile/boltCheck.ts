// What bbolt's tx.Check() verifies once every bucket has been walked with one
// shared PageTracker: no page is both reachable and free, none is freed twice,
// and, when a freelist is stored, every page is either reachable or free.

import { BoltFormatError } from './boltErrors.js';
import type { BoltDb } from './boltDb.js';
import type { PageTracker } from './bucketCursor.js';

/** A tracker with the meta pages (and a stored freelist's own pages) already counted. */
export function newTracker(db: BoltDb): PageTracker {
  const t: PageTracker = new Map([
    [0, 0],
    [1, 1],
  ]);
  for (const id of db.freelist()?.own ?? []) t.set(id, db.meta.page);
  return t;
}

/** Call after walking every bucket with `reachable`. Throws on the first fault. */
export function checkPageAccounting(db: BoltDb, reachable: PageTracker): void {
  const list = db.freelist();
  if (!list) return; // no stored freelist: bbolt rebuilds it from what is unreachable
  const freed = new Set<number>();
  for (const id of list.free) {
    if (freed.has(id)) throw new BoltFormatError(db.file, `page ${id} is on the freelist twice`, Number(db.meta.freelist));
    if (reachable.has(id)) throw new BoltFormatError(db.file, `page ${id} is on the freelist but still in use (referenced by page ${reachable.get(id)})`, id);
    freed.add(id);
  }
  const pages = Number(db.meta.pgid);
  for (let id = 2; id < pages; id++) {
    if (!reachable.has(id) && !freed.has(id)) throw new BoltFormatError(db.file, `page ${id} is neither in use nor on the freelist`, id, id * db.pageSize);
  }
}
