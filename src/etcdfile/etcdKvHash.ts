// The hash `etcdctl endpoint hashkv` reports for an etcd backend at its current
// revision (E34 mvcc/kvstore.go HashByRev): CRC-32C over the bucket name "key",
// then each stored k‖v in revision order. Revisions at or below a finished
// compaction count only if the compaction keeps them (each key's newest revision
// at or below it, unless that is a tombstone).

import { crc32c } from '../common/crc32c.js';
import { BoltDb } from './boltDb.js';
import { BUCKET, decodeKeyValue, decodeRevisionKey, failed } from './etcdBuckets.js';

export function etcdHashKv(file: string, compactRevision: number): number {
  const db = BoltDb.open(file);
  try {
    const bucket = db.bucket(BUCKET.key);
    let crc = crc32c(Buffer.from(BUCKET.key));
    if (!bucket) return crc >>> 0;
    // Which revisions at or below the compaction are kept: key → [main, sub, tombstone].
    const keep = new Map<string, { main: number; sub: number; tombstone: boolean }>();
    if (compactRevision > 0) {
      for (const e of db.entries(bucket)) {
        const rk = decodeRevisionKey(e.key);
        if (failed(rk) || rk.main > compactRevision) continue;
        const kv = decodeKeyValue(e.value);
        if (failed(kv)) continue;
        keep.set(kv.key.toString('latin1'), { main: rk.main, sub: rk.sub, tombstone: rk.tombstone });
      }
    }
    for (const e of db.entries(bucket)) {
      const rk = decodeRevisionKey(e.key);
      if (failed(rk)) continue;
      if (compactRevision > 0 && rk.main <= compactRevision) {
        const kv = decodeKeyValue(e.value);
        const k = failed(kv) ? undefined : keep.get(kv.key.toString('latin1'));
        if (!k || k.tombstone || k.main !== rk.main || k.sub !== rk.sub) continue;
      }
      crc = crc32c(e.value, crc32c(e.key, crc));
    }
    return crc >>> 0;
  } finally {
    db.close();
  }
}
