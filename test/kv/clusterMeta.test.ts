import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { KvStore } from '../../src/kv/kvStore.js';
import { AlarmType, type Member } from '../../src/kv/types.js';
import { Applier, b, pairs, tempDir } from './kvFixture.js';

const m1: Member = { id: 0xfedc_ba98_7654_3210n, name: 'm1', peerURLs: ['http://10.0.0.1:2380'], clientURLs: ['http://10.0.0.1:2379'], isLearner: false };
const m2: Member = { id: 2n, name: '', peerURLs: ['http://10.0.0.2:2380'], clientURLs: [], isLearner: true };

describe('Cluster state in the KV', () => {
  test('members, cluster IDs, removed members, alarms and leases survive a reopen', () => {
    const path = join(tempDir(), 'kv.db');
    const kv = KvStore.open(path);
    kv.apply(1, 1, (w) => {
      w.cluster.setClusterId(0xffff_ffff_ffff_ffffn);
      w.cluster.setParentClusterId(7n);
      w.cluster.putMember(m1);
      w.cluster.putMember(m2);
      w.cluster.addRemovedMember(3n);
      assert.equal(w.cluster.activateAlarm({ memberId: m1.id, alarm: AlarmType.NoSpace }), true);
      assert.equal(w.cluster.activateAlarm({ memberId: m1.id, alarm: AlarmType.NoSpace }), false);
      w.cluster.putLease({ id: 0x7fff_ffff_ffff_fff0n, ttl: 60 });
      w.cluster.setMeta('cluster_version', b('3.4.0'));
    });
    kv.close();
    const again = KvStore.open(path);
    try {
      const c = again.cluster;
      assert.equal(c.clusterId(), 0xffff_ffff_ffff_ffffn);
      assert.equal(c.parentClusterId(), 7n);
      assert.deepEqual(c.members(), [m2, m1], 'ordered by ID');
      assert.deepEqual(c.member(m1.id), m1);
      assert.equal(c.member(99n), undefined);
      assert.deepEqual(c.removedMembers(), [3n]);
      assert.equal(c.isRemovedMember(3n), true);
      assert.equal(c.isRemovedMember(2n), false);
      assert.deepEqual(c.alarms(), [{ memberId: m1.id, alarm: AlarmType.NoSpace }]);
      assert.deepEqual(c.leases(), [{ id: 0x7fff_ffff_ffff_fff0n, ttl: 60 }]);
      assert.equal(c.getMeta('cluster_version')?.toString(), '3.4.0');
    } finally {
      again.close();
    }
  });

  test('members can be updated, removed and cleared', () => {
    const a = Applier.memory();
    a.kv.apply(1, 1, (w) => {
      w.cluster.putMember(m1);
      w.cluster.putMember(m2);
      w.cluster.putMember({ ...m2, isLearner: false, name: 'm2' });
    });
    assert.equal(a.kv.cluster.member(2n)?.isLearner, false);
    a.kv.apply(2, 1, (w) => assert.equal(w.cluster.deleteMember(m1.id), true));
    assert.deepEqual(
      a.kv.cluster.members().map((m) => m.name),
      ['m2'],
    );
    a.kv.writeLocal((c) => {
      c.clearMembers();
      c.setParentClusterId(undefined);
    });
    assert.deepEqual(a.kv.cluster.members(), []);
    assert.equal(a.kv.appliedIndex(), 2, 'local writes are not log entries');
  });

  test('revoking a lease deletes its keys in one revision and forgets it', () => {
    const a = Applier.memory();
    a.kv.apply(1, 1, (w) => w.cluster.putLease({ id: 5n, ttl: 10 }));
    a.put('a', '1', { lease: 5n });
    a.put('b', '2');
    a.put('c', '3', { lease: 5n });
    const r = a.kv.apply(a.kv.appliedIndex() + 1, 1, (w) => w.revokeLease(5n));
    assert.deepEqual(r, { found: true, deleted: 2 });
    assert.equal(a.kv.currentRevision(), 5);
    assert.deepEqual(pairs(a.get('\0', '\0').kvs), ['b=2']);
    assert.equal(a.kv.cluster.lease(5n), undefined);
    assert.deepEqual(
      a.kv.apply(a.kv.appliedIndex() + 1, 1, (w) => w.revokeLease(5n)),
      { found: false, deleted: 0 },
    );
  });

  test('alarms, cluster ID and removed members read back what an apply wrote, and not what a rolled-back one did', () => {
    const a = Applier.memory();
    const noSpace = { memberId: m1.id, alarm: AlarmType.NoSpace };
    assert.equal(a.kv.cluster.hasAlarm(AlarmType.NoSpace), false);
    assert.equal(a.kv.cluster.clusterId(), undefined);
    a.kv.apply(1, 1, (w) => {
      w.cluster.setClusterId(5n);
      w.cluster.activateAlarm(noSpace);
      w.cluster.addRemovedMember(3n);
      assert.equal(w.cluster.hasAlarm(AlarmType.NoSpace), true, 'seen inside the apply');
    });
    assert.deepEqual(a.kv.cluster.alarms(), [noSpace]);
    assert.equal(a.kv.cluster.clusterId(), 5n);
    assert.equal(a.kv.cluster.isRemovedMember(3n), true);
    assert.throws(() =>
      a.kv.apply(2, 1, (w) => {
        w.cluster.setClusterId(6n);
        w.cluster.deactivateAlarm(noSpace);
        w.cluster.activateAlarm({ memberId: m2.id, alarm: AlarmType.Corrupt });
        w.cluster.addRemovedMember(4n);
        w.cluster.setMeta('cluster_version', b('3.5.0'));
        throw new Error('rolled back');
      }),
    );
    assert.deepEqual(a.kv.cluster.alarms(), [noSpace]);
    assert.equal(a.kv.cluster.clusterId(), 5n);
    assert.equal(a.kv.cluster.isRemovedMember(4n), false);
    assert.equal(a.kv.cluster.getMeta('cluster_version'), undefined);
    a.kv.apply(2, 1, (w) => w.cluster.deactivateAlarm(noSpace));
    assert.deepEqual(a.kv.cluster.alarms(), []);
    assert.equal(a.kv.cluster.hasAlarm(AlarmType.NoSpace), false);
    const view = a.kv.cluster.alarms();
    view.push(noSpace);
    assert.deepEqual(a.kv.cluster.alarms(), [], 'a caller cannot change the store through the array it got');
  });

  test('the file size follows every commit, and a reopened store reads the same', () => {
    const path = join(tempDir(), 'kv.db');
    const kv = KvStore.open(path);
    const value = b('x'.repeat(1000));
    const sizes = [kv.dbSize()];
    kv.batch(() => {
      for (let i = 1; i <= 200; i++) kv.applyRequest(i, 1, { put: { key: b(`k${i}`), value } });
    });
    sizes.push(kv.dbSize());
    assert.ok(sizes[1] > sizes[0] + 200 * 1000, `${sizes[1]} bytes after 200 KB of values (${sizes[0]} before)`);
    kv.close();
    const again = KvStore.open(path);
    try {
      assert.equal(again.dbSize(), sizes[1]);
    } finally {
      again.close();
    }
  });

  test('space figures are whole pages and defragment keeps the data', async () => {
    const a = Applier.file();
    for (let i = 0; i < 500; i++) a.put(`k${i}`, 'x'.repeat(200));
    a.del('k', 'l');
    a.compact(a.kv.currentRevision());
    const size = a.kv.dbSize();
    assert.ok(size > 0 && size % 4096 === 0);
    assert.ok(a.kv.dbSizeInUse() < size, 'compaction freed pages');
    const hash = a.kv.hash();
    const writes = a.kv.defragment();
    // The worker holds the write lock until it is done: a write meanwhile is refused, not queued in SQLite.
    assert.throws(() => a.put('late', 'x'), /being defragmented; writes must wait/);
    await writes;
    assert.ok(a.kv.dbSize() < size);
    assert.equal(a.kv.dbSizeInUse(), a.kv.dbSize());
    assert.equal(a.kv.hash(), hash);
    a.put('late', 'x'); // writes go on once it is done
  });
});
