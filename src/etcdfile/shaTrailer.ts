// The 32-byte sha256 that `etcdctl snapshot save` appends to the bbolt bytes
// (Maintenance.Snapshot's last message). etcd decides it is there when the file's
// size is 32 past a multiple of 512 (clientv3/snapshot/v3_snapshot.go saveDB), and
// refuses a restore without it, or with a wrong one, in these words.

import { createHash } from 'node:crypto';
import fs from 'node:fs';

export const TRAILER_SIZE = 32;

export interface TrailerCheck {
  present: boolean;
  /** sha256 of the bytes before the trailer (of the whole file when there is none), hex. */
  computed: string;
  /** The trailer's bytes, hex, when present. */
  stored?: string;
  matches: boolean;
}

/** etcd's test for a trailer: size % 512 == 32. */
export function hasTrailer(size: number): boolean {
  return size % 512 === TRAILER_SIZE;
}

/** Hashes the file in 1 MiB positioned reads. */
export function checkTrailer(file: string): TrailerCheck {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const present = hasTrailer(size);
    const end = present ? size - TRAILER_SIZE : size;
    const h = createHash('sha256');
    const buf = Buffer.allocUnsafe(1 << 20);
    for (let pos = 0; pos < end;) {
      const n = fs.readSync(fd, buf, 0, Math.min(buf.length, end - pos), pos);
      if (n === 0) throw new Error(`${file} ended at byte ${pos} while hashing (it shrank?)`);
      h.update(buf.subarray(0, n));
      pos += n;
    }
    const computed = h.digest('hex');
    if (!present) return { present, computed, matches: false };
    const t = Buffer.alloc(TRAILER_SIZE);
    fs.readSync(fd, t, 0, TRAILER_SIZE, end);
    const stored = t.toString('hex');
    return { present, computed, stored, matches: stored === computed };
  } finally {
    fs.closeSync(fd);
  }
}

/** A missing or wrong trailer, in etcd's words. */
export class TrailerError extends Error {
  constructor(
    readonly kind: 'missing' | 'mismatch',
    message: string,
  ) {
    super(message);
    this.name = 'TrailerError';
  }
}

/**
 * What `etcdctl snapshot restore` checks before touching anything: throws etcd's
 * error text when the trailer is missing (unless skipHashCheck) or wrong.
 */
export function requireTrailer(file: string, skipHashCheck: boolean): TrailerCheck | undefined {
  const size = fs.statSync(file).size;
  if (!hasTrailer(size)) {
    if (!skipHashCheck)
      throw new TrailerError(
        'missing',
        `snapshot missing hash but --skip-hash-check=false (${file}: ${size} bytes is not 32 past a multiple of 512; use --skip-hash-check for a raw member/snap/db copy)`,
      );
    return undefined;
  }
  if (skipHashCheck) return undefined;
  const t = checkTrailer(file);
  if (!t.matches) throw new TrailerError('mismatch', `expected sha256 ${t.stored}, got ${t.computed} (${file} is damaged or not the file that was saved)`);
  return t;
}
