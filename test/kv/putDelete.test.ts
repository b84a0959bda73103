import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ErrKeyNotFound, ErrLeaseNotFound } from '../../src/kv/errors.js';
import { Applier, b, pairs } from './kvFixture.js';

const LEASE = 0x390da202416ae00an; // above 2^53, as etcd's lease IDs usually are

function withLease(): Applier {
  const a = Applier.memory();
  a.kv.apply(a.kv.appliedIndex() + 1, 1, (w) => w.cluster.putLease({ id: LEASE, ttl: 60 }));
  return a;
}

describe('Put', () => {
  test('the first write gets revision 2; a new key has version 1 and create = mod', () => {
    const a = Applier.memory();
    assert.equal(a.put('a', '1').header.revision, 2);
    const kv = a.get('a').kvs[0];
    assert.deepEqual([kv.createRevision, kv.modRevision, kv.version], [2, 2, 1]);
  });

  test('overwriting keeps create_revision and bumps version', () => {
    const a = Applier.memory();
    a.put('a', '1');
    a.put('b', 'x');
    a.put('a', '2');
    const kv = a.get('a').kvs[0];
    assert.deepEqual([kv.createRevision, kv.modRevision, kv.version, kv.value.toString()], [2, 4, 2, '2']);
  });

  test('a put after a delete starts a new generation', () => {
    const a = Applier.memory();
    a.put('a', '1');
    a.put('a', '2');
    a.del('a');
    a.put('a', '3'); // rev 5
    const kv = a.get('a').kvs[0];
    assert.deepEqual([kv.createRevision, kv.modRevision, kv.version], [5, 5, 1]);
  });

  test('an empty value is a value', () => {
    const a = Applier.memory();
    a.put('a', '');
    assert.deepEqual(pairs(a.get('a').kvs), ['a=']);
  });

  test('prev_kv returns the previous key-value, and nothing for a new key', () => {
    const a = Applier.memory();
    assert.equal(a.put('a', '1', { prevKv: true }).prevKv, undefined);
    const r = a.put('a', '2', { prevKv: true });
    assert.deepEqual(pairs([r.prevKv!]), ['a=1']);
    assert.equal(r.prevKv!.modRevision, 2);
  });

  test('ignore_value keeps the stored value', () => {
    const a = withLease();
    a.put('a', 'keep');
    a.put('a', '', { ignoreValue: true, lease: LEASE });
    const kv = a.get('a').kvs[0];
    assert.equal(kv.value.toString(), 'keep');
    assert.equal(kv.lease, LEASE);
    assert.equal(kv.version, 2);
  });

  test('ignore_lease keeps the stored lease', () => {
    const a = withLease();
    a.put('a', '1', { lease: LEASE });
    a.put('a', '2', { ignoreLease: true });
    const kv = a.get('a').kvs[0];
    assert.equal(kv.lease, LEASE);
    assert.equal(kv.value.toString(), '2');
  });

  test('ignore_value or ignore_lease on a missing key fails with ErrKeyNotFound, using no revision', () => {
    const a = Applier.memory();
    assert.equal(a.err({ put: { key: b('nokey'), ignoreValue: true } }), ErrKeyNotFound);
    assert.equal(a.err({ put: { key: b('nokey'), ignoreLease: true } }), ErrKeyNotFound);
    assert.equal(a.kv.currentRevision(), 1);
    assert.equal(a.kv.appliedIndex(), 2, 'failed requests are still applied entries');
  });

  test('a lease that does not exist fails with ErrLeaseNotFound', () => {
    const a = Applier.memory();
    assert.equal(a.err({ put: { key: b('a'), value: b('1'), lease: 5n } }), ErrLeaseNotFound);
    assert.deepEqual(a.get('a').kvs, []);
  });

  test('a lease above 2^53 is kept exactly', () => {
    const a = withLease();
    a.put('a', '1', { lease: LEASE });
    assert.equal(a.get('a').kvs[0].lease, LEASE);
    assert.deepEqual(a.kv.leaseKeys(LEASE), [b('a')]);
  });
});

describe('DeleteRange', () => {
  test('deleting a range tombstones each existing key in one revision', () => {
    const a = Applier.memory();
    a.put('a', '1');
    a.put('b', '2');
    a.put('c', '3');
    const r = a.del('a', 'c');
    assert.equal(r.deleted, 2);
    assert.equal(r.header.revision, 5);
    assert.deepEqual(pairs(a.get('\0', '\0').kvs), ['c=3']);
    assert.equal(a.kv.currentRevision(), 5);
  });

  test('deleting nothing uses no revision', () => {
    const a = Applier.memory();
    a.put('a', '1');
    const r = a.del('zz');
    assert.deepEqual([r.deleted, r.header.revision], [0, 2]);
    assert.equal(a.kv.currentRevision(), 2);
  });

  test('prev_kv returns the deleted key-values', () => {
    const a = Applier.memory();
    a.put('a', '1');
    a.put('b', '2');
    const r = a.del('\0', '\0', { prevKv: true });
    assert.deepEqual(pairs(r.prevKvs), ['a=1', 'b=2']);
  });

  test('deleted keys stay readable at earlier revisions', () => {
    const a = Applier.memory();
    a.put('a', '1');
    a.del('a');
    assert.deepEqual(a.get('a').kvs, []);
    assert.deepEqual(pairs(a.get('a', undefined, { revision: 2 }).kvs), ['a=1']);
  });

  test('deleting a leased key detaches it from the lease', () => {
    const a = withLease();
    a.put('a', '1', { lease: LEASE });
    a.del('a');
    assert.deepEqual(a.kv.leaseKeys(LEASE), []);
  });
});
