// Shared by the storage tests: temp dirs, a seeded random source, entries whose
// content is a function of (index, term) so any surviving entry can be checked.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EntryType, type Entry } from '../../src/raft/types.js';
import type { MemberMeta } from '../../src/storage/memberMeta.js';

export const IDENTITY: MemberMeta = { memberId: 0x8e9e05c52164694dn, clusterId: 0xcdf818194e3a8c32n };
/** Small segments, so that the crash tests roll over often. */
export const CHILD_STORAGE_OPTS = { segmentBytes: 64 * 1024, preallocBytes: 16 * 1024 };

export const OTHER: MemberMeta = { memberId: 0x91bc3c398fb3c146n, clusterId: 0xcdf818194e3a8c32n };

/** mulberry32: small, fast, good enough for choosing test moves. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function tempDir(prefix: string): { dir: string; cleanup(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `lifeboat-${prefix}-`));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Deterministic entry data: 8..263 bytes derived from index and term. */
export function entryData(index: number, term: number): Uint8Array {
  const len = 8 + ((index * 31 + term * 17) % 256);
  const out = new Uint8Array(len);
  let x = (index * 2654435761 + term * 40503) >>> 0;
  for (let i = 0; i < len; i++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

export function entry(index: number, term: number): Entry {
  return { index, term, type: index % 7 === 0 ? EntryType.ConfChange : EntryType.Normal, data: entryData(index, term) };
}

export function entries(from: number, to: number, term: number): Entry[] {
  const out: Entry[] = [];
  for (let i = from; i <= to; i++) out.push(entry(i, term));
  return out;
}

/** Whether an entry is exactly what entry(index, term) makes. */
export function isGenuine(e: Entry): boolean {
  const want = entry(e.index, e.term);
  return e.type === want.type && Buffer.from(e.data).equals(Buffer.from(want.data));
}

/** A crash child's line to its parent on stdout: written whole and synchronously, so it is out before any kill. */
export function report(line: string): void {
  const buf = Buffer.from(line + '\n');
  for (let done = 0; done < buf.length;) {
    try {
      done += fs.writeSync(1, buf, done);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err;
    }
  }
}
