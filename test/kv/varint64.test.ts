// 64-bit varints as the codec reads them (member and cluster IDs, revisions,
// leases): decimal strings and bigints read without a bigint per 7 bits must
// equal what bigint arithmetic gives, at every width and sign.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProtoReader, ProtoWriter } from '../../src/common/protobufWire.js';

const EDGES: bigint[] = [0n, 1n, 127n, 128n, 0xffff_ffffn, 0x1_0000_0000n, (1n << 49n) - 1n, 1n << 49n, (1n << 53n) - 1n, 1n << 53n, (1n << 53n) + 1n];
EDGES.push(0x1f_ffffn << 32n, 0x20_0000n << 32n, (1n << 63n) - 1n, 1n << 63n, (1n << 64n) - 1n, 12345678901234567890n);

/** A value of `bits` random bits, from a seeded generator (the same values every run). */
function seeded(seed: number): (bits: number) => bigint {
  let s = seed;
  const next = () => (s = (s * 1103515245 + 12345) % 0x8000_0000);
  return (bits) => {
    let v = 0n;
    for (let i = 0; i < 4; i++) v = (v << 16n) | BigInt(next() & 0xffff);
    return bits >= 64 ? v : v & ((1n << BigInt(bits)) - 1n);
  };
}

function reader(v: bigint): ProtoReader {
  const r = new ProtoReader(new ProtoWriter(16).intAlways(1, v).view());
  r.tag();
  return r;
}

test('a 64-bit varint reads back as the same decimal string and bigint, unsigned and signed', () => {
  const random = seeded(7);
  const values = [...EDGES];
  for (let i = 0; i < 20_000; i++) values.push(random(i % 65));
  for (const v of values) {
    assert.equal(reader(v).varintString(false), String(v), `uint64 ${v}`);
    assert.equal(reader(v).varintString(true), String(BigInt.asIntN(64, v)), `int64 ${v}`);
    assert.equal(reader(v).uint64(), v, `bigint ${v}`);
  }
});

test('a negative int64 (ten bytes on the wire) reads back as its negative decimal', () => {
  for (const v of [-1n, -2n, -(1n << 53n), -123456789012345678n, -(1n << 63n)]) {
    assert.equal(reader(v).varintString(true), String(v));
    assert.equal(reader(v).varintString(false), String(BigInt.asUintN(64, v)));
  }
});

test('a varint longer than ten bytes is refused', () => {
  const r = new ProtoReader(Buffer.from([0x08, ...Array<number>(10).fill(0xff), 0x01]));
  r.tag();
  assert.throws(() => r.varintString(false), /varint longer than 10 bytes/);
  assert.equal(reader(1n << 63n).varintString(false), '9223372036854775808');
});
