// A read-only bbolt database file: the chosen meta page, the root bucket and its
// nested buckets, cursors over them, and the freelist when one is stored. Opens
// nothing but one file descriptor; reads pages as they are needed.

import fs from 'node:fs';
import { BoltFormatError } from './boltErrors.js';
import { BucketCursor, ROOT_NAME, type BoltEntry, type BucketRef, type PageTracker } from './bucketCursor.js';
import { chooseMeta, NO_FREELIST, type BoltMeta } from './metaPage.js';
import { FREELIST_PAGE, PAGE_HEADER_SIZE, PageFile, pageTypeName } from './pageFile.js';

export interface BoltOpenOptions {
  /** Bytes of pages kept in memory (default 16 MiB). */
  cacheBytes?: number;
}

export class BoltDb {
  private readonly cursor: BucketCursor;
  private closed = false;

  private constructor(
    private readonly fd: number,
    readonly file: string,
    readonly fileSize: number,
    readonly meta: BoltMeta,
    /** Why the other meta page was not used, when it is damaged. */
    readonly otherMetaInvalid: string | undefined,
    readonly pages: PageFile,
  ) {
    this.cursor = new BucketCursor(pages);
  }

  static open(file: string, opts: BoltOpenOptions = {}): BoltDb {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const { meta, otherInvalid } = chooseMeta(fd, file, size);
      const pages = new PageFile(fd, file, meta.pageSize, Number(meta.pgid), opts.cacheBytes);
      return new BoltDb(fd, file, size, meta, otherInvalid, pages);
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    fs.closeSync(this.fd);
  }

  get pageSize(): number {
    return this.meta.pageSize;
  }

  /** bbolt's tx.Size(): meta.pgid × pageSize (what etcd reports as the snapshot's size). */
  get size(): number {
    return Number(this.meta.pgid) * this.meta.pageSize;
  }

  /** The root bucket: its elements are the top-level buckets. */
  root(): BucketRef {
    return {
      name: ROOT_NAME,
      root: this.meta.rootPage,
      sequence: this.meta.rootSequence,
      referrer: this.meta.page,
      referrerOffset: this.meta.page * this.meta.pageSize + 32,
    };
  }

  /** The elements of a bucket in key order (see BucketCursor.entries). */
  entries(bucket: BucketRef, tracker?: PageTracker): Generator<BoltEntry> {
    return this.cursor.entries(bucket, tracker);
  }

  /** The bucket a nested-bucket element holds. */
  bucketOf(parent: BucketRef, e: BoltEntry): BucketRef {
    return this.cursor.bucketOf(parent, e);
  }

  /** A top-level bucket by name, or undefined. */
  bucket(name: string): BucketRef | undefined {
    const want = Buffer.from(name);
    const root = this.root();
    for (const e of this.entries(root)) {
      const c = Buffer.compare(e.key, want);
      if (c > 0) return undefined;
      if (c === 0) {
        if (!e.isBucket) throw new BoltFormatError(this.file, `top-level key "${name}" is not a bucket`, e.pageId, e.offset);
        return this.bucketOf(root, e);
      }
    }
    return undefined;
  }

  /**
   * The free page ids the stored freelist names, and the pages the freelist itself
   * takes; undefined when none is stored (etcd on Linux sets NoFreelistSync: free
   * pages are then the unreachable ones).
   */
  freelist(): { free: number[]; own: number[] } | undefined {
    if (this.meta.freelist === NO_FREELIST) return undefined;
    const p = this.pages.page(this.meta.freelist, `meta page ${this.meta.page}'s freelist`);
    if (p.flags !== FREELIST_PAGE) {
      throw new BoltFormatError(this.file, `the freelist page has type ${pageTypeName(p.flags)}, want freelist`, p.id, p.fileOffset + 8);
    }
    let start = PAGE_HEADER_SIZE;
    let count = p.count;
    if (count === 0xffff) {
      if (p.data.length < start + 8) throw new BoltFormatError(this.file, 'freelist page too short for its count', p.id, p.fileOffset);
      const big = p.data.readBigUInt64LE(start);
      count = big > BigInt(p.data.length) ? p.data.length : Number(big);
      start += 8;
    }
    if (start + count * 8 > p.data.length) {
      throw new BoltFormatError(this.file, `freelist says it holds ${count} page ids, more than fit its ${p.data.length} bytes`, p.id, p.fileOffset + 10);
    }
    const free: number[] = [];
    for (let i = 0; i < count; i++) {
      const id = p.data.readBigUInt64LE(start + 8 * i);
      if (id < 2n || id >= this.meta.pgid) {
        throw new BoltFormatError(
          this.file,
          `freelist entry ${i} names page ${id}, outside pages 2..${this.meta.pgid - 1n}`,
          p.id,
          p.fileOffset + start + 8 * i,
        );
      }
      free.push(Number(id));
    }
    const own: number[] = [];
    for (let k = 0; k <= p.overflow; k++) own.push(p.id + k);
    return { free, own };
  }
}
