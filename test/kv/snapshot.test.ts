import assert from 'node:assert/strict';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { KvStore } from '../../src/kv/kvStore.js';
import { restoreSnapshot, verifySnapshot } from '../../src/kv/snapshotFile.js';
import type { RangeRequest } from '../../src/kv/types.js';
import { Applier, b, tempDir } from './kvFixture.js';

const ALL: RangeRequest = { key: b('\0'), rangeEnd: b('\0') };

function populate(a: Applier, n: number): void {
  for (let i = 0; i < n; i++) a.put(`key/${i % 300}`, `value-${i}`);
  a.del('key/1', 'key/2');
  a.compact(a.kv.currentRevision() - 50);
  a.kv.apply(a.kv.appliedIndex() + 1, 4, (w) => {
    w.cluster.setClusterId(0x1234_5678_9abc_def0n);
    w.cluster.putMember({ id: 0xffff_ffff_ffff_fff1n, name: 'm1', peerURLs: ['http://10.0.0.1:2380'], clientURLs: ['http://10.0.0.1:2379'], isLearner: false });
    w.cluster.putLease({ id: 9n, ttl: 30 });
  });
}

function fingerprint(kv: KvStore) {
  return {
    all: kv.range(ALL),
    historical: kv.range({ ...ALL, revision: kv.compactRevision() + 3 }),
    hashKv: kv.hashKv(),
    hash: kv.hash(),
    appliedIndex: kv.appliedIndex(),
    appliedTerm: kv.appliedTerm(),
    members: kv.cluster.members(),
    clusterId: kv.cluster.clusterId(),
    leases: kv.cluster.leases(),
  };
}

describe('Snapshots', () => {
  test('restoring a snapshot gives identical ranges, hashes, applied index and cluster state', async () => {
    const dir = tempDir();
    const a = Applier.file(dir, 'source.db');
    populate(a, 1000);
    const snap = join(dir, 'snap.db');
    const info = await a.kv.saveSnapshot(snap);
    assert.equal(info.appliedIndex, a.kv.appliedIndex());
    assert.equal(info.revision, a.kv.currentRevision());
    assert.equal(info.size, statSync(snap).size);
    assert.equal(info.size % 512, 32, 'etcdctl snapshot save accepts size % 512 == 32');

    const target = join(dir, 'restored.db');
    const restored = await restoreSnapshot(snap, target);
    assert.equal(restored.sha256, info.sha256);
    assert.equal(restored.appliedIndex, info.appliedIndex);
    const kv = KvStore.open(target);
    try {
      assert.deepEqual(fingerprint(kv), fingerprint(a.kv));
    } finally {
      kv.close();
    }
  });

  test('restoring over an existing store replaces it, WAL included', async () => {
    const dir = tempDir();
    const source = Applier.file(dir, 'source.db');
    populate(source, 200);
    const snap = join(dir, 'snap.db');
    await source.kv.saveSnapshot(snap);

    const target = join(dir, 'target.db');
    const old = KvStore.open(target);
    old.applyRequest(1, 1, { put: { key: b('stale'), value: b('x') } });
    old.close();
    await restoreSnapshot(snap, target);
    const kv = KvStore.open(target);
    try {
      assert.deepEqual(kv.range({ key: b('stale') }).kvs, []);
      assert.equal(kv.hash(), source.kv.hash());
    } finally {
      kv.close();
    }
  });

  test('a snapshot taken while applies continue holds one consistent applied index', async () => {
    const dir = tempDir();
    const a = Applier.file(dir, 'source.db');
    populate(a, 2000);
    const snap = join(dir, 'snap.db');
    const taking = a.kv.saveSnapshot(snap);
    const hashes = new Map<number, number>([[a.kv.appliedIndex(), a.kv.hash()]]);
    for (let i = 0; i < 200; i++) {
      a.put(`during/${i}`, 'x');
      hashes.set(a.kv.appliedIndex(), a.kv.hash());
      if (i % 20 === 0) await new Promise((r) => setImmediate(r));
    }
    const info = await taking;
    const target = join(dir, 'restored.db');
    await restoreSnapshot(snap, target);
    const kv = KvStore.open(target);
    try {
      assert.equal(kv.appliedIndex(), info.appliedIndex);
      assert.equal(kv.hash(), hashes.get(info.appliedIndex), `state at applied index ${info.appliedIndex}`);
    } finally {
      kv.close();
    }
  });

  test('a snapshot with one flipped byte is refused with a one-line error', async () => {
    const dir = tempDir();
    const a = Applier.file(dir, 'source.db');
    populate(a, 100);
    const snap = join(dir, 'snap.db');
    await a.kv.saveSnapshot(snap);
    const bytes = readFileSync(snap);
    bytes[Math.floor(bytes.length / 2)] ^= 0x01;
    writeFileSync(snap, bytes);

    const target = join(dir, 'restored.db');
    await assert.rejects(restoreSnapshot(snap, target), (err: Error) => {
      assert.match(err.message, /is corrupt: its sha256 trailer is [0-9a-f]{64} but the contents hash to [0-9a-f]{64}; refusing/);
      assert.ok(err.message.startsWith(snap), err.message);
      assert.doesNotMatch(err.message, /\n/);
      return true;
    });
    await assert.rejects(verifySnapshot(snap), /is corrupt/);
    await assert.rejects(verifySnapshot(bytes), /snapshot \(in memory\) is corrupt/);
    assert.throws(() => statSync(target), 'nothing installed');
  });

  test('a truncated snapshot is refused', async () => {
    const dir = tempDir();
    const a = Applier.file(dir, 'source.db');
    populate(a, 100);
    const snap = join(dir, 'snap.db');
    await a.kv.saveSnapshot(snap);
    const bytes = readFileSync(snap);
    await assert.rejects(
      restoreSnapshot(bytes.subarray(0, bytes.length - 100), join(dir, 'x.db')),
      /is not a Lifeboat KV snapshot: its size \d+ is not whole 512-byte blocks/,
    );
  });

  test('a snapshot can be restored from bytes held in memory (a Raft snapshot message)', async () => {
    const dir = tempDir();
    const a = Applier.file(dir, 'source.db');
    populate(a, 100);
    const snap = join(dir, 'snap.db');
    await a.kv.saveSnapshot(snap);
    const info = await restoreSnapshot(readFileSync(snap), join(dir, 'fromBytes.db'));
    assert.equal(info.appliedIndex, a.kv.appliedIndex());
    assert.deepEqual(await verifySnapshot(readFileSync(snap)), { size: info.size, sha256: info.sha256 });
  });

  test('an in-memory store cannot be snapshotted', async () => {
    await assert.rejects(Applier.memory().kv.saveSnapshot(join(tempDir(), 's')), /in-memory store cannot be snapshotted/);
  });
});
