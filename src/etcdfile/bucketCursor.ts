// A forward cursor over one bbolt bucket: every key/value in key order, read page
// by page (depth-first over the bucket's B+tree with an explicit stack). Bounded:
// each page is entered at most once per walk, a page met again on the same descent
// is a cycle, and a page met again elsewhere is a double reference; each page has
// at most 0xFFFF elements. Keys must come out strictly ascending.

import { BoltFormatError } from './boltErrors.js';
import { BRANCH_PAGE, LEAF_PAGE, PAGE_HEADER_SIZE, inlinePage, pageTypeName, type Page, type PageFile } from './pageFile.js';
import { BUCKET_HEADER_SIZE, BUCKET_LEAF_FLAG, branchElement, checkElementCount, elementOffset, leafElement } from './pageElements.js';

/** Where a bucket's tree is: a root page, or an inline page inside its parent's value. */
export const ROOT_NAME = '(root)';

export interface BucketRef {
  /** Human-readable path, e.g. `key` or `a/b` (for errors). */
  name: string;
  /** Root page id; 0 for an inline bucket. */
  root: bigint;
  sequence: bigint;
  inline?: Page;
  /** Who points at this bucket (for errors): the page holding its header (the meta page for the root bucket), and where. */
  referrer: number;
  referrerOffset: number;
}

export interface BoltEntry {
  key: Buffer;
  /** For a nested bucket: its 16-byte header (+ inline page); see isBucket. */
  value: Buffer;
  isBucket: boolean;
  /** The page holding this element (for an inline bucket: the page holding the bucket's value). */
  pageId: number;
  /** File offset of the element. */
  offset: number;
  /** File offset of the value. */
  valueOffset: number;
}

/**
 * Page ids already entered, shared by the walks of one whole-file check so that a
 * page reachable from two places is caught; maps each page (and its overflow run)
 * to the page that pointed to it (a meta page points to the root bucket's root).
 */
export type PageTracker = Map<number, number>;

interface Frame {
  page: Page;
  index: number;
}

export class BucketCursor {
  constructor(private readonly pages: PageFile) {}

  /**
   * Every element of the bucket, in key order. Element buffers are views: copy what
   * you keep past the walk. Pass one tracker to several walks to check that no page
   * is shared between them.
   */
  *entries(bucket: BucketRef, tracker: PageTracker = new Map()): Generator<BoltEntry> {
    const file = this.pages.file;
    const stack: Frame[] = [];
    const onPath = new Set<number>();
    let prev: Buffer | undefined;
    if (bucket.inline) {
      const p = bucket.inline;
      if (p.flags !== LEAF_PAGE) {
        throw new BoltFormatError(file, `bucket ${bucket.name}: its inline page has type ${pageTypeName(p.flags)}, want leaf`, p.id, p.fileOffset + 8);
      }
      checkElementCount(file, p);
      stack.push({ page: p, index: 0 });
    } else {
      stack.push({ page: this.enter(bucket.root, bucket.referrer, `bucket ${bucket.name}'s root`, onPath, tracker, bucket.referrerOffset), index: 0 });
    }
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      const page = top.page;
      if (top.index >= page.count) {
        stack.pop();
        if (!page.inline) onPath.delete(page.id);
        continue;
      }
      const i = top.index++;
      if (page.flags === BRANCH_PAGE) {
        const el = branchElement(file, page, i);
        const child = this.enter(el.child, page.id, `branch page ${page.id} element ${i}`, onPath, tracker, elementOffset(page, i));
        stack.push({ page: child, index: 0 });
        continue;
      }
      const el = leafElement(file, page, i);
      if (prev && Buffer.compare(prev, el.key) >= 0) {
        throw new BoltFormatError(
          file,
          `bucket ${bucket.name}: key ${printable(el.key)} comes after ${printable(prev)}; keys are out of order`,
          page.id,
          elementOffset(page, i),
        );
      }
      prev = el.key;
      yield {
        key: el.key,
        value: el.value,
        isBucket: (el.flags & BUCKET_LEAF_FLAG) !== 0,
        pageId: page.id,
        offset: elementOffset(page, i),
        valueOffset: page.fileOffset + el.valueStart,
      };
    }
  }

  /** The nested bucket an entry with isBucket holds. */
  bucketOf(parent: BucketRef, e: BoltEntry): BucketRef {
    const text = /^[\x21-\x7e]{1,64}$/.test(e.key.toString('latin1')) ? e.key.toString('latin1') : printable(e.key);
    const name = parent.name === ROOT_NAME ? text : `${parent.name}/${text}`;
    if (e.value.length < BUCKET_HEADER_SIZE) {
      throw new BoltFormatError(
        this.pages.file,
        `bucket ${name}: its header is ${e.value.length} bytes, want at least ${BUCKET_HEADER_SIZE}`,
        e.pageId,
        e.valueOffset,
      );
    }
    const root = e.value.readBigUInt64LE(0);
    const sequence = e.value.readBigUInt64LE(8);
    if (root !== 0n) return { name, root, sequence, referrer: e.pageId, referrerOffset: e.valueOffset };
    const bytes = e.value.subarray(BUCKET_HEADER_SIZE);
    if (bytes.length < PAGE_HEADER_SIZE) {
      throw new BoltFormatError(this.pages.file, `inline bucket ${name}: ${bytes.length} bytes cannot hold a page header`, e.pageId, e.valueOffset);
    }
    return { name, root, sequence, inline: inlinePage(bytes, e.pageId, e.valueOffset + BUCKET_HEADER_SIZE), referrer: e.pageId, referrerOffset: e.valueOffset };
  }

  /** Reads a branch or leaf page that `from` points to, refusing cycles and double references. */
  private enter(id: bigint, from: number, ref: string, onPath: Set<number>, tracker: PageTracker, refOffset: number): Page {
    const file = this.pages.file;
    if (id <= 1n) {
      throw new BoltFormatError(file, `${ref} points to page ${id}, a meta page`, from, refOffset);
    }
    if (id >= BigInt(this.pages.highWater)) {
      throw new BoltFormatError(file, `${ref} points to page ${id}, outside the file's ${this.pages.highWater} pages`, from, refOffset);
    }
    const n = Number(id);
    if (onPath.has(n)) {
      throw new BoltFormatError(file, `cycle: ${ref} points back to page ${n}, already on the path from the bucket's root`, from, refOffset);
    }
    const earlier = tracker.get(n);
    if (earlier !== undefined) {
      throw new BoltFormatError(file, `${ref} points to page ${n}, which page ${earlier} already references (a page may be referenced once)`, from, refOffset);
    }
    const page = this.pages.page(id, ref);
    if (page.flags !== BRANCH_PAGE && page.flags !== LEAF_PAGE) {
      throw new BoltFormatError(file, `${ref} points to a page of type ${pageTypeName(page.flags)}, want branch or leaf`, page.id, page.fileOffset + 8);
    }
    if (page.flags === BRANCH_PAGE && page.count === 0) {
      throw new BoltFormatError(file, `branch page has no elements`, page.id, page.fileOffset + 10);
    }
    checkElementCount(file, page);
    for (let k = 0; k <= page.overflow; k++) {
      const other = tracker.get(page.id + k);
      if (k > 0 && other !== undefined) {
        throw new BoltFormatError(
          file,
          `page ${page.id}'s overflow run covers page ${page.id + k}, which page ${other} already references`,
          page.id,
          page.fileOffset + 12,
        );
      }
      tracker.set(page.id + k, from);
    }
    onPath.add(page.id);
    return page;
  }
}

/** A key as it appears in messages: text when printable, else hex. */
export function printable(key: Buffer): string {
  const short = key.subarray(0, 40);
  const text = /^[\x20-\x7e]*$/.test(short.toString('latin1')) ? JSON.stringify(short.toString('latin1')) : `0x${short.toString('hex')}`;
  return key.length > 40 ? `${text}…` : text;
}
