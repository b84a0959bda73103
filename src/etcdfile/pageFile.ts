// Pages of a bbolt file, read on demand with positioned reads from one file
// descriptor (a 1 GB file is never loaded whole), through a small LRU cache bounded
// in bytes. Every page is checked as it is read: its id within the high-water
// mark, the id in its header equal to the id asked for, its overflow run inside
// the file. Buffers are never reused, so views into a page stay valid after it
// leaves the cache.

import fs from 'node:fs';
import { BoltFormatError } from './boltErrors.js';
import { PAGE_HEADER_SIZE } from './metaPage.js';

export const BRANCH_PAGE = 0x01;
export const LEAF_PAGE = 0x02;
export const META_PAGE = 0x04;
export const FREELIST_PAGE = 0x10;

/** A page as read from the file: its header fields and its bytes (header included). */
export interface Page {
  id: number;
  flags: number;
  count: number;
  overflow: number;
  /** (overflow + 1) × pageSize bytes, or the inline page's bytes. */
  data: Buffer;
  /** File offset of data[0] (for an inline page, inside its container's bytes). */
  fileOffset: number;
  /** An inline bucket's page, carried in its parent's value; `id` is then the page holding that value. */
  inline: boolean;
}

export function pageTypeName(flags: number): string {
  switch (flags) {
    case BRANCH_PAGE:
      return 'branch';
    case LEAF_PAGE:
      return 'leaf';
    case META_PAGE:
      return 'meta';
    case FREELIST_PAGE:
      return 'freelist';
    default:
      return `unknown (flags 0x${flags.toString(16)})`;
  }
}

const DEFAULT_CACHE_BYTES = 16 * 1024 * 1024;
/** One page with its overflow run: bbolt allows values up to 2 GiB, etcd sends at most its request limit (1.5 MiB by default). */
const MAX_OVERFLOW_BYTES = 512 * 1024 * 1024;

export class PageFile {
  private readonly cache = new Map<number, Page>();
  private cachedBytes = 0;
  /** Pages read from disk (cache misses), for tests and diagnostics. */
  reads = 0;

  constructor(
    private readonly fd: number,
    readonly file: string,
    readonly pageSize: number,
    /** meta.pgid: pages 0..highWater-1 exist. */
    readonly highWater: number,
    private readonly cacheBytes = DEFAULT_CACHE_BYTES,
  ) {}

  offsetOf(id: number): number {
    return id * this.pageSize;
  }

  /**
   * Reads page `id` (with its overflow run). `ref` names who pointed at it, for the
   * error message when `id` is out of range.
   */
  page(id: bigint | number, ref: string): Page {
    if (typeof id === 'bigint') {
      if (id < 0n || id >= BigInt(this.highWater)) throw this.outOfRange(id, ref);
      id = Number(id);
    } else if (!Number.isSafeInteger(id) || id < 0 || id >= this.highWater) {
      throw this.outOfRange(BigInt(id), ref);
    }
    const hit = this.cache.get(id);
    if (hit) {
      this.cache.delete(id);
      this.cache.set(id, hit);
      return hit;
    }
    const offset = this.offsetOf(id);
    const head = this.readExactly(offset, this.pageSize, id);
    const headerId = head.readBigUInt64LE(0);
    if (headerId !== BigInt(id)) {
      throw new BoltFormatError(this.file, `page header says page ${headerId}, but it was read as page ${id} (${ref})`, id, offset);
    }
    const flags = head.readUInt16LE(8);
    const count = head.readUInt16LE(10);
    const overflow = head.readUInt32LE(12);
    if (overflow > MAX_OVERFLOW_BYTES / this.pageSize) {
      throw new BoltFormatError(
        this.file,
        `page claims ${overflow} overflow pages (${(overflow + 1) * this.pageSize} bytes), more than this reader accepts (${MAX_OVERFLOW_BYTES} bytes)`,
        id,
        offset + 12,
      );
    }
    if (id + overflow >= this.highWater) {
      throw new BoltFormatError(this.file, `page overflows by ${overflow} pages, past the high-water mark of ${this.highWater} pages`, id, offset + 12);
    }
    const data = overflow === 0 ? head : Buffer.concat([head, this.readExactly(offset + this.pageSize, overflow * this.pageSize, id)]);
    const page: Page = { id, flags, count, overflow, data, fileOffset: offset, inline: false };
    this.reads++;
    this.remember(page);
    return page;
  }

  private outOfRange(id: bigint, ref: string): BoltFormatError {
    return new BoltFormatError(this.file, `${ref} points to page ${id}, outside the file's ${this.highWater} pages`);
  }

  private readExactly(offset: number, length: number, id: number): Buffer {
    const buf = Buffer.alloc(length);
    let done = 0;
    // Bounded: each pass reads at least one byte or stops.
    while (done < length) {
      const n = fs.readSync(this.fd, buf, done, length - done, offset + done);
      if (n === 0) throw new BoltFormatError(this.file, `the file ends inside this page (wanted ${length} bytes at ${offset})`, id, offset + done);
      done += n;
    }
    return buf;
  }

  private remember(page: Page): void {
    const size = page.data.length;
    if (size > this.cacheBytes) return;
    this.cache.set(page.id, page);
    this.cachedBytes += size;
    for (const [oldId, old] of this.cache) {
      if (this.cachedBytes <= this.cacheBytes) break;
      this.cache.delete(oldId);
      this.cachedBytes -= old.data.length;
    }
  }
}

/**
 * The page held in an inline bucket's value (after its 16-byte bucket header).
 * `containerId` is the real page the value lives in (named in errors).
 */
export function inlinePage(pageBytes: Buffer, containerId: number, fileOffset: number): Page {
  const value = pageBytes;
  return {
    id: containerId,
    flags: value.readUInt16LE(8),
    count: value.readUInt16LE(10),
    overflow: value.readUInt32LE(12),
    data: value,
    fileOffset,
    inline: true,
  };
}

export { PAGE_HEADER_SIZE };
