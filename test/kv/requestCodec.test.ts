import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import path from 'node:path';
import protobuf from 'protobufjs';
import { decodeKvRequest, decodeRequest, decodeRequestField, decodeServerRequest, encodeKvRequest, encodeServerRequest } from '../../src/kv/requestCodec.js';
import { ProtoReader, ProtoWriter } from '../../src/common/protobufWire.js';
import { ENTRY_TYPE } from '../../src/etcdfile/raftpbCodec.js';
import { describeEntry } from '../../src/etcdfile/walEntryKinds.js';
import { AlarmType, CompareResult, CompareTarget, SortOrder, SortTarget, type KvRequest } from '../../src/kv/types.js';
import { ROOT } from '../support/tools.js';
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

/** etcd's own AlarmRequest, read by protobufjs from src/proto/rpc.proto. */
function etcdAlarmRequest(): protobuf.Type {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => (path.isAbsolute(target) ? target : path.join(ROOT, 'src/proto', target));
  root.loadSync(['rpc.proto'], { keepCase: true }).resolveAll();
  return root.lookupType('etcdserverpb.AlarmRequest');
}

/** The fields of an InternalRaftRequest, by number. */
function topFields(data: Uint8Array): Map<number, Buffer> {
  const r = new ProtoReader(data);
  const out = new Map<number, Buffer>();
  while (!r.done) {
    const { field, wire } = r.tag();
    if (wire === 2) out.set(field, r.bytes());
    else r.skip(wire);
  }
  return out;
}

describe('The member’s own requests, as etcd encodes them', () => {
  const memberId = 0x8e9e05c52164694dn;

  test('an alarm is etcd’s AlarmRequest in field 10, and a whole etcd alarm entry decodes as it is', () => {
    const bytes = encodeServerRequest({ alarm: { action: 'ACTIVATE', memberId, alarm: AlarmType.NoSpace } }, 3n);
    const body = topFields(bytes).get(10);
    assert.ok(body, 'field 10 holds the alarm');
    const etcd = etcdAlarmRequest().toObject(etcdAlarmRequest().decode(body), { enums: String, longs: String });
    assert.deepEqual(etcd, { action: 'ACTIVATE', memberID: memberId.toString(), alarm: 'NOSPACE' });
    // etcdctl alarm disarm, as etcd 3.4 proposes it: ID, header, alarm.
    const AlarmRequest = etcdAlarmRequest();
    const disarm = new ProtoWriter()
      .int(1, 99n)
      .message(100, (h) => h.int(1, 99n))
      .bytes(10, AlarmRequest.encode(AlarmRequest.fromObject({ action: 2, memberID: memberId.toString(), alarm: 1 })).finish())
      .finish();
    assert.deepEqual(decodeServerRequest(disarm), { alarm: { action: 'DEACTIVATE', memberId, alarm: AlarmType.NoSpace } });
    // GET (etcdctl alarm list) changes nothing: no request to apply.
    const list = new ProtoWriter()
      .bytes(10, AlarmRequest.encode(AlarmRequest.fromObject({ action: 0, memberID: memberId.toString(), alarm: 0 })).finish())
      .finish();
    assert.equal(decodeServerRequest(list), undefined);
  });

  test('a publish is etcd 3.5’s ClusterMemberAttrSetRequest in field 1301, which the etcd WAL reader names', () => {
    const publish = { memberId, name: 'node-1', clientURLs: ['https://10.0.0.1:2379', 'https://10.0.0.1:22379'] };
    const bytes = encodeServerRequest({ publish }, 5n);
    // member_ID=1, member_attributes=2 {name=1, client_urls=2 (repeated)}
    const attrs = new ProtoWriter().string(1, publish.name).string(2, publish.clientURLs[0]).string(2, publish.clientURLs[1]).finish();
    const want = new ProtoWriter().int(1, memberId).bytes(2, attrs).finish();
    assert.deepEqual(topFields(bytes).get(1301), want);
    assert.deepEqual(decodeServerRequest(bytes), { publish });
    const described = describeEntry({ index: 7, term: 2, type: ENTRY_TYPE.normal, data: bytes });
    assert.equal(described.text, `member ${memberId.toString(16)} attributes set`);
  });

  test('entries written with the JSON bodies of earlier versions (alarm in 10, publish in 20) still decode', () => {
    const alarm = new ProtoWriter()
      .int(1, 4n)
      .bytes(10, Buffer.from(JSON.stringify({ action: 'DEACTIVATE', memberId: memberId.toString(16), alarm: AlarmType.Corrupt })))
      .finish();
    assert.deepEqual(decodeRequest(alarm), { id: 4n, server: { alarm: { action: 'DEACTIVATE', memberId, alarm: AlarmType.Corrupt } } });
    const publish = new ProtoWriter()
      .int(1, 6n)
      .bytes(20, Buffer.from(JSON.stringify({ id: memberId.toString(16), name: 'old', clientURLs: ['http://127.0.0.1:2379'] })))
      .finish();
    assert.deepEqual(decodeRequest(publish), { id: 6n, server: { publish: { memberId, name: 'old', clientURLs: ['http://127.0.0.1:2379'] } } });
  });

  test('one field decodes without re-wrapping it as a whole request', () => {
    const put = topFields(encodeKvRequest({ put: { key: b('k'), value: b('v') } })).get(4)!;
    assert.deepEqual(plain(decodeRequestField(4, put)), plain({ kv: { put: { key: b('k'), value: b('v') } } }));
    const grant = topFields(encodeServerRequest({ leaseGrant: { id: 9n, ttl: 30 } }, 1n)).get(8)!;
    assert.deepEqual(decodeRequestField(8, grant), { server: { leaseGrant: { id: 9n, ttl: 30 } } });
    assert.equal(decodeRequestField(11, Buffer.alloc(0)), undefined, 'lease_checkpoint: not one the member applies');
  });
});
