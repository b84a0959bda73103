// etcd v3.4's buckets and their encodings (ETCD-WIRE §3): revision keys and
// mvccpb.KeyValue in `key`, leasepb.Lease in `lease`, member JSON in `members`,
// the consistent index and compaction revisions in `meta`, AlarmMember keys in
// `alarm`. Each decoder returns the value or a one-line reason it cannot.

import { ProtoReader } from '../common/protobufWire.js';

export const BUCKET = {
  key: 'key',
  meta: 'meta',
  lease: 'lease',
  members: 'members',
  membersRemoved: 'members_removed',
  cluster: 'cluster',
  alarm: 'alarm',
  auth: 'auth',
  authUsers: 'authUsers',
  authRoles: 'authRoles',
} as const;

export const META_KEY = {
  consistentIndex: 'consistent_index',
  finishedCompactRev: 'finishedCompactRev',
  scheduledCompactRev: 'scheduledCompactRev',
} as const;

export type Decoded<T> = T | { error: string };

export function failed<T>(d: Decoded<T>): d is { error: string } {
  return typeof d === 'object' && d !== null && 'error' in d;
}

export interface RevisionKey {
  main: number;
  sub: number;
  tombstone: boolean;
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/** 8-byte BE main ‖ '_' ‖ 8-byte BE sub, plus 't' for a tombstone (mvcc/revision.go, kvstore.go). */
export function decodeRevisionKey(b: Buffer): Decoded<RevisionKey> {
  if ((b.length !== 17 && b.length !== 18) || b[8] !== 0x5f || (b.length === 18 && b[17] !== 0x74)) {
    return { error: `revision key 0x${b.toString('hex')} is not 8 bytes ‖ '_' ‖ 8 bytes (‖ 't')` };
  }
  const main = b.readBigUInt64BE(0);
  const sub = b.readBigUInt64BE(9);
  if (main > MAX_SAFE || sub > MAX_SAFE) return { error: `revision ${main}_${sub} is beyond 2^53` };
  return { main: Number(main), sub: Number(sub), tombstone: b.length === 18 };
}

/** The 17-byte revision etcd stores for finishedCompactRev / scheduledCompactRev (sub = 0). */
export function decodeRevisionValue(b: Buffer): Decoded<number> {
  const r = decodeRevisionKey(b);
  if (failed(r)) return r;
  if (r.tombstone) return { error: `compaction revision 0x${b.toString('hex')} carries a tombstone mark` };
  return r.main;
}

export interface EtcdKeyValue {
  key: Buffer;
  createRevision: number;
  modRevision: number;
  version: number;
  value: Buffer;
  lease: bigint;
}

const EMPTY = Buffer.alloc(0);

/** mvccpb.KeyValue{key=1, create_revision=2, mod_revision=3, version=4, value=5, lease=6}. Buffers are views. */
export function decodeKeyValue(b: Buffer): Decoded<EtcdKeyValue> {
  const kv: EtcdKeyValue = { key: EMPTY, createRevision: 0, modRevision: 0, version: 0, value: EMPTY, lease: 0n };
  try {
    const r = new ProtoReader(b);
    while (!r.done) {
      const { field, wire } = r.tag();
      if (field === 1 && wire === 2) kv.key = r.bytes();
      else if (field === 2 && wire === 0) kv.createRevision = r.int64Number();
      else if (field === 3 && wire === 0) kv.modRevision = r.int64Number();
      else if (field === 4 && wire === 0) kv.version = r.int64Number();
      else if (field === 5 && wire === 2) kv.value = r.bytes();
      else if (field === 6 && wire === 0) kv.lease = r.int64();
      else r.skip(wire);
    }
  } catch (err) {
    return { error: `mvccpb.KeyValue does not decode: ${(err as Error).message}` };
  }
  if (kv.key.length === 0) return { error: 'mvccpb.KeyValue has an empty key' };
  return kv;
}

export interface EtcdLease {
  id: bigint;
  ttl: number;
  remainingTtl: number;
}

/** leasepb.Lease{ID=1, TTL=2, RemainingTTL=3}; the bucket key is the ID, 8 bytes BE. */
export function decodeLease(key: Buffer, b: Buffer): Decoded<EtcdLease> {
  if (key.length !== 8) return { error: `lease key 0x${key.toString('hex')} is not 8 bytes` };
  const l: EtcdLease = { id: 0n, ttl: 0, remainingTtl: 0 };
  try {
    const r = new ProtoReader(b);
    while (!r.done) {
      const { field, wire } = r.tag();
      if (field === 1 && wire === 0) l.id = r.int64();
      else if (field === 2 && wire === 0) l.ttl = r.int64Number();
      else if (field === 3 && wire === 0) l.remainingTtl = r.int64Number();
      else r.skip(wire);
    }
  } catch (err) {
    return { error: `leasepb.Lease does not decode: ${(err as Error).message}` };
  }
  const keyId = key.readBigInt64BE(0);
  if (l.id !== keyId) return { error: `lease record under key ${keyId} has ID ${l.id}` };
  return l;
}

export interface EtcdMember {
  id: bigint;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

/**
 * A `members` record: key = hex ID, value = JSON whose "id" is a number beyond
 * 2^53, so the number is read as text before JSON.parse can round it.
 */
export function decodeMember(key: Buffer, b: Buffer): Decoded<EtcdMember> {
  const text = b.toString('utf8');
  // A '"' inside a JSON string is escaped, so `{"id":` or `,"id":` is structure.
  const quoted = text.replace(/([{,]\s*"id"\s*:\s*)(\d+)/, '$1"$2"');
  let j: Record<string, unknown>;
  try {
    j = JSON.parse(quoted) as Record<string, unknown>;
  } catch (err) {
    return { error: `member JSON does not parse: ${(err as Error).message}` };
  }
  if (typeof j !== 'object' || j === null || typeof j.id !== 'string' || !/^\d+$/.test(j.id)) return { error: 'member JSON has no numeric "id"' };
  const id = BigInt(j.id);
  const keyText = key.toString('latin1');
  if (!/^[0-9a-f]{1,16}$/.test(keyText) || BigInt(`0x${keyText}`) !== id) return { error: `member key "${keyText}" does not match its id ${id.toString(16)}` };
  const strings = (v: unknown) => (Array.isArray(v) ? v.filter((s): s is string => typeof s === 'string') : []);
  return {
    id,
    name: typeof j.name === 'string' ? j.name : '',
    peerURLs: strings(j.peerURLs),
    clientURLs: strings(j.clientURLs),
    isLearner: j.isLearner === true,
  };
}

/** A `members_removed` key: the member ID in hex. */
export function decodeRemovedMember(key: Buffer): Decoded<bigint> {
  const t = key.toString('latin1');
  if (!/^[0-9a-f]{1,16}$/.test(t)) return { error: `removed member key "${t}" is not a hex ID` };
  return BigInt(`0x${t}`);
}

export interface EtcdAlarm {
  memberId: bigint;
  /** etcdserverpb.AlarmType: 1 NOSPACE, 2 CORRUPT. */
  alarm: number;
}

/** An `alarm` key: marshalled etcdserverpb.AlarmMember{MemberID=1, Alarm=2}. */
export function decodeAlarm(key: Buffer): Decoded<EtcdAlarm> {
  const a: EtcdAlarm = { memberId: 0n, alarm: 0 };
  try {
    const r = new ProtoReader(key);
    while (!r.done) {
      const { field, wire } = r.tag();
      if (field === 1 && wire === 0) a.memberId = r.uint64();
      else if (field === 2 && wire === 0) a.alarm = r.uint();
      else r.skip(wire);
    }
  } catch (err) {
    return { error: `AlarmMember does not decode: ${(err as Error).message}` };
  }
  return a;
}

/** An 8-byte big-endian unsigned integer (consistent_index, authRevision). */
export function decodeUint64BE(b: Buffer): Decoded<number> {
  if (b.length !== 8) return { error: `value is ${b.length} bytes, want 8` };
  const n = b.readBigUInt64BE(0);
  if (n > MAX_SAFE) return { error: `value ${n} is beyond 2^53` };
  return Number(n);
}
