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
  writeEvent(e, w);
  return w.finish();
}

/** encodeEvent into `w` (reset first); its view() holds the event. */
function writeEvent(e: SegmentEvent, w: ProtoWriter): void {
  w.reset();
  w.int(1, e.type === 'DELETE' ? 1 : 0);
  w.message(2, (kv) => {
    kv.bytes(1, e.kv.key).int(2, e.kv.createRevision).int(3, e.kv.modRevision).int(4, e.kv.version).bytes(5, e.kv.value).int(6, e.kv.lease);
  });
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

/**
 * Builds a segment record by record (the agent's open segment), into one buffer
 * grown by doubling: a segment lives for --delta-interval, long enough to be
 * promoted to V8's old generation, and as thousands of small buffers (one per
 * header, length and event) it left as many backing stores behind it for a full
 * collection to free (under 100 clients' puts the agent's array buffers reached
 * 21 MiB with 5 s segments).
 */
export class SegmentWriter {
  private buf = Buffer.allocUnsafe(64 * 1024);
  private len = 0;
  private count = 0;
  private readonly ev = new ProtoWriter(256);

  constructor(readonly clusterId: bigint) {
    this.reserve(HEADER_LEN);
    SEGMENT_MAGIC.copy(this.buf, 0);
    this.buf.writeUInt8(SEGMENT_VERSION, 5);
    this.buf.writeUInt16BE(0, 6);
    this.buf.writeBigUInt64BE(clusterId, 8);
    this.len = HEADER_LEN;
  }

  /** Room for `n` more bytes at this.len. */
  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  /** A record: its kind, its length (filled in by `fill`'s return), then what `fill` writes. */
  private record(kind: RecordKindCode, fill: () => void): void {
    this.reserve(5);
    const at = this.len;
    this.buf.writeUInt8(kind, at);
    this.len += 5;
    fill();
    this.buf.writeUInt32BE(this.len - at - 5, at + 1);
    this.count++;
  }

  revision(r: Omit<RevisionRecord, 'kind'>): void {
    this.record(RecordKind.Revision, () => {
      this.reserve(28);
      const b = this.buf;
      const at = this.len;
      b.writeBigUInt64BE(BigInt(r.revision), at);
      b.writeBigInt64BE(BigInt(r.seenAtMs), at + 8);
      b.writeBigInt64BE(BigInt(r.currentSinceMs), at + 16);
      b.writeUInt32BE(r.events.length, at + 24);
      this.len += 28;
      for (const e of r.events) {
        writeEvent(e, this.ev);
        const enc = this.ev.view();
        this.reserve(4 + enc.length);
        this.buf.writeUInt32BE(enc.length, this.len);
        enc.copy(this.buf, this.len + 4);
        this.len += 4 + enc.length;
      }
    });
  }

  leaseGrant(g: Omit<LeaseGrantRecord, 'kind'>): void {
    this.record(RecordKind.LeaseGrant, () => {
      this.reserve(32);
      const at = this.len;
      this.buf.writeBigInt64BE(g.id, at);
      this.buf.writeBigInt64BE(BigInt(g.ttlSeconds), at + 8);
      this.buf.writeBigUInt64BE(BigInt(g.beforeRevision), at + 16);
      this.buf.writeBigInt64BE(BigInt(g.seenAtMs), at + 24);
      this.len += 32;
    });
  }

  leaseRevoke(v: Omit<LeaseRevokeRecord, 'kind'>): void {
    this.record(RecordKind.LeaseRevoke, () => {
      this.reserve(24);
      const at = this.len;
      this.buf.writeBigInt64BE(v.id, at);
      this.buf.writeBigUInt64BE(BigInt(v.afterRevision), at + 8);
      this.buf.writeBigInt64BE(BigInt(v.seenAtMs), at + 16);
      this.len += 24;
    });
  }

  /** Bytes so far (header and records, without the end record). */
  get size(): number {
    return this.len;
  }

  get records(): number {
    return this.count;
  }

  /** The whole segment, end record included (a view of the writer's buffer: write no more). */
  finish(): Buffer {
    this.reserve(9);
    const at = this.len;
    this.buf.writeUInt8(RecordKind.End, at);
    this.buf.writeUInt32BE(4, at + 1);
    this.buf.writeUInt32BE(this.count, at + 5);
    this.len += 9;
    return this.buf.subarray(0, this.len);
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
