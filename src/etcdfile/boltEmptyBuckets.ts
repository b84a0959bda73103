// Empties top-level buckets of a bbolt file in place: the one write this package
// makes, to a scratch copy only. etcd 3.4's `etcdctl snapshot restore` keeps the
// backend's `members` bucket as the source had it (3.5's etcdutl trims it), so a
// restored member's db would keep every old member's record, the replay member's
// included, next to the new ones (src/recovery/etcdRestore.ts empties it first).
// Pages are rewritten where they are (bbolt checksums only its meta pages):
// an inline bucket's value becomes an empty inline page in its parent's leaf (never
// longer than before), a bucket with its own root page gets an empty leaf there
// (pages below it are left unreachable, which bbolt tolerates).
import fs from 'node:fs';
import { BoltDb } from './boltDb.js';
import { BoltFormatError } from './boltErrors.js';
import { BRANCH_PAGE, LEAF_PAGE, PAGE_HEADER_SIZE, type Page } from './pageFile.js';
import { BUCKET_HEADER_SIZE, BUCKET_LEAF_FLAG, ELEMENT_SIZE, branchElement, checkElementCount, leafElement } from './pageElements.js';

interface Element {
  flags: number;
  key: Buffer;
  value: Buffer;
}

/** A leaf page's bytes (same id, overflow and length) holding `elements`. */
function leafBytes(page: Page, elements: Element[]): Buffer {
  const out = Buffer.alloc(page.data.length);
  out.writeBigUInt64LE(BigInt(page.id), 0);
  out.writeUInt16LE(LEAF_PAGE, 8);
  out.writeUInt16LE(elements.length, 10);
  out.writeUInt32LE(page.overflow, 12);
  let at = PAGE_HEADER_SIZE + elements.length * ELEMENT_SIZE;
  elements.forEach((e, i) => {
    const el = PAGE_HEADER_SIZE + i * ELEMENT_SIZE;
    out.writeUInt32LE(e.flags, el);
    out.writeUInt32LE(at - el, el + 4);
    out.writeUInt32LE(e.key.length, el + 8);
    out.writeUInt32LE(e.value.length, el + 12);
    at += e.key.copy(out, at);
    at += e.value.copy(out, at);
  });
  return out;
}

/** An empty inline bucket's value: its header (root 0, the sequence kept) and a leaf page header with no elements. */
function emptyInlineValue(old: Buffer): Buffer {
  const v = Buffer.alloc(BUCKET_HEADER_SIZE + PAGE_HEADER_SIZE);
  old.copy(v, 8, 8, 16);
  v.writeUInt16LE(LEAF_PAGE, BUCKET_HEADER_SIZE + 8);
  return v;
}

/** The leaf page of the root bucket that holds (or would hold) `key`. */
function rootLeafFor(db: BoltDb, key: Buffer): Page {
  let page = db.pages.page(db.meta.rootPage, 'the root bucket');
  for (let depth = 0; page.flags === BRANCH_PAGE; depth++) {
    if (depth > 32) throw new BoltFormatError(db.file, 'the root bucket is more than 32 levels deep', page.id, page.fileOffset);
    checkElementCount(db.file, page);
    let child = branchElement(db.file, page, 0).child;
    for (let i = 1; i < page.count; i++) {
      const e = branchElement(db.file, page, i);
      if (Buffer.compare(e.key, key) > 0) break;
      child = e.child;
    }
    page = db.pages.page(child, `root bucket branch page ${page.id}`);
  }
  if (page.flags !== LEAF_PAGE)
    throw new BoltFormatError(db.file, 'the root bucket leads to a page that is neither branch nor leaf', page.id, page.fileOffset + 8);
  checkElementCount(db.file, page);
  return page;
}

/**
 * Empties each named top-level bucket of `file` (a bbolt file no process has
 * open); a name the file has no bucket for is skipped. Returns the names emptied.
 */
export function emptyBoltBuckets(file: string, names: string[]): string[] {
  // Leaf pages to rewrite, by page id: both buckets may sit in the same page.
  const leaves = new Map<number, { page: Page; elements: Element[] }>();
  const emptied: string[] = [];
  const db = BoltDb.open(file);
  try {
    for (const name of names) {
      const key = Buffer.from(name);
      const page = rootLeafFor(db, key);
      const leaf = leaves.get(page.id) ?? {
        page,
        elements: Array.from({ length: page.count }, (_, i) => {
          const e = leafElement(db.file, page, i);
          return { flags: e.flags, key: Buffer.from(e.key), value: Buffer.from(e.value) };
        }),
      };
      const target = leaf.elements.find((e) => e.key.equals(key) && (e.flags & BUCKET_LEAF_FLAG) !== 0);
      if (!target || target.value.length < BUCKET_HEADER_SIZE) continue;
      const root = target.value.readBigUInt64LE(0);
      if (root === 0n) {
        target.value = emptyInlineValue(target.value);
        leaves.set(page.id, leaf);
      } else {
        const own = db.pages.page(root, `bucket ${name}'s root`);
        leaves.set(own.id, { page: own, elements: [] });
      }
      emptied.push(name);
    }
  } finally {
    db.close();
  }
  if (leaves.size === 0) return emptied;
  const fd = fs.openSync(file, 'r+');
  try {
    for (const { page, elements } of leaves.values()) {
      const bytes = leafBytes(page, elements);
      fs.writeSync(fd, bytes, 0, bytes.length, page.fileOffset);
    }
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return emptied;
}
