import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { ErrCompacted, ErrFutureRev } from '../../src/kv/errors.js';
import { Applier, b, pairs, tempDir, thrown } from './kvFixture.js';

/** The (key, main, tombstone) rows physically stored, read through a second connection. */
function storedRows(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return (db.prepare('SELECT key, main, tombstone FROM kv ORDER BY main, sub').all() as { key: Buffer; main: number; tombstone: number }[]).map(
      (r) => `${r.key.toString()}@${r.main}${r.tombstone ? 't' : ''}`,
    );
  } finally {
    db.close();
  }
}

describe('Compaction', () => {
  test('reads below the compacted revision fail; at it they succeed', () => {
    const a = Applier.memory();
    a.put('a', '1'); // 2
    a.put('a', '2'); // 3
    a.put('b', '1'); // 4
    a.compact(3);
    assert.equal(a.kv.compactRevision(), 3);
    assert.equal(
      thrown(() => a.get('a', undefined, { revision: 2 })),
      ErrCompacted,
    );
    assert.deepEqual(pairs(a.get('\0', '\0', { revision: 3 }).kvs), ['a=2']);
    assert.deepEqual(pairs(a.get('\0', '\0').kvs), ['a=2', 'b=1']);
  });

  test('the compact revision starts at -1, and compacting at or below it fails with ErrCompacted', () => {
    const a = Applier.memory();
    a.put('a', '1');
    assert.equal(a.kv.compactRevision(), -1);
    a.compact(2);
    assert.equal(a.err({ compaction: { revision: 2 } }), ErrCompacted);
    assert.equal(a.err({ compaction: { revision: 1 } }), ErrCompacted);
  });

  test('compacting above the current revision fails with ErrFutureRev', () => {
    const a = Applier.memory();
    a.put('a', '1');
    assert.equal(a.err({ compaction: { revision: 3 } }), ErrFutureRev);
    assert.equal(a.kv.compactRevision(), -1);
  });

  test('the response carries the current revision and compaction uses no revision', () => {
    const a = Applier.memory();
    a.put('a', '1');
    a.put('a', '2');
    const r = a.ok({ compaction: { revision: 2, physical: true } });
    assert.deepEqual(r, { compaction: { header: { revision: 3 } } });
    assert.equal(a.kv.currentRevision(), 3);
  });

  test('compaction keeps each live key’s last revision at or below it and drops tombstones', () => {
    const dir = tempDir();
    const a = Applier.file(dir);
    a.put('a', '1'); // 2
    a.put('a', '2'); // 3
    a.put('b', '1'); // 4
    a.del('b'); // 5
    a.put('c', '1'); // 6
    a.put('a', '3'); // 7
    a.compact(6);
    assert.deepEqual(storedRows(join(dir, 'kv.db')), ['a@3', 'c@6', 'a@7']);
    // A later compaction only revisits keys written since the previous one.
    a.put('c', '2'); // 8
    a.del('a'); // 9
    a.compact(9);
    assert.deepEqual(storedRows(join(dir, 'kv.db')), ['c@8']);
    assert.deepEqual(pairs(a.get('\0', '\0', { revision: 9 }).kvs), ['c=2']);
  });

  test('a key deleted and re-created across the compaction point keeps only its new life', () => {
    const a = Applier.memory();
    a.put('k', '1'); // 2
    a.del('k'); // 3
    a.put('k', '2'); // 4
    a.compact(3);
    assert.deepEqual(a.get('k', undefined, { revision: 3 }).kvs, []);
    const kv = a.get('k').kvs[0];
    assert.deepEqual([kv.createRevision, kv.version], [4, 1]);
    assert.deepEqual(pairs(a.get('k', undefined, { revision: 4 }).kvs), ['k=2']);
    assert.equal(a.get('\0', '\0', { revision: 3, countOnly: true }).count, 0);
    assert.deepEqual(b('k'), a.get('k').kvs[0].key);
  });
});
