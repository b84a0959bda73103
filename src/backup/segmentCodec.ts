// A segment: the revisions one agent saw, whole and in order, with the leases
// granted and revoked between them. Big-endian throughout; documented byte by
// byte in docs/design/backup-format.md (keep the two in step).
//
//   header   "LBSEG" (5 bytes) | version u8 = 1 | reserved u16 = 0 | cluster ID u64
//   record*  kind u8 | body length u32 | body
//   end      kind 0xFF | length u32 = 4 | records before it u32
//
// Record bodies:
//   1 REVISION      revision u64 | seen at ms i64 | current since ms i64 | events u32
//                   | per event: length u32 | etcd mvccpb.Event (protobuf)
//   2 LEASE_GRANT   lease ID i64 | TTL seconds i64 | before revision u64 | seen at ms i64
//   3 LEASE_REVOKE  lease ID i64 | after revision u64 | seen at ms i64
//
// "seen at" is the wall-clock time the agent received the revision; "current
// since" the last time before it that the agent was confirmed current (a
// progress notice or an event at the head): the revision happened inside that
// window. A grant comes before the first revision that attaches a key to the
// lease; a revoke after the last revision the agent saw before it was gone.
import type { KeyValue } from '../client/types.js';
import { ProtoReader, ProtoWriter } from '../common/protobufWire.js';

export const SEGMENT_MAGIC = Buffer.from('LBSEG', 'latin1');
export const SEGMENT_VERSION = 1;
const HEADER_LEN = 16;

export const RecordKind = { Revision: 1, LeaseGrant: 2, LeaseRevoke: 3, End: 0xff } as const;
type RecordKindCode = (typeof RecordKind)[keyof typeof RecordKind];

/** A key as etcd's mvccpb.KeyValue holds it (the client's type). */
export type SegmentKeyValue = KeyValue;

export interface SegmentEvent {
  type: 'PUT' | 'DELETE';
  kv: SegmentKeyValue;
}

export interface RevisionRecord {
  kind: 'revision';
  revision: number;
  seenAtMs: number;
  currentSinceMs: number;
  events: SegmentEvent[];
}

export interface LeaseGrantRecord {
  kind: 'lease-grant';
  id: bigint;
  ttlSeconds: number;
  beforeRevision: number;
  seenAtMs: number;
}

export interface LeaseRevokeRecord {
  kind: 'lease-revoke';
  id: bigint;
  afterRevision: number;
  seenAtMs: number;
}

export type SegmentRecord = RevisionRecord | LeaseGrantRecord | LeaseRevokeRecord;

export interface Segment {
  clusterId: bigint;
  records: SegmentRecord[];
}

/** etcd's mvccpb.Event: type 1 (PUT = 0, DELETE = 1), kv 2 (key 1, create_revision 2, mod_revision 3, version 4, value 5, lease 6). */
export function encodeEvent(e: SegmentEvent, w = new ProtoWriter(64)): Buffer {
  w.reset();
  w.int(1, e.type === 'DELETE' ? 1 : 0);
  w.message(2, (kv) => {
    kv.bytes(1, e.kv.key).int(2, e.kv.createRevision).int(3, e.kv.modRevision).int(4, e.kv.version).bytes(5, e.kv.value).int(6, e.kv.lease);
  });
  return w.finish();
}

export function decodeEvent(buf: Buffer): SegmentEvent {
  const r = new ProtoReader(buf);
  let type: 'PUT' | 'DELETE' = 'PUT';
  const kv: SegmentKeyValue = { key: Buffer.alloc(0), value: Buffer.alloc(0), createRevision: 0, modRevision: 0, version: 0, lease: 0n };
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1 && wire === 0) type = r.uint() === 1 ? 'DELETE' : 'PUT';
    else if (field === 2 && wire === 2) {
      const k = new ProtoReader(r.bytes());
      while (!k.done) {
        const t = k.tag();
        if (t.wire === 2 && t.field === 1) kv.key = Buffer.from(k.bytes());
        else if (t.wire === 2 && t.field === 5) kv.value = Buffer.from(k.bytes());
        else if (t.wire === 0 && t.field === 2) kv.createRevision = k.int64Number();
        else if (t.wire === 0 && t.field === 3) kv.modRevision = k.int64Number();
        else if (t.wire === 0 && t.field === 4) kv.version = k.int64Number();
        else if (t.wire === 0 && t.field === 6) kv.lease = k.int64();
        else k.skip(t.wire);
      }
    } else r.skip(wire);
  }
  return { type, kv };
}

/** Builds a segment record by record (the agent's open segment). */
export class SegmentWriter {
  private readonly parts: Buffer[] = [];
  private count = 0;
  private bytes = 0;
  private readonly ev = new ProtoWriter(256);

  constructor(readonly clusterId: bigint) {
    const h = Buffer.alloc(HEADER_LEN);
    SEGMENT_MAGIC.copy(h, 0);
    h.writeUInt8(SEGMENT_VERSION, 5);
    h.writeUInt16BE(0, 6);
    h.writeBigUInt64BE(clusterId, 8);
    this.push(h);
  }

  private push(b: Buffer): void {
    this.parts.push(b);
    this.bytes += b.length;
  }

  private record(kind: RecordKindCode, body: Buffer[]): void {
    const len = body.reduce((n, b) => n + b.length, 0);
    const h = Buffer.alloc(5);
    h.writeUInt8(kind, 0);
    h.writeUInt32BE(len, 1);
    this.push(h);
    for (const b of body) this.push(b);
    this.count++;
  }

  revision(r: Omit<RevisionRecord, 'kind'>): void {
    const head = Buffer.alloc(28);
    head.writeBigUInt64BE(BigInt(r.revision), 0);
    head.writeBigInt64BE(BigInt(r.seenAtMs), 8);
    head.writeBigInt64BE(BigInt(r.currentSinceMs), 16);
    head.writeUInt32BE(r.events.length, 24);
    const body: Buffer[] = [head];
    for (const e of r.events) {
      const enc = encodeEvent(e, this.ev);
      const l = Buffer.alloc(4);
      l.writeUInt32BE(enc.length, 0);
      body.push(l, enc);
    }
    this.record(RecordKind.Revision, body);
  }

  leaseGrant(g: Omit<LeaseGrantRecord, 'kind'>): void {
    const b = Buffer.alloc(32);
    b.writeBigInt64BE(g.id, 0);
    b.writeBigInt64BE(BigInt(g.ttlSeconds), 8);
    b.writeBigUInt64BE(BigInt(g.beforeRevision), 16);
    b.writeBigInt64BE(BigInt(g.seenAtMs), 24);
    this.record(RecordKind.LeaseGrant, [b]);
  }

  leaseRevoke(v: Omit<LeaseRevokeRecord, 'kind'>): void {
    const b = Buffer.alloc(24);
    b.writeBigInt64BE(v.id, 0);
    b.writeBigUInt64BE(BigInt(v.afterRevision), 8);
    b.writeBigInt64BE(BigInt(v.seenAtMs), 16);
    this.record(RecordKind.LeaseRevoke, [b]);
  }

  /** Bytes so far (header and records, without the end record). */
  get size(): number {
    return this.bytes;
  }

  get records(): number {
    return this.count;
  }

  /** The whole segment, end record included. */
  finish(): Buffer {
    const end = Buffer.alloc(9);
    end.writeUInt8(RecordKind.End, 0);
    end.writeUInt32BE(4, 1);
    end.writeUInt32BE(this.count, 5);
    return Buffer.concat([...this.parts, end]);
  }
}

export class SegmentFormatError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SegmentFormatError';
  }
}

/** Parse and check a whole segment: magic, version, every length, the end record's count, nothing after it. */
export function decodeSegment(buf: Buffer): Segment {
  const fail = (at: number, why: string) => new SegmentFormatError(`segment byte ${at}: ${why}`);
  if (buf.length < HEADER_LEN || !buf.subarray(0, 5).equals(SEGMENT_MAGIC)) throw fail(0, 'not a Lifeboat segment (no "LBSEG" magic)');
  const version = buf.readUInt8(5);
  if (version !== SEGMENT_VERSION) throw fail(5, `format version ${version}; this Lifeboat reads version ${SEGMENT_VERSION}`);
  const clusterId = buf.readBigUInt64BE(8);
  const records: SegmentRecord[] = [];
  let pos = HEADER_LEN;
  for (;;) {
    if (pos + 5 > buf.length) throw fail(pos, 'ends without its end record (truncated)');
    const kind = buf.readUInt8(pos);
    const len = buf.readUInt32BE(pos + 1);
    const start = pos + 5;
    const end = start + len;
    if (end > buf.length) throw fail(pos, `record of ${len} bytes runs past the end (truncated)`);
    const body = buf.subarray(start, end);
    if (kind === RecordKind.End) {
      if (len !== 4) throw fail(pos, `end record of ${len} bytes, not 4`);
      const n = body.readUInt32BE(0);
      if (n !== records.length) throw fail(pos, `end record counts ${n} records, the segment has ${records.length}`);
      if (end !== buf.length) throw fail(end, `${buf.length - end} bytes after the end record`);
      return { clusterId, records };
    }
    records.push(decodeRecord(kind, body, pos, fail));
    pos = end;
  }
}

function decodeRecord(kind: number, b: Buffer, at: number, fail: (at: number, why: string) => Error): SegmentRecord {
  const num = (v: bigint) => {
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) throw fail(at, `value ${v} out of range`);
    return Number(v);
  };
  switch (kind) {
    case RecordKind.Revision: {
      if (b.length < 28) throw fail(at, 'revision record shorter than its header');
      const n = b.readUInt32BE(24);
      const events: SegmentEvent[] = [];
      let p = 28;
      for (let i = 0; i < n; i++) {
        if (p + 4 > b.length) throw fail(at, `revision record ends inside event ${i + 1} of ${n}`);
        const l = b.readUInt32BE(p);
        if (p + 4 + l > b.length) throw fail(at, `event ${i + 1} of ${n} runs past its record`);
        try {
          events.push(decodeEvent(b.subarray(p + 4, p + 4 + l)));
        } catch (e) {
          throw fail(at, `event ${i + 1} of ${n}: ${(e as Error).message}`);
        }
        p += 4 + l;
      }
      if (p !== b.length) throw fail(at, `${b.length - p} bytes after the last event of the revision record`);
      return {
        kind: 'revision',
        revision: num(b.readBigUInt64BE(0)),
        seenAtMs: num(b.readBigInt64BE(8)),
        currentSinceMs: num(b.readBigInt64BE(16)),
        events,
      };
    }
    case RecordKind.LeaseGrant:
      if (b.length !== 32) throw fail(at, `lease grant record of ${b.length} bytes, not 32`);
      return {
        kind: 'lease-grant',
        id: b.readBigInt64BE(0),
        ttlSeconds: num(b.readBigInt64BE(8)),
        beforeRevision: num(b.readBigUInt64BE(16)),
        seenAtMs: num(b.readBigInt64BE(24)),
      };
    case RecordKind.LeaseRevoke:
      if (b.length !== 24) throw fail(at, `lease revoke record of ${b.length} bytes, not 24`);
      return { kind: 'lease-revoke', id: b.readBigInt64BE(0), afterRevision: num(b.readBigUInt64BE(8)), seenAtMs: num(b.readBigInt64BE(16)) };
    default:
      throw fail(at, `unknown record kind ${kind}`);
  }
}
