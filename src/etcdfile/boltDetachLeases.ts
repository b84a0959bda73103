// Detaches every key of a bbolt file (etcd's backend) from its lease, in place,
// on a scratch copy only (`backup restore --drop-leases`): each stored revision's
// mvccpb.KeyValue in the `key` bucket gets lease 0, written in the bytes its lease
// took (a varint of 0 padded to the same length, which protobuf decoders read as
// 0), so no page changes size; then the `lease` bucket is emptied
// (boltEmptyBuckets.ts). bbolt checksums only its meta pages.
import fs from 'node:fs';
import { BoltDb } from './boltDb.js';
import { emptyBoltBuckets } from './boltEmptyBuckets.js';

/** Where a KeyValue's lease varint is (field 6), when it is not 0; undefined otherwise. */
function leaseVarint(b: Buffer): { start: number; end: number } | undefined {
  let at = 0;
  const varint = (): number => {
    const from = at;
    while (at < b.length && (b[at] & 0x80) !== 0) at++;
    if (at >= b.length || at - from >= 10) throw new Error('a varint runs past the value');
    at++;
    return from;
  };
  while (at < b.length) {
    const tagAt = at;
    varint();
    const tag = b[tagAt];
    const field = tag >> 3;
    const wire = tag & 7;
    if (wire === 0) {
      const start = varint();
      const zero = at - start === 1 && b[start] === 0;
      if (field === 6 && !zero) return { start, end: at };
    } else if (wire === 2) {
      let len = 0;
      let shift = 0;
      const start = varint();
      for (let i = start; i < at; i++, shift += 7) len += (b[i] & 0x7f) * 2 ** shift;
      at += len;
    } else if (wire === 1) at += 8;
    else if (wire === 5) at += 4;
    else throw new Error(`wire type ${wire}`);
  }
  return undefined;
}

/** Detaches the keys of `file` (a bbolt file no process has open) from their leases; returns how many stored revisions had one, and the leases removed. */
export function detachBoltLeases(file: string): { revisions: number; leases: number } {
  const edits: Array<{ offset: number; bytes: Buffer }> = [];
  let leases = 0;
  const db = BoltDb.open(file);
  try {
    const keys = db.bucket('key');
    if (keys)
      for (const e of db.entries(keys)) {
        if (e.isBucket) continue;
        const at = leaseVarint(e.value);
        if (!at) continue;
        const bytes = Buffer.alloc(at.end - at.start, 0x80);
        bytes[bytes.length - 1] = 0;
        edits.push({ offset: e.valueOffset + at.start, bytes });
      }
    const lease = db.bucket('lease');
    if (lease) for (const e of db.entries(lease)) if (!e.isBucket) leases++;
  } finally {
    db.close();
  }
  if (edits.length > 0) {
    const fd = fs.openSync(file, 'r+');
    try {
      for (const e of edits) fs.writeSync(fd, e.bytes, 0, e.bytes.length, e.offset);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  }
  emptyBoltBuckets(file, ['lease']);
  return { revisions: edits.length, leases };
}
