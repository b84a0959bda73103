// The elements of bbolt branch and leaf pages, decoded with every offset checked
// against the page's bytes. Element i sits at 16 + 16×i; its key at (element
// offset + pos), relative to the element itself; a leaf value follows its key.

import { BoltFormatError } from './boltErrors.js';
import { PAGE_HEADER_SIZE, type Page } from './pageFile.js';

export const ELEMENT_SIZE = 16;
/** Leaf element flag: the value is a nested bucket's header. */
export const BUCKET_LEAF_FLAG = 0x01;
/** Bucket header in a value: root page id u64, sequence u64. */
export const BUCKET_HEADER_SIZE = 16;

export interface LeafElement {
  flags: number;
  key: Buffer;
  value: Buffer;
  /** Offset of the value within page.data. */
  valueStart: number;
}

export interface BranchElement {
  key: Buffer;
  child: bigint;
}

/** Checks that `count` elements fit the page; called once per page before reading elements. */
export function checkElementCount(file: string, page: Page): void {
  const need = PAGE_HEADER_SIZE + page.count * ELEMENT_SIZE;
  if (need > page.data.length) {
    throw new BoltFormatError(
      file,
      `${page.inline ? 'inline bucket page' : 'page'} says it holds ${page.count} elements, ${need} bytes, but it has ${page.data.length}`,
      page.id,
      page.fileOffset + 10,
    );
  }
}

/** Keys and values come after the element array. */
function dataStart(page: Page): number {
  return PAGE_HEADER_SIZE + page.count * ELEMENT_SIZE;
}

function outside(file: string, page: Page, i: number, what: string, elemOff: number, start: number, length: number): BoltFormatError {
  return new BoltFormatError(
    file,
    `${page.inline ? 'inline bucket ' : ''}element ${i}: its ${what} (${length} bytes at page byte ${start}) is outside the page's data area (bytes ${dataStart(page)}..${page.data.length})`,
    page.id,
    page.fileOffset + elemOff,
  );
}

export function leafElement(file: string, page: Page, i: number): LeafElement {
  const d = page.data;
  const elemOff = PAGE_HEADER_SIZE + i * ELEMENT_SIZE;
  const flags = d.readUInt32LE(elemOff);
  const pos = d.readUInt32LE(elemOff + 4);
  const ksize = d.readUInt32LE(elemOff + 8);
  const vsize = d.readUInt32LE(elemOff + 12);
  if ((flags & ~BUCKET_LEAF_FLAG) !== 0) {
    throw new BoltFormatError(file, `leaf element ${i} has unknown flags 0x${flags.toString(16)}`, page.id, page.fileOffset + elemOff);
  }
  const keyStart = elemOff + pos;
  if (keyStart < dataStart(page) || keyStart + ksize > d.length) throw outside(file, page, i, 'key', elemOff, keyStart, ksize);
  const valueStart = keyStart + ksize;
  if (valueStart + vsize > d.length) throw outside(file, page, i, 'value', elemOff, valueStart, vsize);
  return { flags, key: d.subarray(keyStart, valueStart), value: d.subarray(valueStart, valueStart + vsize), valueStart };
}

export function branchElement(file: string, page: Page, i: number): BranchElement {
  const d = page.data;
  const elemOff = PAGE_HEADER_SIZE + i * ELEMENT_SIZE;
  const pos = d.readUInt32LE(elemOff);
  const ksize = d.readUInt32LE(elemOff + 4);
  const child = d.readBigUInt64LE(elemOff + 8);
  const keyStart = elemOff + pos;
  if (keyStart < dataStart(page) || keyStart + ksize > d.length) throw outside(file, page, i, 'key', elemOff, keyStart, ksize);
  return { key: d.subarray(keyStart, keyStart + ksize), child };
}

/** File offset of element i of `page` (for error messages). */
export function elementOffset(page: Page, i: number): number {
  return page.fileOffset + PAGE_HEADER_SIZE + i * ELEMENT_SIZE;
}
