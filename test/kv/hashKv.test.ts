import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ErrCompacted, ErrFutureRev } from '../../src/kv/errors.js';
import { encodeKeyValue, revisionKey } from '../../src/kv/keyValueCodec.js';
import { CompareResult, CompareTarget } from '../../src/kv/types.js';
import { Applier, b, thrown } from './kvFixture.js';

const LEASE = 0x390da202416ae00an;

/**
 * The history run against a real etcd 3.4.23 (Debian's etcd-server) with etcdctl;
 * the hashes below are what `etcdctl endpoint hashkv --rev N` printed.
 */
function etcdHistory(a: Applier): void {
  a.put('foo', 'bar'); // 2
  a.put('foo', 'baz'); // 3
  a.put('a', '1'); // 4
  a.put('b', ''); // 5
  a.del('a'); // 6
  a.kv.apply(a.kv.appliedIndex() + 1, 1, (w) => w.cluster.putLease({ id: LEASE, ttl: 100 }));
  a.put('leased', 'v', { lease: LEASE }); // 7
  a.txn({
    compare: [{ key: b('foo'), target: CompareTarget.Mod, result: CompareResult.Greater, modRevision: 0 }],
    success: [{ requestPut: { key: b('x'), value: b('1') } }, { requestPut: { key: b('y'), value: b('2') } }, { requestDeleteRange: { key: b('b') } }],
  }); // 8
  a.put('foo', 'q'); // 9
  a.del('x', 'y'); // 10 (etcdctl del --prefix x)
}

function sameOps(a: Applier, n: number): void {
  for (let i = 0; i < n; i++) a.put(`k${i % 7}`, `v${i}`);
  a.del('k3');
}

describe('HashKV', () => {
  test('matches the hashes etcd 3.4.23 computes for the same history', () => {
    const a = Applier.memory();
    assert.equal(a.kv.hashKv().hash, 1084519789, 'empty store: CRC-32C of "key"');
    etcdHistory(a);
    const etcd: Record<number, number> = {
      1: 1084519789,
      2: 3305255506,
      3: 2020292994,
      5: 680210126,
      6: 1548204982,
      7: 2349639678,
      8: 3800269567,
      9: 427484075,
      10: 1113012945,
    };
    for (const [rev, hash] of Object.entries(etcd)) assert.equal(a.kv.hashKv(Number(rev)).hash, hash, `revision ${rev}`);
    assert.deepEqual(a.kv.hashKv(), { hash: 1113012945, revision: 10, compactRevision: -1 });

    a.compact(7);
    assert.deepEqual(a.kv.hashKv(), { hash: 1947661289, revision: 10, compactRevision: 7 });
    assert.equal(a.kv.hashKv(8).hash, 614375218);

    a.del('\0', '\0'); // 11: every key gone
    a.compact(11);
    assert.equal(a.kv.hashKv().hash, 1084519789);
  });

  test('is equal for two stores that applied the same entries', () => {
    const a = Applier.memory();
    const c = Applier.memory();
    sameOps(a, 50);
    sameOps(c, 50);
    assert.deepEqual(a.kv.hashKv(), c.kv.hashKv());
    assert.equal(a.kv.hash(), c.kv.hash());
  });

  test('differs after one differing write', () => {
    const a = Applier.memory();
    const c = Applier.memory();
    sameOps(a, 20);
    sameOps(c, 20);
    a.put('k1', 'x');
    c.put('k1', 'y');
    assert.notEqual(a.kv.hashKv().hash, c.kv.hashKv().hash);
    assert.equal(a.kv.hashKv(22).hash, c.kv.hashKv(22).hash, 'equal below the difference');
  });

  test('changes with the revision argument', () => {
    const a = Applier.memory();
    sameOps(a, 10);
    const hashes = new Set([2, 5, 8, 11].map((r) => a.kv.hashKv(r).hash));
    assert.equal(hashes.size, 4);
  });

  test('members that compacted at the same revision agree, whatever was written after it', () => {
    // As in etcd, a compacted and an uncompacted member differ (the compact revision
    // is part of what HashKV answers); members with the same compact revision agree.
    const a = Applier.memory();
    const c = Applier.memory();
    sameOps(a, 40);
    sameOps(c, 40);
    a.compact(30);
    for (const x of [a, c]) {
      x.put('k2', 'late');
      x.del('k4');
    }
    c.compact(30);
    for (const rev of [31, 35, 42, 44]) assert.equal(a.kv.hashKv(rev).hash, c.kv.hashKv(rev).hash, `revision ${rev}`);
    assert.notEqual(a.kv.hashKv(31).hash, Applier.memory().kv.hashKv().hash);
  });

  test('fails with ErrCompacted at or below the compacted revision, ErrFutureRev above the current', () => {
    const a = Applier.memory();
    sameOps(a, 5);
    a.compact(4);
    assert.equal(
      thrown(() => a.kv.hashKv(4)),
      ErrCompacted,
    );
    assert.equal(
      thrown(() => a.kv.hashKv(8)),
      ErrFutureRev,
    );
  });

  test('hashes etcd’s bucket encoding: revision key and marshalled KeyValue', () => {
    assert.equal(revisionKey(2, 1, false).toString('hex'), '0000000000000002' + '5f' + '0000000000000001');
    assert.equal(revisionKey(2, 1, true).toString('hex').slice(-2), '74');
    const kv = encodeKeyValue({ key: b('foo'), main: 3, sub: 0, createRevision: 2, version: 2, value: b('baz'), lease: 0n, tombstone: false });
    assert.equal(kv.toString('hex'), '0a03666f6f' + '1002' + '1803' + '2002' + '2a0362617a');
    const tomb = encodeKeyValue({ key: b('a'), main: 6, sub: 0, createRevision: 0, version: 0, value: b(''), lease: 0n, tombstone: true });
    assert.equal(tomb.toString('hex'), '0a0161');
  });
});

describe('Hashing in a worker thread', () => {
  test('gives the same hashes as on the calling thread', async () => {
    const a = Applier.file();
    sameOps(a, 300);
    a.compact(100);
    assert.deepEqual(await a.kv.hashKvAsync(), a.kv.hashKv());
    assert.deepEqual(await a.kv.hashKvAsync(200), a.kv.hashKv(200));
    assert.equal(await a.kv.hashAsync(), a.kv.hash());
  });

  test('rejects with the etcd errors themselves', async () => {
    const a = Applier.file();
    sameOps(a, 10);
    a.compact(5);
    await assert.rejects(a.kv.hashKvAsync(5), (e) => e === ErrCompacted);
    await assert.rejects(a.kv.hashKvAsync(99), (e) => e === ErrFutureRev);
  });

  test('hashes one consistent state while applies and a compaction go on', async () => {
    const a = Applier.file();
    sameOps(a, 3000);
    const rev = a.kv.currentRevision();
    const before = a.kv.hashKv(rev).hash;
    const pending = a.kv.hashKvAsync(rev);
    for (let i = 0; i < 200; i++) {
      a.put(`late${i}`, 'x');
      if (i === 100) a.compact(rev - 10);
      await new Promise((r) => setImmediate(r));
    }
    const after = a.kv.hashKv(rev).hash;
    assert.notEqual(before, after, 'the compaction changes the hash at rev');
    assert.ok([before, after].includes((await pending).hash), 'the worker saw the state before or after the compaction, not a mix');
  });
});

describe('Whole-store hash', () => {
  test('ignores the applied index but covers members and leases', () => {
    const a = Applier.memory();
    const c = Applier.memory();
    sameOps(a, 5);
    sameOps(c, 5);
    c.kv.apply(c.kv.appliedIndex() + 10, 1, () => undefined);
    assert.equal(a.kv.hash(), c.kv.hash());
    c.kv.apply(c.kv.appliedIndex() + 1, 1, (w) => w.cluster.putMember({ id: 1n, name: 'm1', peerURLs: ['http://p'], clientURLs: [], isLearner: false }));
    assert.notEqual(a.kv.hash(), c.kv.hash());
  });
});
