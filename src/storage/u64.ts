// Little-endian u64 fields. Indexes and terms are plain numbers (< 2^53), IDs are bigint.

const TWO_32 = 2 ** 32;

export function putU64(buf: Buffer, offset: number, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new RangeError(`not a u64-safe integer: ${value}`);
  buf.writeUInt32LE(value % TWO_32, offset);
  buf.writeUInt32LE(Math.floor(value / TWO_32), offset + 4);
}

export function getU64(buf: Buffer, offset: number): number {
  const hi = buf.readUInt32LE(offset + 4);
  if (hi >= 2 ** 21) throw new RangeError(`u64 at offset ${offset} exceeds 2^53`);
  return hi * TWO_32 + buf.readUInt32LE(offset);
}

export function putId(buf: Buffer, offset: number, value: bigint): void {
  buf.writeBigUInt64LE(value, offset);
}

export function getId(buf: Buffer, offset: number): bigint {
  return buf.readBigUInt64LE(offset);
}

export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
