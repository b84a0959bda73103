// etcd's on-disk encoding of one MVCC revision, as its `key` bucket holds it:
// bucket key = 8-byte big-endian main ‖ '_' ‖ 8-byte big-endian sub (‖ 't' for a
// tombstone), value = marshalled mvccpb.KeyValue (for a tombstone: only {key}).
// HashKV hashes exactly these bytes, so members (and etcd) can compare hashes.

import { ProtoWriter } from '../common/protobufWire.js';

export interface StoredRevision {
  key: Uint8Array;
  main: number;
  sub: number;
  createRevision: number;
  version: number;
  lease: bigint;
  value: Uint8Array;
  tombstone: boolean;
}

const SEPARATOR = 0x5f; // '_'
const TOMBSTONE_MARK = 0x74; // 't'

/** Append the bucket key (17 or 18 bytes) for a revision. */
export function writeRevisionKey(w: ProtoWriter, main: number, sub: number, tombstone: boolean): void {
  w.rawUint64BE(main).rawByte(SEPARATOR).rawUint64BE(sub);
  if (tombstone) w.rawByte(TOMBSTONE_MARK);
}

/** Append mvccpb.KeyValue{key=1, create_revision=2, mod_revision=3, version=4, value=5, lease=6}. */
export function writeKeyValue(w: ProtoWriter, r: StoredRevision): void {
  w.bytes(1, r.key);
  if (r.tombstone) return;
  w.int(2, r.createRevision).int(3, r.main).int(4, r.version).bytes(5, r.value).int(6, r.lease);
}

/**
 * Appends one bucket record (revision key, then KeyValue) from a row of
 * RevisionTables.revisionPages: "main,sub,create,version,lease,tombstone,hexkey,hexvalue".
 */
export function writeRevisionRecordFromRow(w: ProtoWriter, row: string): void {
  const f = row.split(',');
  const main = Number(f[0]);
  const tombstone = f[5] === '1';
  writeRevisionKey(w, main, Number(f[1]), tombstone);
  w.bytesHex(1, f[6]);
  if (tombstone) return;
  w.int(2, Number(f[2])).int(3, main).int(4, Number(f[3])).bytesHex(5, f[7]);
  if (f[4] !== '0') w.int(6, BigInt(f[4]));
}

export function encodeKeyValue(r: StoredRevision): Buffer {
  const w = new ProtoWriter(32 + r.key.length + r.value.length);
  writeKeyValue(w, r);
  return w.finish();
}

export function revisionKey(main: number, sub: number, tombstone: boolean): Buffer {
  const w = new ProtoWriter(18);
  writeRevisionKey(w, main, sub, tombstone);
  return w.finish();
}
