// bbolt's two meta pages (pages 0 and 1): magic, version, page size, the root
// bucket, the freelist, the high-water mark and the transaction id, guarded by an
// FNV-1a 64 checksum over the meta's first 56 bytes. Integers are little-endian
// (bbolt writes them in native order; every platform etcd ships on is little-endian).

import fs from 'node:fs';
import { BoltFormatError } from './boltErrors.js';

export const BOLT_MAGIC = 0xed0cdaed;
export const BOLT_VERSION = 2;
export const PAGE_HEADER_SIZE = 16;
export const META_SIZE = 64;
export const NO_FREELIST = 0xffff_ffff_ffff_ffffn;
export const META_PAGE_FLAG = 0x04;

const MIN_PAGE_SIZE = 512;
const MAX_PAGE_SIZE = 1 << 24;

export interface BoltMeta {
  /** 0 or 1: which meta page this is. */
  page: number;
  pageSize: number;
  flags: number;
  rootPage: bigint;
  rootSequence: bigint;
  /** NO_FREELIST when the freelist is not stored (etcd on Linux: NoFreelistSync). */
  freelist: bigint;
  /** High-water mark: the number of pages in use; tx.Size() = pgid × pageSize. */
  pgid: bigint;
  txid: bigint;
  checksum: bigint;
}

const FNV_OFFSET = 0xcbf2_9ce4_8422_2325n;
const FNV_PRIME = 0x100_0000_01b3n;
const MASK64 = 0xffff_ffff_ffff_ffffn;

/** FNV-1a, 64 bits (Go's hash/fnv New64a). */
export function fnv1a64(bytes: Uint8Array): bigint {
  let h = FNV_OFFSET;
  for (const b of bytes) h = ((h ^ BigInt(b)) * FNV_PRIME) & MASK64;
  return h;
}

/**
 * Decodes and validates the meta in `page` (a buffer holding the page from its
 * header on). Returns the meta, or the reason it is not valid.
 */
export function decodeMeta(page: Buffer, pageIndex: number): BoltMeta | string {
  if (page.length < PAGE_HEADER_SIZE + META_SIZE) return `only ${page.length} bytes, a meta page needs ${PAGE_HEADER_SIZE + META_SIZE}`;
  const m = PAGE_HEADER_SIZE;
  const magic = page.readUInt32LE(m);
  if (magic !== BOLT_MAGIC) return `bad magic 0x${magic.toString(16).padStart(8, '0')} (want 0xed0cdaed)`;
  const version = page.readUInt32LE(m + 4);
  if (version !== BOLT_VERSION) return `bbolt version ${version} (want ${BOLT_VERSION})`;
  const checksum = page.readBigUInt64LE(m + 56);
  const computed = fnv1a64(page.subarray(m, m + 56));
  if (checksum !== computed) return `bad checksum 0x${checksum.toString(16)} (computed 0x${computed.toString(16)})`;
  const flags = page.readUInt16LE(8);
  if ((flags & META_PAGE_FLAG) === 0) return `page flags 0x${flags.toString(16)} are not a meta page's (0x04)`;
  return {
    page: pageIndex,
    pageSize: page.readUInt32LE(m + 8),
    flags: page.readUInt32LE(m + 12),
    rootPage: page.readBigUInt64LE(m + 16),
    rootSequence: page.readBigUInt64LE(m + 24),
    freelist: page.readBigUInt64LE(m + 32),
    pgid: page.readBigUInt64LE(m + 40),
    txid: page.readBigUInt64LE(m + 48),
    checksum,
  };
}

export interface ChosenMeta {
  meta: BoltMeta;
  /** Why the other meta page was not used, when it was invalid. */
  otherInvalid?: string;
}

function readAt(fd: number, length: number, position: number): Buffer {
  const buf = Buffer.alloc(length);
  const n = fs.readSync(fd, buf, 0, length, position);
  return buf.subarray(0, n);
}

function isPowerOfTwo(n: number): boolean {
  return n > 0 && (n & (n - 1)) === 0;
}

/**
 * Finds the page size and picks the meta to use, as bbolt does: meta 0 at offset 0
 * names the page size; if it is invalid, meta 1 is probed at 1024<<i for i = 0..14.
 * Of the two metas, the valid one with the higher txid wins. Checks the chosen
 * meta against the file's size (a truncated file fails here).
 */
export function chooseMeta(fd: number, file: string, fileSize: number): ChosenMeta {
  if (fileSize < PAGE_HEADER_SIZE + META_SIZE) {
    throw new BoltFormatError(file, `only ${fileSize} bytes: too short for a bbolt file`, undefined, 0);
  }
  const first = decodeMeta(readAt(fd, Math.min(4096, fileSize), 0), 0);
  let pageSize: number | undefined;
  let meta1: BoltMeta | string | undefined;
  if (typeof first !== 'string' && isPowerOfTwo(first.pageSize) && first.pageSize >= MIN_PAGE_SIZE && first.pageSize <= MAX_PAGE_SIZE) {
    pageSize = first.pageSize;
  } else {
    for (let i = 0; i <= 14 && pageSize === undefined; i++) {
      const size = 1024 << i;
      if (size + PAGE_HEADER_SIZE + META_SIZE > fileSize) break;
      const m = decodeMeta(readAt(fd, PAGE_HEADER_SIZE + META_SIZE, size), 1);
      if (typeof m !== 'string' && m.pageSize === size) {
        pageSize = size;
        meta1 = m;
      }
    }
  }
  if (pageSize === undefined) {
    const why = typeof first === 'string' ? first : `page size ${first.pageSize} is not a power of two between ${MIN_PAGE_SIZE} and ${MAX_PAGE_SIZE}`;
    // Say why meta page 1 failed where it most likely is: at the page size meta 0
    // names, if it names a plausible one, else at 4096.
    const claimed = fileSize >= 28 ? readAt(fd, 4, 24).readUInt32LE(0) : 0;
    const guess = isPowerOfTwo(claimed) && claimed >= MIN_PAGE_SIZE && claimed <= MAX_PAGE_SIZE ? claimed : 4096;
    const second =
      guess + PAGE_HEADER_SIZE + META_SIZE <= fileSize ? decodeMeta(readAt(fd, PAGE_HEADER_SIZE + META_SIZE, guess), 1) : 'beyond the end of the file';
    const secondWhy = typeof second === 'string' ? second : `page size ${second.pageSize} differs from its offset`;
    throw new BoltFormatError(
      file,
      `${typeof first === 'string' && first.startsWith('bad magic') ? 'not a bbolt file, or ' : ''}both meta pages are invalid: meta page 0: ${why}; meta page 1 (at page size ${guess}): ${secondWhy}; none found at any other page size`,
      0,
      PAGE_HEADER_SIZE,
    );
  }
  let meta0: BoltMeta | string = first;
  if (typeof meta0 !== 'string' && meta0.pageSize !== pageSize) meta0 = `page size ${meta0.pageSize} differs from meta page 1's ${pageSize}`;
  meta1 ??= decodeMeta(readAt(fd, PAGE_HEADER_SIZE + META_SIZE, pageSize), 1);
  if (typeof meta1 !== 'string' && meta1.pageSize !== pageSize) meta1 = `page size ${meta1.pageSize} differs from meta page 0's ${pageSize}`;

  let chosen: ChosenMeta;
  if (typeof meta0 !== 'string' && typeof meta1 !== 'string') {
    chosen = { meta: meta1.txid > meta0.txid ? meta1 : meta0 };
  } else if (typeof meta0 !== 'string') {
    chosen = { meta: meta0, otherInvalid: `meta page 1: ${meta1 as string}` };
  } else if (typeof meta1 !== 'string') {
    chosen = { meta: meta1, otherInvalid: `meta page 0: ${meta0}` };
  } else {
    throw new BoltFormatError(file, `both meta pages are invalid: meta page 0: ${meta0}; meta page 1: ${meta1}`, 0, PAGE_HEADER_SIZE);
  }
  checkMeta(chosen.meta, file, fileSize);
  return chosen;
}

const TRUNCATED = 'truncated: ';

function checkMeta(m: BoltMeta, file: string, fileSize: number): void {
  const at = m.page * m.pageSize + PAGE_HEADER_SIZE;
  const pages = BigInt(Math.floor(fileSize / m.pageSize));
  if (m.pgid < 3n) throw new BoltFormatError(file, `meta page ${m.page} says the file has ${m.pgid} pages; a bbolt file has at least 3`, m.page, at + 40);
  if (m.pgid > pages) {
    throw new BoltFormatError(
      file,
      `${TRUNCATED}meta page ${m.page} says ${m.pgid} pages of ${m.pageSize} bytes (${m.pgid * BigInt(m.pageSize)} bytes), the file has ${fileSize} bytes`,
      m.page,
      at + 40,
    );
  }
  if (m.rootPage < 2n || m.rootPage >= m.pgid) {
    throw new BoltFormatError(file, `meta page ${m.page}: root bucket page ${m.rootPage} is outside pages 2..${m.pgid - 1n}`, m.page, at + 16);
  }
  if (m.freelist !== NO_FREELIST && (m.freelist < 2n || m.freelist >= m.pgid)) {
    throw new BoltFormatError(file, `meta page ${m.page}: freelist page ${m.freelist} is outside pages 2..${m.pgid - 1n}`, m.page, at + 32);
  }
}

/**
 * How a bbolt file falls short of the size its meta page gives (a truncated copy:
 * "meta page 0 says 5 pages of 4096 bytes (20480 bytes), the file has 16416 bytes"),
 * or undefined when it does not (or is damaged in some other way, reported when read).
 */
export function boltTruncation(fd: number, file: string, fileSize: number): string | undefined {
  try {
    chooseMeta(fd, file, fileSize);
    return undefined;
  } catch (err) {
    if (err instanceof BoltFormatError && err.detail.startsWith(TRUNCATED)) return err.detail.slice(TRUNCATED.length);
    return undefined;
  }
}

/**
 * Whether a file looks like bbolt: the magic in meta page 0, or in meta page 1 at
 * any page size bbolt probes (so a file whose first meta is damaged is still
 * recognised, and then reported on).
 */
export function looksLikeBolt(fd: number, fileSize: number): boolean {
  const b = Buffer.alloc(4);
  const magicAt = (pos: number) => pos + 4 <= fileSize && fs.readSync(fd, b, 0, 4, pos) === 4 && b.readUInt32LE(0) === BOLT_MAGIC;
  if (magicAt(PAGE_HEADER_SIZE)) return true;
  for (let i = 0; i <= 14; i++) if (magicAt((1024 << i) + PAGE_HEADER_SIZE)) return true;
  return false;
}
