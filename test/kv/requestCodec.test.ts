import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeKvRequest, encodeKvRequest } from '../../src/kv/requestCodec.js';
import { ProtoWriter } from '../../src/common/protobufWire.js';
import { CompareResult, CompareTarget, SortOrder, SortTarget, type KvRequest } from '../../src/kv/types.js';
import { b } from './kvFixture.js';

/** Decoded requests hold views; compare them as plain data. */
const plain = (x: unknown) => JSON.parse(JSON.stringify(x, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))) as unknown;

function roundTrip(req: KvRequest, id?: bigint): void {
  const decoded = decodeKvRequest(encodeKvRequest(req, id));
  assert.equal(decoded.id, id ?? 0n);
  assert.deepEqual(plain(decoded.request), plain(req));
}

describe('Request codec', () => {
  test('a put encodes as etcd’s InternalRaftRequest bytes', () => {
    // InternalRaftRequest{put(4): PutRequest{key(1): "foo", value(2): "bar"}}
    assert.equal(encodeKvRequest({ put: { key: b('foo'), value: b('bar') } }).toString('hex'), '220a0a03666f6f1203626172');
  });

  test('every request kind round-trips', () => {
    roundTrip(
      { put: { key: b('k'), value: b('v'), lease: 0x7fff_ffff_ffff_fff0n, prevKv: true, ignoreValue: true, ignoreLease: true } },
      12345678901234567890n,
    );
    roundTrip({
      range: {
        key: b('a'),
        rangeEnd: b('\0'),
        limit: 10,
        revision: 99,
        sortOrder: SortOrder.Descend,
        sortTarget: SortTarget.Value,
        serializable: true,
        keysOnly: true,
        countOnly: true,
        minModRevision: 1,
        maxModRevision: 2,
        minCreateRevision: 3,
        maxCreateRevision: 2 ** 40,
      },
    });
    roundTrip({ deleteRange: { key: b('a'), rangeEnd: b('b'), prevKv: true } });
    roundTrip({ compaction: { revision: 1000, physical: true } });
  });

  test('nested txns with every compare target round-trip', () => {
    roundTrip({
      txn: {
        compare: [
          { result: CompareResult.Greater, target: CompareTarget.Version, key: b('a'), version: 3 },
          { result: CompareResult.Less, target: CompareTarget.Create, key: b('a'), createRevision: 4, rangeEnd: b('z') },
          { result: CompareResult.NotEqual, target: CompareTarget.Mod, key: b('a'), modRevision: 5 },
          { result: CompareResult.Equal, target: CompareTarget.Value, key: b('a'), value: b('\x00\xff') },
          { result: CompareResult.Equal, target: CompareTarget.Lease, key: b('a'), lease: 77n },
        ],
        success: [
          { requestPut: { key: b('x'), value: b('1') } },
          { requestTxn: { compare: [], success: [{ requestDeleteRange: { key: b('y') } }], failure: [{ requestRange: { key: b('z') } }] } },
        ],
        failure: [{ requestRange: { key: b('q'), limit: 1 } }],
      },
    });
  });

  test('an empty value and an empty op survive the trip', () => {
    const d = decodeKvRequest(encodeKvRequest({ txn: { success: [{ requestPut: { key: b('k'), value: b('') } }] } }));
    assert.deepEqual(plain(d.request), plain({ txn: { compare: [], success: [{ requestPut: { key: b('k') } }], failure: [] } }));
  });

  test('unknown fields are skipped; an entry without a KV request decodes to none', () => {
    const w = new ProtoWriter();
    w.int(1, 7n); // ID
    w.message(8, (m) => m.int(1, 5)); // lease_grant: not ours
    w.string(2000, 'future field');
    const d = decodeKvRequest(w.finish());
    assert.deepEqual(d, { id: 7n });
    assert.equal(decodeKvRequest(new Uint8Array(0)).request, undefined);
  });

  test('truncated bytes are refused, not misread', () => {
    const bytes = encodeKvRequest({ put: { key: b('foo'), value: b('bar') } });
    assert.throws(() => decodeKvRequest(bytes.subarray(0, bytes.length - 2)), /past the end/);
  });

  test('negative int64 values use ten bytes and come back', () => {
    roundTrip({ range: { key: b('a'), revision: -5, limit: -1 } });
    roundTrip({ put: { key: b('a'), lease: -2n } });
  });
});
