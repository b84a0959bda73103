import assert from 'node:assert/strict';
import { copyFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { ErrCompacted } from '../../src/kv/errors.js';
import { KvStore } from '../../src/kv/kvStore.js';
import { restoreSnapshot } from '../../src/kv/snapshotFile.js';
import type { CheckpointResult } from '../../src/kv/types.js';
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

  test("checkpoints asked for together (the member's timer and a snapshot's start) run one after the other, each durable to its call", async () => {
    const kv = KvStore.open(join(tempDir(), 'kv.db'), { autoCheckpoint: false });
    try {
      kv.applyBatch(Array.from({ length: 100 }, (_, i) => ({ index: i + 1, term: 1, request: put(`k${i}`, 'v') })));
      const first = kv.checkpointAsync();
      kv.applyRequest(101, 1, put('a', '1'));
      const [a, b2, snap] = await Promise.all([first, kv.checkpointAsync(), kv.openSnapshot()]);
      assert.ok(a >= 100, `first checkpoint durable to ${a}`);
      assert.equal(b2, 101);
      assert.equal(snap.appliedIndex, 101);
      snap.release();
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
    await kv.hashAsync();
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

  test('checkpoints start no worker thread; an idle worker ends, and the next job starts another', async () => {
    const dir = tempDir();
    const seen: CheckpointResult[] = [];
    const kv = KvStore.open(join(dir, 'kv.db'), { autoCheckpoint: false, knobs: { readWorkerIdleMs: 100, onCheckpoint: (r) => seen.push(r) } });
    try {
      kv.applyBatch(Array.from({ length: 30 }, (_, i) => ({ index: i + 1, term: 1, request: put(`k${i % 7}`, `v${i}`) })));
      assert.equal(await kv.checkpointAsync(), 30);
      assert.equal(kv.readWorkerRunning, false, 'a checkpoint started the worker');
      assert.equal(await kv.checkpointAsync(), 30, 'nothing committed: the index still durable');
      assert.equal(await kv.hashAsync(), kv.hash(), 'a hash runs in the worker');
      assert.equal(kv.readWorkerRunning, true);
      await waitFor(() => !kv.readWorkerRunning, 'the idle worker ends');
      const info = await kv.saveSnapshot(join(dir, 'after-idle.db'));
      assert.equal(info.appliedIndex, 30, 'a snapshot after the worker ended');
      await waitFor(() => !kv.readWorkerRunning, 'the idle worker ends again');
      kv.applyRequest(31, 1, put('a', '1'));
      assert.equal(await kv.checkpointAsync(), 31, 'a commit since: the checkpoint runs');
      assert.equal(kv.readWorkerRunning, false);
      assert.deepEqual(
        seen.map((r) => r.synced),
        [true, false, true],
      );
    } finally {
      kv.close();
    }
  });

  test('a checkpoint copies the whole WAL into the file, which then holds every apply without its WAL', async () => {
    const dir = tempDir();
    const path = join(dir, 'kv.db');
    const kv = KvStore.open(path, { autoCheckpoint: false, commitDelayMs: 50 });
    try {
      kv.applyBatch(Array.from({ length: 200 }, (_, i) => ({ index: i + 1, term: 1, request: put(`k${i}`, `v${i}`) })));
      assert.equal(await kv.checkpointAsync(), 200);
      // A copy of the file alone (no -wal beside it) is the store as of the checkpoint.
      copyFileSync(path, join(dir, 'copy.db'));
      const copy = KvStore.open(join(dir, 'copy.db'), { readonly: true });
      try {
        assert.equal(copy.appliedIndex(), 200);
        assert.equal(copy.hash(), kv.hash());
      } finally {
        copy.close();
      }
    } finally {
      kv.close();
    }
  });

  test('a snapshot read of a checkpointed store is held without the worker; with commits landing meanwhile, by the worker', async () => {
    const dir = tempDir();
    let next = 101;
    let commitDuringCheckpoint = false;
    const kv = KvStore.open(join(dir, 'kv.db'), {
      autoCheckpoint: false,
      // A commit between the snapshot's checkpoint and the read it then begins.
      knobs: { onCheckpoint: () => void (commitDuringCheckpoint && kv.applyRequest(next, 1, put('during', `${next++}`))) },
    });
    try {
      kv.applyBatch(Array.from({ length: 100 }, (_, i) => ({ index: i + 1, term: 1, request: put(`k${i}`, 'v') })));
      const quick = await kv.openSnapshot();
      assert.equal(quick.appliedIndex, 100);
      assert.equal(kv.readWorkerRunning, false, 'held on the store thread');
      quick.release();
      kv.applyRequest(next++, 1, put('after', 'quick'));
      commitDuringCheckpoint = true;
      const held = await kv.openSnapshot();
      assert.equal(kv.readWorkerRunning, true, 'held by the worker');
      assert.equal(held.appliedIndex, 102, 'the state the read began at: the commit made during the checkpoint');
      held.release();
    } finally {
      kv.close();
    }
  });

  test('a worker holding a streamed snapshot read is not ended while idle, and ends once the read is released', async () => {
    const dir = tempDir();
    let landing = true;
    const kv = KvStore.open(join(dir, 'kv.db'), {
      autoCheckpoint: false,
      // A commit during the snapshot's checkpoint: the read is held by the worker.
      knobs: { readWorkerIdleMs: 100, onCheckpoint: () => void (landing && ((landing = false), kv.applyRequest(200, 1, put('k0', 'last')))) },
    });
    try {
      kv.applyBatch(Array.from({ length: 199 }, (_, i) => ({ index: i + 1, term: 1, request: put(`k${i % 50}`, `v${i}-${'x'.repeat(300)}`) })));
      const snap = await kv.openSnapshot();
      await sleep(500);
      assert.equal(kv.readWorkerRunning, true, 'the worker holding the read is kept');
      // Applies, a hash and a snapshot go on while the read is held, past the idle time.
      kv.applyRequest(201, 1, put('during', 'hold'));
      assert.equal(await kv.hashAsync(), kv.hash());
      assert.equal((await kv.saveSnapshot(join(dir, 'during-hold.db'))).appliedIndex, 201);
      await sleep(300);
      const parts: Buffer[] = [];
      for await (const chunk of snap.chunks(16384)) parts.push(chunk);
      writeFileSync(join(dir, 'streamed.db'), Buffer.concat(parts));
      const restored = join(dir, 'restored.db');
      assert.equal((await restoreSnapshot(join(dir, 'streamed.db'), restored)).appliedIndex, 200, 'the held read streamed in full');
      await waitFor(() => !kv.readWorkerRunning, 'the worker ends once the read is released');
      assert.equal(await kv.checkpointAsync(), 201);
    } finally {
      kv.close();
    }
  });
});

async function waitFor(cond: () => boolean, what: string, ms = 5000): Promise<void> {
  for (const end = Date.now() + ms; !cond(); await sleep(20)) if (Date.now() > end) assert.fail(`timed out: ${what}`);
}
