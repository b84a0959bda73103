// The shape of a bbolt file, found with our own reader, so tests can aim damage at
// real structures: the `key` bucket's root and a branch below it, which buckets
// are inline, which pages carry overflow, every reachable page.
import { BoltDb } from '../../src/etcdfile/boltDb.js';
import type { BucketRef, PageTracker } from '../../src/etcdfile/bucketCursor.js';
import { branchElement } from '../../src/etcdfile/pageElements.js';
import { BRANCH_PAGE, type Page } from '../../src/etcdfile/pageFile.js';

export interface Layout {
  pageSize: number;
  pgid: number;
  /** Every page reachable from the chosen meta (meta pages included). */
  reachable: number[];
  inlineBuckets: string[];
  /** Pages with overflow > 0. */
  overflowPages: number[];
  keyRoot: Page;
  /** Tree depth of bucket `key` (1 = a single leaf). */
  keyDepth: number;
}

export function layoutOf(file: string): Layout {
  const db = BoltDb.open(file);
  try {
    const tracker: PageTracker = new Map([
      [0, 0],
      [1, 1],
    ]);
    const inline: string[] = [];
    const walk = (b: BucketRef) => {
      if (b.inline) inline.push(b.name);
      for (const e of db.entries(b, tracker)) if (e.isBucket) walk(db.bucketOf(b, e));
    };
    walk(db.root());
    const reachable = [...tracker.keys()].sort((a, b) => a - b);
    const overflowPages: number[] = [];
    for (let i = 0; i < reachable.length; i++) {
      const id = reachable[i];
      if (id < 2 || (db.meta.freelist < db.meta.pgid && id === Number(db.meta.freelist))) continue;
      const p = db.pages.page(id, 'test');
      if (p.overflow > 0) overflowPages.push(id);
      i += p.overflow; // the run's other pages have no header
    }
    const key = db.bucket('key');
    if (!key || key.inline) throw new Error('bucket key is inline or missing: fill more keys');
    const keyRoot = db.pages.page(key.root, 'test');
    let depth = 1;
    for (let p = keyRoot; p.flags === BRANCH_PAGE; depth++) p = db.pages.page(branchElement(file, p, 0).child, 'test');
    return { pageSize: db.pageSize, pgid: Number(db.meta.pgid), reachable, inlineBuckets: inline, overflowPages, keyRoot, keyDepth: depth };
  } finally {
    db.close();
  }
}

/** A branch page one level below the key bucket's root branch (needs depth >= 3). */
export function childBranchOfKeyRoot(file: string, l: Layout): Page {
  const db = BoltDb.open(file);
  try {
    const child = db.pages.page(branchElement(file, l.keyRoot, 0).child, 'test');
    if (child.flags !== BRANCH_PAGE) throw new Error(`page ${child.id} below the key root is not a branch: fill more keys`);
    return child;
  } finally {
    db.close();
  }
}
