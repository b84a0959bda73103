// CRC-32C: the table code (small inputs) and the native module (large ones)
// must agree, also when a running checksum moves from one to the other.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { crc32c } from '../../src/common/crc32c.js';

const native = (createRequire(import.meta.url)('@node-rs/crc32') as { crc32c: (b: string | Uint8Array, init?: number) => number }).crc32c;

test('crc32c: the standard check value, and strings as UTF-8', () => {
  assert.equal(crc32c('123456789'), 0xe3069283);
  assert.equal(crc32c(Buffer.from('123456789')), 0xe3069283);
  assert.equal(crc32c(''), 0);
  assert.equal(crc32c('ключ'), native('ключ') >>> 0);
});

test('crc32c: every size around the native threshold, from any running value, as the native module computes it', () => {
  const bytes = Buffer.alloc(2100);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7919 + 13) & 0xff;
  let running = 0;
  for (let size = 0; size <= bytes.length; size += 7) {
    const b = bytes.subarray(bytes.length - size);
    assert.equal(crc32c(b, running), native(b, running) >>> 0, `size ${size}`);
    running = crc32c(b, running);
  }
  // A checksum taken in small pieces equals the one taken at once.
  let pieces = 0;
  for (let off = 0; off < bytes.length; off += 100) pieces = crc32c(bytes.subarray(off, off + 100), pieces);
  assert.equal(pieces, crc32c(bytes));
});
