import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ErrCompacted } from '../../src/kv/errors.js';
import { KvStore } from '../../src/kv/kvStore.js';
import type { CheckpointResult } from '../../src/kv/readJob.js';
import { b, tempDir } from './kvFixture.js';

const put = (k: string, v: string) => ({ put: { key: b(k), value: b(v) } });
const threads = (): Set<string> => new Set(readdirSync('/proc/self/task'));

describe('the store worker (checkpoints, hashes, snapshots)', () => {
  test('a checkpoint with nothing committed since the last one syncs nothing and returns the index still durable', async () => {
    const seen: CheckpointResult[] = [];
    const kv = KvStore.open(join(tempDir(), 'kv.db'), { autoCheckpoint: false, knobs: { onCheckpoint: (r) => seen.push(r) } });
    try {
      kv.applyBatch(Array.from({ length: 100 }, (_, i) => ({ index: i + 1, term: 1, request: put(`k${i}`, 'v') })));
      assert.equal(await kv.checkpointAsync(), 100);
      assert.equal(await kv.checkpointAsync(), 100);
      assert.equal(await kv.checkpointAsync(), 100);
      kv.applyRequest(101, 1, put('a', '1'));
      assert.equal(await kv.checkpointAsync(), 101);
      assert.equal(await kv.checkpointAsync(), 101);
      assert.deepEqual(
        seen.map((r) => r.synced),
        [true, false, false, true, false],
      );
    } finally {
      kv.close();
    }
  });

  test('jobs given together run one after the other in one worker, and store errors come back as the shared constants', async () => {
    const dir = tempDir();
    const kv = KvStore.open(join(dir, 'kv.db'), { autoCheckpoint: false });
    try {
      kv.applyBatch(Array.from({ length: 50 }, (_, i) => ({ index: i + 1, term: 1, request: put(`k${i % 5}`, `v${i}`) })));
      kv.applyRequest(51, 1, { compaction: { revision: 20 } });
      const [checkpointed, hash, snapshot, compacted] = await Promise.allSettled([
        kv.checkpointAsync(),
        kv.hashAsync(),
        kv.saveSnapshot(join(dir, 'snap.db')),
        kv.hashKvAsync(10),
      ]);
      assert.deepEqual(checkpointed, { status: 'fulfilled', value: 51 });
      assert.equal(hash.status, 'fulfilled');
      assert.equal(hash.value, kv.hash());
      assert.equal(snapshot.status === 'fulfilled' && snapshot.value.appliedIndex, 51);
      assert.deepEqual(compacted, { status: 'rejected', reason: ErrCompacted });
    } finally {
      kv.close();
    }
  });

  test("a store's worker thread is gone after close", async () => {
    const before = threads();
    const kv = KvStore.open(join(tempDir(), 'kv.db'), { autoCheckpoint: false });
    kv.applyRequest(1, 1, put('a', '1'));
    await kv.checkpointAsync();
    const started = [...threads()].filter((t) => !before.has(t));
    assert.ok(started.length > 0, 'the first job starts a worker thread');
    kv.close();
    for (let i = 0; i < 100 && started.some((t) => threads().has(t)); i++) await sleep(50);
    assert.deepEqual(
      started.filter((t) => threads().has(t)),
      [],
      'threads started with the worker still running after close',
    );
  });
});
