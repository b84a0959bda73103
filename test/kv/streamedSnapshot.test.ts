// Snapshots streamed from the store's own file (KvStore.openSnapshot), as a member
// sends them to `snapshot save` and to peers: the bytes are a snapshot file that
// restores to the state of one applied index although applies and checkpoints go
// on while it is read; a store closed mid-stream never yields a trailer.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { KvStore } from '../../src/kv/kvStore.js';
import { restoreSnapshot, verifySnapshot } from '../../src/kv/snapshotFile.js';
import { Applier, tempDir } from './kvFixture.js';

function store(dir: string, autoCheckpoint: boolean): Applier {
  const a = new Applier(KvStore.open(join(dir, 'kv.db'), { autoCheckpoint }));
  return a;
}

/** Fills enough pages for many small chunks; keys are rewritten later, so their pages change. */
function populate(a: Applier): void {
  for (let i = 0; i < 1500; i++) a.put(`key/${i % 400}`, `value-${i}-${'x'.repeat(200)}`);
}

for (const autoCheckpoint of [false, true]) {
  describe(`A streamed snapshot (autoCheckpoint ${autoCheckpoint})`, () => {
    test('restores to the state of the applied index it names, though applies and checkpoints run while it is read', async () => {
      const dir = tempDir();
      const a = store(dir, autoCheckpoint);
      try {
        populate(a);
        const before = { index: a.kv.appliedIndex(), hash: a.kv.hash() };
        const snap = await a.kv.openSnapshot();
        assert.equal(snap.appliedIndex, before.index, 'nothing was applied while the read was taken');
        const parts: Buffer[] = [];
        let n = 0;
        for await (const chunk of snap.chunks(8192)) {
          parts.push(chunk);
          // Rewrite keys whose pages the snapshot holds, and checkpoint them into the file.
          for (let i = 0; i < 40; i++) a.put(`key/${(n * 40 + i) % 400}`, `during-${n}-${i}`);
          if (n++ % 4 === 0) await a.kv.checkpointAsync();
        }
        assert.ok(n > 10, `only ${n} chunks: too few to interleave`);
        const bytes = Buffer.concat(parts);
        assert.equal(bytes.length, snap.size);
        assert.equal(bytes.length % 512, 32, 'etcdctl snapshot save accepts size % 512 == 32');
        assert.deepEqual([bytes[18], bytes[19]], [1, 1], 'a plain rollback-journal database, openable without a WAL');
        await verifySnapshot(bytes);

        const file = join(dir, 'snap.db');
        writeFileSync(file, bytes);
        const info = await restoreSnapshot(file, join(dir, 'restored.db'));
        assert.equal(info.appliedIndex, snap.appliedIndex);
        assert.equal(info.revision, snap.revision);
        const kv = KvStore.open(join(dir, 'restored.db'));
        try {
          assert.equal(kv.hash(), before.hash, `state at applied index ${snap.appliedIndex}`);
          assert.notEqual(kv.hash(), a.kv.hash(), 'the source moved on meanwhile');
        } finally {
          kv.close();
        }
      } finally {
        a.kv.close();
      }
    });
  });
}

describe('A streamed snapshot', () => {
  test('ends its read when the stream ends, so the WAL can be checkpointed whole again', async () => {
    const dir = tempDir();
    const a = store(dir, false);
    try {
      populate(a);
      const snap = await a.kv.openSnapshot();
      let first = true;
      for await (const _ of snap.chunks(1 << 20)) {
        if (first) for (let i = 0; i < 50; i++) a.put(`key/${i}`, 'later');
        first = false;
      }
      const other = new Database(join(dir, 'kv.db'));
      try {
        // The release is a job for the worker: one more job after it has run it.
        await a.kv.checkpointAsync();
        const [r] = other.pragma('wal_checkpoint(PASSIVE)') as { log: number; checkpointed: number }[];
        assert.equal(r.checkpointed, r.log, 'a read still pins the WAL');
      } finally {
        other.close();
      }
    } finally {
      a.kv.close();
    }
  });

  test('whose store closes while it is read fails before its trailer', async () => {
    const dir = tempDir();
    const a = store(dir, false);
    populate(a);
    const snap = await a.kv.openSnapshot();
    let bytes = 0;
    await assert.rejects(
      (async () => {
        for await (const chunk of snap.chunks(8192)) {
          bytes += chunk.length;
          a.kv.close();
        }
      })(),
      /was closed during a snapshot; it was not completed/,
    );
    assert.equal(bytes, snap.size - 32, 'the database was read, no trailer was handed out');
  });

  test('of an in-memory store is refused', async () => {
    await assert.rejects(Applier.memory().kv.openSnapshot(), /in-memory store cannot be snapshotted/);
  });
});
