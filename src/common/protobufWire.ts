// A tiny protobuf wire-format writer and reader: enough for mvccpb.KeyValue (which
// HashKV must hash byte-for-byte as etcd marshals it) and for the KV requests that
// Raft entries carry. proto3 rules: scalar fields equal to their default are not
// written; int64 is a varint of the two's complement (10 bytes when negative).

const enum WireType {
  Varint = 0,
  Fixed64 = 1,
  Len = 2,
  Fixed32 = 5,
}

export class ProtoWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(initialSize = 256) {
    this.buf = Buffer.allocUnsafe(initialSize);
  }

  get length(): number {
    return this.pos;
  }

  /** Forget the contents, keep the memory (for writers reused in loops). */
  reset(): void {
    this.pos = 0;
  }

  /** A copy of the bytes written so far. */
  finish(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos));
  }

  /** A view of the bytes written so far; valid until the next write or reset. */
  view(): Buffer {
    return this.buf.subarray(0, this.pos);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const next = Buffer.allocUnsafe(size);
    this.buf.copy(next, 0, 0, this.pos);
    this.buf = next;
  }

  /** Raw bytes, no tag (for callers building non-protobuf records in the same buffer). */
  raw(bytes: Uint8Array): this {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.pos);
    this.pos += bytes.length;
    return this;
  }

  /** Raw 8-byte big-endian unsigned integer, no tag (etcd's revision keys). */
  rawUint64BE(n: number): this {
    this.ensure(8);
    this.buf.writeUInt32BE(Math.floor(n / 0x1_0000_0000), this.pos);
    this.buf.writeUInt32BE(n >>> 0, this.pos + 4);
    this.pos += 8;
    return this;
  }

  /** Raw bytes given as hex, no tag. */
  rawHex(hex: string): this {
    const n = hex.length >>> 1;
    this.ensure(n);
    this.buf.write(hex, this.pos, n, 'hex');
    this.pos += n;
    return this;
  }

  /** A bytes field given as hex; skipped when empty (proto3). */
  bytesHex(field: number, hex: string): this {
    if (hex.length === 0) return this;
    this.tag(field, WireType.Len);
    this.varint(hex.length >>> 1);
    return this.rawHex(hex);
  }

  rawByte(b: number): this {
    this.ensure(1);
    this.buf[this.pos++] = b;
    return this;
  }

  private varint(n: number): void {
    // n is a non-negative safe integer here.
    this.ensure(10);
    while (n >= 0x80) {
      this.buf[this.pos++] = (n % 0x80) | 0x80;
      n = Math.floor(n / 0x80);
    }
    this.buf[this.pos++] = n;
  }

  private varintBig(n: bigint): void {
    // n is in [0, 2^64). Two 32-bit halves, shifted as numbers: a bigint
    // operation per 7 bits made every 64-bit ID cost a microsecond.
    this.ensure(10);
    let lo = Number(n & 0xffffffffn);
    let hi = Number(n >> 32n);
    while (hi > 0 || lo >= 0x80) {
      this.buf[this.pos++] = (lo & 0x7f) | 0x80;
      lo = ((lo >>> 7) | (hi << 25)) >>> 0;
      hi >>>= 7;
    }
    this.buf[this.pos++] = lo;
  }

  private tag(field: number, wire: WireType): void {
    this.varint(field * 8 + wire);
  }

  /** int64/uint64/enum field; accepts any integer as number or bigint. */
  int(field: number, n: number | bigint): this {
    if (n === 0 || n === 0n) return this;
    return this.intAlways(field, n);
  }

  /** A varint field written even when zero (a set oneof member). */
  intAlways(field: number, n: number | bigint): this {
    this.tag(field, WireType.Varint);
    this.varintOfInteger(n);
    return this;
  }

  /** Any integer as a varint: a negative one as its 64-bit two's complement. */
  private varintOfInteger(n: number | bigint): void {
    if (typeof n === 'number' && n >= 0 && n <= Number.MAX_SAFE_INTEGER) this.varint(n);
    else this.varintBig(BigInt.asUintN(64, BigInt(n)));
  }

  /** A packed repeated varint field (proto3's encoding of repeated integers, enums and bools); skipped when empty. */
  packed(field: number, values: ReadonlyArray<number | bigint>): this {
    if (values.length === 0) return this;
    const sub = new ProtoWriter(values.length * 2);
    for (const v of values) sub.varintOfInteger(v);
    return this.bytesAlways(field, sub.view());
  }

  bool(field: number, b: boolean | undefined): this {
    if (!b) return this;
    this.tag(field, WireType.Varint);
    this.varint(1);
    return this;
  }

  bytes(field: number, b: Uint8Array | undefined): this {
    if (!b || b.length === 0) return this;
    return this.bytesAlways(field, b);
  }

  /** A length-delimited field written even when empty (a set oneof, a repeated element). */
  bytesAlways(field: number, b: Uint8Array): this {
    this.tag(field, WireType.Len);
    this.varint(b.length);
    return this.raw(b);
  }

  string(field: number, s: string | undefined): this {
    if (!s) return this;
    return this.bytesAlways(field, Buffer.from(s, 'utf8'));
  }

  /** An embedded message, always written (presence matters for messages). */
  message(field: number, write: (w: ProtoWriter) => void): this {
    const sub = new ProtoWriter(64);
    write(sub);
    return this.bytesAlways(field, sub.view());
  }
}

export class ProtoReader {
  private hi = 0;
  private lo = 0;

  /** `pos`: where to begin reading (past a prefix the caller has already matched). */
  constructor(
    private readonly buf: Uint8Array,
    private pos = 0,
  ) {}

  get done(): boolean {
    return this.pos >= this.buf.length;
  }

  /** Next field: its number and wire type. */
  tag(): { field: number; wire: number } {
    const t = this.uint();
    const field = Math.floor(t / 8);
    if (field === 0) throw new Error('protobuf: field number 0');
    return { field, wire: t % 8 };
  }

  /**
   * Unsigned varint as a bigint (full 64 bits; bits beyond them dropped). Read
   * into two 32-bit halves and made a bigint once: a bigint per byte made every
   * 64-bit ID (members', the cluster's, in each peer envelope) about 40 of them.
   */
  uint64(): bigint {
    this.halves();
    return this.hi === 0 ? BigInt(this.lo) : (BigInt(this.hi) << 32n) | BigInt(this.lo);
  }

  /** Reads a varint into hi and lo: its high and low 32 bits, unsigned (fields, not an array: nothing allocated). Every varint read goes through here. */
  private halves(): void {
    let lo = 0;
    let hi = 0;
    for (let i = 0; i < 10; i++) {
      const b = this.byte();
      const bits = b & 0x7f;
      if (i < 4) lo |= bits << (7 * i);
      else if (i === 4) {
        lo |= bits << 28;
        hi = bits >>> 4;
      } else hi |= bits << (7 * i - 32);
      if (b < 0x80) {
        this.hi = hi >>> 0;
        this.lo = lo >>> 0;
        return;
      }
    }
    throw new Error('protobuf: varint longer than 10 bytes');
  }

  /** Varint as a non-negative number; refuses one beyond 2^53 rather than rounding it. */
  uint(): number {
    this.halves();
    if (this.hi >= 0x20_0000) throw new Error(`protobuf: value ${(BigInt(this.hi) << 32n) | BigInt(this.lo)} does not fit a number`);
    return this.hi * 0x1_0000_0000 + this.lo;
  }

  /** A 64-bit varint as a decimal string (signed: int64's two's complement); no bigint for values below 2^53. */
  varintString(signed: boolean): string {
    this.halves();
    if (this.hi < 0x20_0000) return String(this.hi * 0x1_0000_0000 + this.lo);
    const big = (BigInt(this.hi) << 32n) | BigInt(this.lo);
    return String(signed ? BigInt.asIntN(64, big) : big);
  }

  /** uint32: the varint's low 32 bits (a negative int32 arrives as ten bytes). */
  uint32(): number {
    this.halves();
    return this.lo;
  }

  /** int64 as a signed bigint. */
  int64(): bigint {
    return BigInt.asIntN(64, this.uint64());
  }

  /** int64 as a number; refuses values beyond 2^53 rather than rounding them. */
  int64Number(): number {
    const v = this.int64();
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER)) {
      throw new Error(`protobuf: int64 ${v} does not fit a number`);
    }
    return Number(v);
  }

  bool(): boolean {
    this.halves();
    return (this.hi | this.lo) !== 0;
  }

  /** A view into the input (no copy): keep the input alive and unmodified while in use. */
  bytes(): Buffer {
    const n = this.uint();
    if (this.pos + n > this.buf.length) throw new Error('protobuf: length-delimited field runs past the end');
    const out = Buffer.from(this.buf.buffer, this.buf.byteOffset + this.pos, n);
    this.pos += n;
    return out;
  }

  string(): string {
    return this.bytes().toString('utf8');
  }

  skip(wire: number): void {
    switch (wire as WireType) {
      case WireType.Varint:
        this.uint64();
        return;
      case WireType.Fixed64:
        this.advance(8);
        return;
      case WireType.Len:
        this.advance(this.uint());
        return;
      case WireType.Fixed32:
        this.advance(4);
        return;
      default:
        throw new Error(`protobuf: unsupported wire type ${wire}`);
    }
  }

  private advance(n: number): void {
    if (this.pos + n > this.buf.length) throw new Error('protobuf: field runs past the end');
    this.pos += n;
  }

  private byte(): number {
    if (this.pos >= this.buf.length) throw new Error('protobuf: truncated varint');
    return this.buf[this.pos++];
  }
}
