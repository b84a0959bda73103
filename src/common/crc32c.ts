// CRC-32C (Castagnoli), the checksum of etcd's WAL and hashes and of our own
// log. Inputs below NATIVE_FROM bytes (log records, headers, hashed rows) are
// summed here with slicing-by-8 tables: faster than a call into the native
// module at that size, and an idle member never loads that module, which held
// it 4-7 MiB larger for good. Larger inputs (snapshot chunks, etcd files) load
// @node-rs/crc32 (hardware CRC, about 4x faster per byte here) at first use.
import { createRequire } from 'node:module';

type Crc32c = (input: string | Uint8Array, initial?: number) => number;

/** From this many bytes on, the native module is the faster (measured: 1 KiB 554 vs 246 ns, 120 B 71 vs 98 ns). */
const NATIVE_FROM = 512;
const POLY = 0x82f63b78; // reversed Castagnoli polynomial

const TABLES = (() => {
  const t = new Int32Array(8 * 256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    t[n] = c;
  }
  for (let n = 0; n < 256; n++) {
    for (let k = 1; k < 8; k++) {
      const prev = t[(k - 1) * 256 + n];
      t[k * 256 + n] = (prev >>> 8) ^ t[prev & 0xff];
    }
  }
  return t;
})();

let native: Crc32c | undefined;
const loadNative = (): Crc32c => (native ??= (createRequire(import.meta.url)('@node-rs/crc32') as { crc32c: Crc32c }).crc32c);

function tableCrc(b: Uint8Array, initial: number): number {
  const t = TABLES;
  let c = ~initial;
  let i = 0;
  const whole = b.length - (b.length & 7);
  for (; i < whole; i += 8) {
    const w = c ^ (b[i] | (b[i + 1] << 8) | (b[i + 2] << 16) | (b[i + 3] << 24));
    c =
      t[1792 + (w & 0xff)] ^
      t[1536 + ((w >>> 8) & 0xff)] ^
      t[1280 + ((w >>> 16) & 0xff)] ^
      t[1024 + (w >>> 24)] ^
      t[768 + b[i + 4]] ^
      t[512 + b[i + 5]] ^
      t[256 + b[i + 6]] ^
      t[b[i + 7]];
  }
  for (; i < b.length; i++) c = t[(c ^ b[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

/** CRC-32C of `input` (a string as UTF-8), continuing from `initial` (a previous result), as an unsigned 32-bit number. */
export function crc32c(input: string | Uint8Array, initial = 0): number {
  const bytes = typeof input === 'string' ? Buffer.from(input) : input;
  if (bytes.length >= NATIVE_FROM) return loadNative()(bytes, initial) >>> 0;
  return tableCrc(bytes, initial >>> 0);
}
