// The snapshot stream's parser: gRPC-framed SnapshotResponse messages, as the
// real codec encodes them, cut into pieces anywhere (HTTP/2 DATA frames do not
// follow message or field boundaries), give back every blob byte in order and
// the last remaining_bytes; bad frames are refused.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { service } from '../../src/proto/grpcClients.js';
import { StreamError } from '../../src/net/grpcClient.js';
import { SnapshotResponseParser } from '../../src/client/snapshotStream.js';

const encode = service('etcdserverpb.Maintenance').service.Snapshot.responseSerialize as (msg: object) => Buffer;

function framed(message: Buffer, compressed = 0): Buffer {
  const prefix = Buffer.alloc(5);
  prefix[0] = compressed;
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/** A stream of messages: headers, remaining_bytes beyond 2^32, empty blobs and an empty message among them. */
function sample(): { wire: Buffer; data: Buffer; lastRemaining: number } {
  const blobs = [randomBytes(3000), Buffer.alloc(0), randomBytes(70_000), randomBytes(1), randomBytes(129)];
  const header = { cluster_id: '14443903163313418560', member_id: '1', revision: '77', raft_term: '3' };
  const remaining = [2 ** 40 + 5, 70_130, 130, 129, 0];
  const parts = blobs.map((blob, i) => framed(encode({ header: i % 2 === 0 ? header : undefined, remaining_bytes: String(remaining[i]), blob })));
  parts.splice(2, 0, framed(Buffer.alloc(0)));
  return { wire: Buffer.concat(parts), data: Buffer.concat(blobs), lastRemaining: 0 };
}

function feedInPieces(wire: Buffer, cut: (left: number) => number): { data: Buffer; parser: SnapshotResponseParser; remainings: number[] } {
  const parser = new SnapshotResponseParser();
  const out: Buffer[] = [];
  const remainings: number[] = [];
  for (let at = 0; at < wire.length;) {
    const n = Math.max(1, Math.min(cut(wire.length - at), wire.length - at));
    out.push(...parser.feed(wire.subarray(at, at + n)).map((b) => Buffer.from(b)));
    remainings.push(parser.remainingBytes);
    at += n;
  }
  return { data: Buffer.concat(out), parser, remainings };
}

test('blobs come out whole and in order however the stream is cut', () => {
  const { wire, data, lastRemaining } = sample();
  const cuts: Array<[string, (left: number) => number]> = [
    ['one piece', (left) => left],
    ['single bytes', () => 1],
    ['16 KiB frames', () => 16384],
    ['random sizes', () => 1 + Math.floor(Math.random() * 40)],
    ['odd sizes', () => 7],
  ];
  for (const [name, cut] of cuts) {
    const got = feedInPieces(wire, cut);
    assert.ok(got.data.equals(data), `${name}: the blob bytes`);
    assert.equal(got.parser.remainingBytes, lastRemaining, `${name}: remaining_bytes`);
    assert.ok(got.parser.atBoundary, `${name}: ends between messages`);
  }
  assert.ok(feedInPieces(wire, () => 1).remainings.includes(2 ** 40 + 5), 'a remaining_bytes beyond 32 bits is read whole');
});

test('unknown fields of every wire type are skipped', () => {
  // field 9 varint, field 10 fixed64, field 11 bytes, field 12 fixed32, then blob (3) "abc"
  const message = Buffer.from([
    0x48,
    0x96,
    0x01,
    0x51,
    ...Buffer.alloc(8, 1),
    0x5a,
    0x02,
    0xff,
    0xff,
    0x65,
    ...Buffer.alloc(4, 2),
    0x1a,
    0x03,
    0x61,
    0x62,
    0x63,
  ]);
  assert.equal(feedInPieces(framed(message), () => 1).data.toString(), 'abc');
});

test('a stream cut inside a message is not at a boundary', () => {
  const { wire } = sample();
  for (const end of [3, 5, 20, wire.length - 1]) {
    const p = new SnapshotResponseParser();
    p.feed(wire.subarray(0, end));
    assert.equal(p.atBoundary, false, `cut at ${end}`);
  }
  const whole = new SnapshotResponseParser();
  whole.feed(wire);
  assert.equal(whole.atBoundary, true);
});

test('bad frames are refused with a one-line reason', () => {
  const refused = (wire: Buffer, pattern: RegExp) =>
    assert.throws(
      () => new SnapshotResponseParser().feed(wire),
      (e: Error) => e instanceof StreamError && pattern.test(e.message) && !e.message.includes('\n'),
    );
  refused(framed(encode({ remaining_bytes: '0', blob: Buffer.from('x') }), 1), /compressed snapshot message/);
  refused(framed(Buffer.from([0x1a, 0x05, 0x61])), /a field of 5 bytes in the 1 left of its message/);
  refused(framed(Buffer.from([0x1b])), /wire type 3/);
  refused(framed(Buffer.from([0x10])), /a field cut off at the end of its message/);
  refused(framed(Buffer.alloc(21, 0x80)), /a field header longer than 20 bytes/);
});
