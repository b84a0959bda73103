// Binary encoding of the core's values (entries and messages) for the
// disk and the wire. Pure: plain byte arithmetic, no I/O. Integers are big-endian;
// terms and indexes (numbers < 2^53) take 8 bytes like the bigint node IDs.
import { EntryType, MessageType, type ConfState, type Entry, type Message } from './types.js';

const MESSAGE_TYPES = Object.values(MessageType);

export class ByteWriter {
  private buf: Uint8Array;
  private view: DataView;
  private pos = 0;

  constructor(initial = 256) {
    this.buf = new Uint8Array(initial);
    this.view = new DataView(this.buf.buffer);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.pos));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }

  u8(v: number): this {
    this.ensure(1);
    this.buf[this.pos++] = v;
    return this;
  }

  u32(v: number): this {
    this.ensure(4);
    this.view.setUint32(this.pos, v);
    this.pos += 4;
    return this;
  }

  /** A non-negative integer below 2^53, in 8 bytes. */
  num(v: number): this {
    this.ensure(8);
    this.view.setUint32(this.pos, Math.floor(v / 0x100000000));
    this.view.setUint32(this.pos + 4, v >>> 0);
    this.pos += 8;
    return this;
  }

  u64(v: bigint): this {
    this.ensure(8);
    this.view.setBigUint64(this.pos, v);
    this.pos += 8;
    return this;
  }

  bytes(b: Uint8Array): this {
    this.u32(b.length);
    this.ensure(b.length);
    this.buf.set(b, this.pos);
    this.pos += b.length;
    return this;
  }

  finish(): Uint8Array {
    return this.buf.subarray(0, this.pos);
  }
}

export class ByteReader {
  private view: DataView;
  pos = 0;

  constructor(private readonly buf: Uint8Array) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  }

  private need(n: number): void {
    if (this.pos + n > this.buf.length) throw new RangeError(`truncated record: need ${n} bytes at offset ${this.pos} of ${this.buf.length}`);
  }

  u8(): number {
    this.need(1);
    return this.buf[this.pos++];
  }

  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos);
    this.pos += 4;
    return v;
  }

  num(): number {
    this.need(8);
    const v = this.view.getUint32(this.pos) * 0x100000000 + this.view.getUint32(this.pos + 4);
    this.pos += 8;
    return v;
  }

  u64(): bigint {
    this.need(8);
    const v = this.view.getBigUint64(this.pos);
    this.pos += 8;
    return v;
  }

  bytes(): Uint8Array {
    const n = this.u32();
    this.need(n);
    const b = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return b;
  }

  done(): boolean {
    return this.pos === this.buf.length;
  }
}

export function writeEntry(w: ByteWriter, e: Entry): void {
  w.num(e.term).num(e.index).u8(e.type).bytes(e.data);
}

export function readEntry(r: ByteReader): Entry {
  const term = r.num();
  const index = r.num();
  const type = r.u8() as EntryType;
  if (type !== EntryType.Normal && type !== EntryType.ConfChange) throw new RangeError(`unknown entry type ${type as number}`);
  // Copy: the record buffer may be reused by the reader's caller.
  return { term, index, type, data: r.bytes().slice() };
}

function writeConf(w: ByteWriter, c: ConfState): void {
  w.u32(c.voters.length);
  for (const v of c.voters) w.u64(v);
  w.u32(c.learners.length);
  for (const l of c.learners) w.u64(l);
}

function readConf(r: ByteReader): ConfState {
  const voters: bigint[] = [];
  for (let n = r.u32(); n > 0; n--) voters.push(r.u64());
  const learners: bigint[] = [];
  for (let n = r.u32(); n > 0; n--) learners.push(r.u64());
  return { voters, learners };
}

/**
 * A message without its snapshot data (snapshots travel on their own stream);
 * the snapshot's metadata is kept.
 */
export function encodeMessage(m: Message): Uint8Array {
  let size = 96 + (m.context?.length ?? 0);
  for (const e of m.entries) size += 24 + e.data.length;
  const w = new ByteWriter(size);
  w.u8(MESSAGE_TYPES.indexOf(m.type)).u64(m.from).u64(m.to).num(m.term).num(m.logTerm).num(m.index).num(m.commit);
  w.u8(m.reject ? 1 : 0).num(m.rejectHint);
  w.u8(m.context ? 1 : 0);
  if (m.context) w.bytes(m.context);
  w.u32(m.entries.length);
  for (const e of m.entries) writeEntry(w, e);
  w.u8(m.snapshot ? 1 : 0);
  if (m.snapshot) {
    w.num(m.snapshot.meta.index).num(m.snapshot.meta.term);
    writeConf(w, m.snapshot.meta.conf);
  }
  return w.finish();
}

export function decodeMessage(b: Uint8Array, snapshotData: Uint8Array = new Uint8Array(0)): Message {
  const r = new ByteReader(b);
  const typeIndex = r.u8();
  const type = MESSAGE_TYPES[typeIndex];
  if (type === undefined) throw new RangeError(`unknown message type ${typeIndex}`);
  const m: Message = {
    type,
    from: r.u64(),
    to: r.u64(),
    term: r.num(),
    logTerm: r.num(),
    index: r.num(),
    commit: r.num(),
    reject: r.u8() === 1,
    rejectHint: r.num(),
    entries: [],
  };
  if (r.u8() === 1) m.context = r.bytes().slice();
  for (let n = r.u32(); n > 0; n--) m.entries.push(readEntry(r));
  if (r.u8() === 1) {
    const index = r.num();
    const term = r.num();
    m.snapshot = { meta: { index, term, conf: readConf(r) }, data: snapshotData };
  }
  if (!r.done()) throw new RangeError(`trailing bytes in message (${b.length - r.pos})`);
  return m;
}
