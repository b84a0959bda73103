import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ErrFutureRev } from '../../src/kv/errors.js';
import { KvStore } from '../../src/kv/kvStore.js';
import { waitFor } from '../support/lifeboatCluster.js';
import { Applier, b, pairs, tempDir, thrown } from './kvFixture.js';

const put = (k: string, v: string) => ({ put: { key: b(k), value: b(v) } });

describe('Applied index', () => {
  test('an apply records its index and term with its writes', () => {
    const a = Applier.memory();
    a.kv.applyRequest(7, 3, put('a', '1'));
    assert.equal(a.kv.appliedIndex(), 7);
    assert.equal(a.kv.appliedTerm(), 3);
  });

  test('entries that carry nothing for the KV still advance the applied index', () => {
    const a = Applier.memory();
    const results = a.kv.applyBatch([
      { index: 1, term: 1 },
      { index: 2, term: 1, request: put('a', '1') },
      { index: 3, term: 2 },
    ]);
    assert.equal(results[0], undefined);
    assert.ok(results[1]?.response);
    assert.equal(a.kv.appliedIndex(), 3);
    assert.equal(a.kv.currentRevision(), 2);
  });

  test('an etcd error is an outcome: the entry counts as applied', () => {
    const a = Applier.memory();
    const r = a.kv.applyRequest(1, 1, { range: { key: b('a'), revision: 5 } });
    assert.equal(r.error, ErrFutureRev);
    assert.equal(a.kv.appliedIndex(), 1);
  });

  test('an apply whose callback throws leaves nothing of the entry applied', () => {
    const a = Applier.memory();
    a.put('a', '1');
    const before = { index: a.kv.appliedIndex(), rev: a.kv.currentRevision(), hash: a.kv.hash() };
    const err = thrown(() =>
      a.kv.apply(2, 1, (w) => {
        w.request(put('b', '2'));
        w.cluster.setClusterId(42n);
        throw new Error('disk on fire');
      }),
    );
    assert.equal(err.message, 'disk on fire');
    assert.deepEqual({ index: a.kv.appliedIndex(), rev: a.kv.currentRevision(), hash: a.kv.hash() }, before);
    assert.deepEqual(a.get('b').kvs, []);
    assert.equal(a.kv.cluster.clusterId(), undefined);
    a.kv.applyRequest(2, 1, put('b', '2'));
    assert.equal(a.kv.currentRevision(), 3, 'the next write takes the revision the failed one did not keep');
  });

  test('a batch that throws midway applies none of its entries', () => {
    const a = Applier.memory();
    a.put('a', '1');
    assert.throws(() =>
      a.kv.batch(() => {
        a.kv.applyRequest(2, 1, put('b', '2'));
        a.kv.applyRequest(3, 1, put('c', '3'));
        throw new Error('crash mid-batch');
      }),
    );
    assert.equal(a.kv.appliedIndex(), 1);
    assert.equal(a.kv.currentRevision(), 2);
    assert.deepEqual(pairs(a.get('\0', '\0').kvs), ['a=1']);
  });

  test('an entry that throws inside a batch fails the whole batch, even when the throw is caught', () => {
    const a = Applier.memory();
    a.put('a', '1');
    const err = thrown(() =>
      a.kv.batch(() => {
        a.kv.applyRequest(2, 1, put('b', '2'));
        assert.throws(() =>
          a.kv.apply(3, 1, (w) => {
            w.request(put('c', '3'));
            throw new Error('entry 3 failed');
          }),
        );
        a.kv.applyRequest(3, 1, put('d', '4'));
      }),
    );
    assert.equal(err.message, 'entry 3 failed');
    assert.equal(a.kv.appliedIndex(), 1);
    assert.equal(a.kv.currentRevision(), 2);
    assert.deepEqual(pairs(a.get('\0', '\0').kvs), ['a=1']);
    a.kv.applyRequest(2, 1, put('b', '2'));
    assert.deepEqual(pairs(a.get('\0', '\0').kvs), ['a=1', 'b=2'], 'the next batch applies as usual');
  });

  test('an entry at or below the applied index is refused: it would be applied twice', () => {
    const a = Applier.memory();
    a.kv.applyRequest(5, 1, put('a', '1'));
    assert.match(thrown(() => a.kv.applyRequest(5, 1, put('a', '2'))).message, /entry 5 is at or below the applied index 5/);
    assert.match(thrown(() => a.kv.applyRequest(4, 1, put('a', '2'))).message, /apply it twice/);
    assert.match(thrown(() => a.kv.applyRequest(6, 0, put('a', '2'))).message, /term 0, below the applied term 1/);
    assert.deepEqual(pairs(a.get('a').kvs), ['a=1']);
  });

  test('reopening after applies gives the same state and applied index', () => {
    const dir = tempDir();
    const path = join(dir, 'kv.db');
    const kv = KvStore.open(path);
    kv.applyBatch(Array.from({ length: 50 }, (_, i) => ({ index: i + 1, term: 2, request: put(`k${i % 10}`, `v${i}`) })));
    kv.applyRequest(51, 2, { compaction: { revision: 40 } });
    kv.apply(52, 3, (w) => w.cluster.setClusterId(0xdeadbeefn));
    const before = { hashKv: kv.hashKv(), hash: kv.hash(), all: kv.range({ key: b('\0'), rangeEnd: b('\0') }) };
    kv.close();
    const again = KvStore.open(path);
    try {
      assert.equal(again.appliedIndex(), 52);
      assert.equal(again.appliedTerm(), 3);
      assert.equal(again.currentRevision(), 51);
      assert.equal(again.compactRevision(), 40);
      assert.equal(again.cluster.clusterId(), 0xdeadbeefn);
      assert.deepEqual({ hashKv: again.hashKv(), hash: again.hash(), all: again.range({ key: b('\0'), rangeEnd: b('\0') }) }, before);
    } finally {
      again.close();
    }
  });

  for (const delay of [0, 60_000]) {
    test(`a process killed mid-batch restarts at the last committed batch (commit delay ${delay} ms)`, () => {
      const path = join(tempDir(), 'kv.db');
      const child = spawnSync(process.execPath, [fileURLToPath(new URL('./crashApply.js', import.meta.url)), path, String(delay)], { encoding: 'utf8' });
      assert.equal(child.signal, 'SIGKILL', child.stderr);
      const kv = KvStore.open(path);
      try {
        assert.equal(kv.appliedIndex(), 100);
        assert.equal(kv.appliedTerm(), 1);
        assert.equal(kv.currentRevision(), 101);
        assert.equal(kv.range({ key: b('key'), rangeEnd: b('kez'), countOnly: true }).count, 100);
        assert.deepEqual(kv.range({ key: b('key101') }).kvs, []);
        // The log replays from the next entry.
        kv.applyRequest(101, 2, put('key101', 'value101'));
        assert.equal(kv.currentRevision(), 102);
      } finally {
        kv.close();
      }
    });
  }

  test('with autoCheckpoint off, checkpointAsync moves applies into the database file', async () => {
    const dir = tempDir();
    const path = join(dir, 'kv.db');
    const kv = KvStore.open(path, { autoCheckpoint: false });
    try {
      kv.applyBatch(Array.from({ length: 3000 }, (_, i) => ({ index: i + 1, term: 1, request: put(`k${i}`, 'x'.repeat(100)) })));
      const copyWithoutWal = (name: string) => {
        copyFileSync(path, join(dir, name));
        const c = KvStore.open(join(dir, name));
        const index = c.appliedIndex();
        c.close();
        return index;
      };
      assert.equal(copyWithoutWal('before.db'), 0, 'nothing checkpointed yet: all of it is in the WAL');
      assert.equal(await kv.checkpointAsync(), 3000);
      assert.equal(copyWithoutWal('after.db'), 3000);
    } finally {
      kv.close();
    }
  });

  test('makeDurable returns the applied index it made durable', () => {
    const a = Applier.file();
    a.put('a', '1');
    assert.equal(a.kv.makeDurable(), 1);
  });
});

describe('Applies held in one transaction (commitDelayMs)', () => {
  /** What another connection to the file sees: the applied index of the last commit. */
  const committedIndex = (path: string) => {
    const other = KvStore.open(path, { readonly: true });
    try {
      return other.appliedIndex();
    } finally {
      other.close();
    }
  };
  const open = (commitDelayMs: number) => {
    const path = join(tempDir(), 'kv.db');
    const kv = KvStore.open(path, { autoCheckpoint: false, commitDelayMs });
    after(() => kv.close());
    return { kv, path };
  };

  test('without a delay every batch commits at once; with one, batches are seen here at once and elsewhere after the delay', async () => {
    const each = open(0);
    each.kv.applyRequest(1, 1, put('a', '1'));
    assert.equal(committedIndex(each.path), 1);

    const held = open(100);
    held.kv.applyRequest(1, 1, put('a', '1'));
    held.kv.applyBatch([
      { index: 2, term: 1, request: put('b', '2') },
      { index: 3, term: 1, request: put('c', '3') },
    ]);
    assert.deepEqual(pairs(held.kv.range({ key: b('\0'), rangeEnd: b('\0') }).kvs), ['a=1', 'b=2', 'c=3']);
    assert.equal(committedIndex(held.path), 0, 'held: not committed yet');
    await waitFor('the held applies to be committed', () => committedIndex(held.path) === 3, 5_000, 20);
  });

  test('a batch that fails inside the held transaction undoes itself only', () => {
    const { kv, path } = open(60_000);
    kv.applyRequest(1, 1, put('a', '1'));
    assert.throws(() =>
      kv.batch(() => {
        kv.applyRequest(2, 1, put('b', '2'));
        throw new Error('crash mid-batch');
      }),
    );
    kv.applyRequest(2, 1, put('c', '3'));
    kv.commit();
    assert.equal(committedIndex(path), 2);
    const again = KvStore.open(path, { readonly: true });
    try {
      assert.deepEqual(pairs(again.range({ key: b('\0'), rangeEnd: b('\0') }).kvs), ['a=1', 'c=3']);
    } finally {
      again.close();
    }
  });

  test('a write that does not come from the log (writeLocal) is committed at once, with what was held', () => {
    const { kv, path } = open(60_000);
    kv.applyRequest(1, 1, put('a', '1'));
    assert.equal(committedIndex(path), 0, 'held');
    kv.writeLocal((c) => c.setClusterId(42n));
    assert.equal(committedIndex(path), 1);
    const other = KvStore.open(path, { readonly: true });
    try {
      assert.equal(other.cluster.clusterId(), 42n);
    } finally {
      other.close();
    }
  });

  test('checkpoints, hashes, makeDurable and close commit what is held first', async () => {
    const { kv, path } = open(60_000);
    kv.applyRequest(1, 1, put('a', '1'));
    assert.equal(await kv.checkpointAsync(), 1);
    kv.applyRequest(2, 1, put('b', '2'));
    assert.equal(await kv.hashKvAsync().then((h) => h.revision), 3);
    kv.applyRequest(3, 1, put('c', '3'));
    assert.equal(kv.makeDurable(), 3);
    assert.equal(committedIndex(path), 3);
    kv.applyRequest(4, 1, put('d', '4'));
    kv.close();
    assert.equal(committedIndex(path), 4);
  });
});
