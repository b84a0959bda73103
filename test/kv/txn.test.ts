import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ErrCompacted, ErrFutureRev, ErrKeyNotFound, ErrLeaseNotFound } from '../../src/kv/errors.js';
import { CompareResult, CompareTarget, type Compare, type PutResponse, type RangeResponse, type RequestOp, type TxnResponse } from '../../src/kv/types.js';
import { Applier, b, pairs } from './kvFixture.js';

const put = (key: string, value: string): RequestOp => ({ requestPut: { key: b(key), value: b(value) } });
const get = (key: string, rangeEnd?: string, revision?: number): RequestOp => ({
  requestRange: { key: b(key), ...(rangeEnd !== undefined ? { rangeEnd: b(rangeEnd) } : {}), ...(revision ? { revision } : {}) },
});
const del = (key: string): RequestOp => ({ requestDeleteRange: { key: b(key) } });

function cmp(key: string, target: CompareTarget, result: CompareResult, v: number | string | bigint): Compare {
  const c: Compare = { key: b(key), target, result };
  if (target === CompareTarget.Value) c.value = b(String(v));
  else if (target === CompareTarget.Lease) c.lease = BigInt(v);
  else if (target === CompareTarget.Version) c.version = Number(v);
  else if (target === CompareTarget.Create) c.createRevision = Number(v);
  else c.modRevision = Number(v);
  return c;
}

/** a: create 2, mod 3, version 2, value "v2". */
function store(): Applier {
  const a = Applier.memory();
  a.put('a', 'v1');
  a.put('a', 'v2');
  return a;
}

const succeeds = (a: Applier, c: Compare) => a.txn({ compare: [c] }).succeeded;

describe('Txn compares', () => {
  const { Equal, Greater, Less, NotEqual } = CompareResult;
  const cases: [CompareTarget, number | string, [boolean, boolean, boolean, boolean]][] = [
    // target, operand, [EQUAL, GREATER, LESS, NOT_EQUAL] against a's value
    [CompareTarget.Version, 2, [true, false, false, false]],
    [CompareTarget.Version, 1, [false, true, false, true]],
    [CompareTarget.Create, 3, [false, false, true, true]],
    [CompareTarget.Mod, 3, [true, false, false, false]],
    [CompareTarget.Value, 'v2', [true, false, false, false]],
    [CompareTarget.Value, 'v10', [false, true, false, true]],
    [CompareTarget.Lease, 0, [true, false, false, false]],
  ];
  for (const [target, operand, expected] of cases) {
    test(`${CompareTarget[target]} against ${operand}: EQUAL/GREATER/LESS/NOT_EQUAL = ${expected.join('/')}`, () => {
      const a = store();
      const got = [Equal, Greater, Less, NotEqual].map((r) => succeeds(a, cmp('a', target, r, operand)));
      assert.deepEqual(got, expected);
    });
  }

  test('a missing key compares as zeros, but a value compare on it always fails', () => {
    const a = store();
    assert.equal(succeeds(a, cmp('nokey', CompareTarget.Version, CompareResult.Equal, 0)), true);
    assert.equal(succeeds(a, cmp('nokey', CompareTarget.Create, CompareResult.Equal, 0)), true);
    assert.equal(succeeds(a, cmp('nokey', CompareTarget.Value, CompareResult.Equal, '')), false);
    assert.equal(succeeds(a, cmp('nokey', CompareTarget.Value, CompareResult.NotEqual, 'x')), false);
  });

  test('a compare with range_end must hold for every key in the range', () => {
    const a = Applier.memory();
    a.put('k1', 'x');
    a.put('k2', 'x');
    a.put('k3', 'y');
    const c = (end: string): Compare => ({ ...cmp('k1', CompareTarget.Value, CompareResult.Equal, 'x'), rangeEnd: b(end) });
    assert.equal(a.txn({ compare: [c('k3')] }).succeeded, true);
    assert.equal(a.txn({ compare: [c('k4')] }).succeeded, false);
    assert.equal(a.txn({ compare: [{ ...c('\0'), key: b('k3'), value: b('y') }] }).succeeded, true, 'from-key range_end');
  });

  test('all compares must hold for the success branch', () => {
    const a = store();
    const yes = cmp('a', CompareTarget.Version, CompareResult.Equal, 2);
    const no = cmp('a', CompareTarget.Version, CompareResult.Equal, 9);
    assert.equal(a.txn({ compare: [yes, yes] }).succeeded, true);
    assert.equal(a.txn({ compare: [yes, no] }).succeeded, false);
    assert.equal(a.txn({ compare: [] }).succeeded, true);
  });
});

describe('Txn', () => {
  test('the failure branch runs when a compare fails', () => {
    const a = store();
    const r = a.txn({
      compare: [cmp('a', CompareTarget.Value, CompareResult.Equal, 'nope')],
      success: [put('s', '1')],
      failure: [put('f', '1')],
    });
    assert.equal(r.succeeded, false);
    assert.deepEqual(pairs(a.get('\0', '\0').kvs), ['a=v2', 'f=1']);
  });

  test('one txn is one revision; its changes are sub-revisions in order', () => {
    const a = store();
    const r = a.txn({ success: [put('x', '1'), put('y', '2'), del('a')] });
    assert.equal(r.header.revision, 4);
    assert.equal(a.kv.currentRevision(), 4);
    const kvs = a.get('\0', '\0').kvs;
    assert.deepEqual(
      kvs.map((kv) => [kv.key.toString(), kv.modRevision]),
      [
        ['x', 4],
        ['y', 4],
      ],
    );
    for (const resp of r.responses) {
      const inner = 'responsePut' in resp ? resp.responsePut : 'responseDeleteRange' in resp ? resp.responseDeleteRange : undefined;
      assert.equal(inner?.header.revision, 4);
    }
  });

  test('a key written twice in one txn gets two versions at the same revision', () => {
    const a = Applier.memory();
    a.txn({ success: [put('k', '1'), put('k', '2')] });
    const kv = a.get('k').kvs[0];
    assert.deepEqual([kv.value.toString(), kv.version, kv.createRevision, kv.modRevision], ['2', 2, 2, 2]);
  });

  test('ranges inside a txn see the txn’s earlier writes and its pending revision', () => {
    const a = store();
    const r = a.txn({ success: [get('n'), put('n', '1'), get('n')] });
    const [before, , after] = r.responses as { responseRange: RangeResponse }[];
    assert.deepEqual(before.responseRange.kvs, []);
    assert.equal(before.responseRange.header.revision, 3);
    assert.deepEqual(pairs(after.responseRange.kvs), ['n=1']);
    assert.equal(after.responseRange.header.revision, 4);
  });

  test('a txn without writes uses no revision', () => {
    const a = store();
    const r = a.txn({ success: [get('a')] });
    assert.equal(r.header.revision, 3);
    assert.equal(a.kv.currentRevision(), 3);
  });

  test('nested txns: compares are all evaluated before any write', () => {
    const a = Applier.memory();
    // The nested compare asks for "flag" to exist, which the outer txn creates first.
    const r = a.txn({
      success: [
        put('flag', '1'),
        {
          requestTxn: {
            compare: [cmp('flag', CompareTarget.Version, CompareResult.Greater, 0)],
            success: [put('nested', 'saw-flag')],
            failure: [put('nested', 'no-flag')],
          },
        },
      ],
    });
    assert.deepEqual(pairs(a.get('nested').kvs), ['nested=no-flag']);
    const nested = (r.responses[1] as { responseTxn: TxnResponse }).responseTxn;
    assert.equal(nested.succeeded, false);
    assert.equal(nested.header.revision, 0, 'etcd leaves nested txn headers at 0');
    assert.equal((nested.responses[0] as { responsePut: PutResponse }).responsePut.header.revision, 2);
    assert.equal(r.header.revision, 2);
  });

  test('a put naming an unknown lease fails the whole txn before any write', () => {
    const a = store();
    const e = a.err({ txn: { success: [put('x', '1'), { requestPut: { key: b('y'), value: b('2'), lease: 77n } }] } });
    assert.equal(e, ErrLeaseNotFound);
    assert.deepEqual(a.get('x').kvs, []);
    assert.equal(a.kv.currentRevision(), 3);
  });

  test('a range at a future or compacted revision fails the whole txn', () => {
    const a = store();
    assert.equal(a.err({ txn: { success: [put('x', '1'), get('a', undefined, 4)] } }), ErrFutureRev);
    a.compact(3);
    assert.equal(a.err({ txn: { success: [put('x', '1'), get('a', undefined, 2)] } }), ErrCompacted);
    assert.deepEqual(a.get('x').kvs, []);
  });

  test('only the chosen branch is checked', () => {
    const a = store();
    const r = a.txn({
      compare: [cmp('a', CompareTarget.Version, CompareResult.Equal, 2)],
      success: [put('ok', '1')],
      failure: [{ requestPut: { key: b('bad'), value: b('1'), lease: 77n } }],
    });
    assert.equal(r.succeeded, true);
  });

  test('an op that fails mid-txn undoes the whole txn (etcd would panic)', () => {
    const a = store();
    const e = a.err({ txn: { success: [put('x', '1'), del('a'), { requestPut: { key: b('a'), ignoreValue: true } }] } });
    assert.equal(e, ErrKeyNotFound);
    assert.deepEqual(pairs(a.get('\0', '\0').kvs), ['a=v2']);
    assert.equal(a.kv.currentRevision(), 3);
    assert.equal(a.put('z', '1').header.revision, 4, 'the revision was not used');
  });
});
