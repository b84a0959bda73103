import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { KV_PAGE_SIZE } from '../../src/kv/kvSchema.js';
import { KvStore } from '../../src/kv/kvStore.js';
import { Applier, pairs, tempDir, thrown } from './kvFixture.js';

/** A history with overwrites, a delete, a txn and a compaction: every kind of row. */
function history(a: Applier): void {
  for (let i = 0; i < 30; i++) a.put(`k${i % 7}`, `v${i}`);
  a.del('k3');
  a.txn({ success: [{ requestPut: { key: Buffer.from('t1'), value: Buffer.from('x') } }, { requestDeleteRange: { key: Buffer.from('k5') } }] });
  a.compact(12);
  a.put('k1', 'last');
}

/** What a user can read back: current and historical ranges, counts, the hash. */
function reads(kv: KvStore): unknown {
  const all = { key: Buffer.from('\0'), rangeEnd: Buffer.from('\0') };
  return {
    now: pairs(kv.range(all).kvs),
    at20: pairs(kv.range({ ...all, revision: 20 }).kvs),
    at12: pairs(kv.range({ ...all, revision: 12 }).kvs),
    count25: kv.range({ ...all, revision: 25, countOnly: true }).count,
    hash: kv.hashKv(),
    hash20: kv.hashKv(20).hash,
  };
}

/** Rewrites a store's file in schema 1's shape: `kv` clustered by key, index by revision. */
function downgradeToSchema1(path: string): void {
  const db = new Database(path);
  db.transaction(() => {
    db.exec(`CREATE TABLE kv1 (key BLOB NOT NULL, main INTEGER NOT NULL, sub INTEGER NOT NULL, create_rev INTEGER NOT NULL,
        version INTEGER NOT NULL, lease INTEGER NOT NULL, tombstone INTEGER NOT NULL, value BLOB NOT NULL,
        PRIMARY KEY (key, main, sub)) WITHOUT ROWID;
      INSERT INTO kv1 SELECT key, main, sub, create_rev, version, lease, tombstone, value FROM kv;
      DROP TABLE kv;
      ALTER TABLE kv1 RENAME TO kv;
      CREATE INDEX kv_by_revision ON kv (main, sub);`);
    db.pragma('user_version = 1');
  })();
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

const schema = (path: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return {
      version: db.pragma('user_version', { simple: true }),
      indexes: db.prepare(`SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'kv' ORDER BY name`).pluck().all(),
    };
  } finally {
    db.close();
  }
};
/** The page size in a database file's header (bytes 16-17, big-endian; 1 means 65536). */
const pageSizeOf = (path: string) => {
  const n = readFileSync(path).readUInt16BE(16);
  return n === 1 ? 65536 : n;
};

/** Rewrites a store's file with `size`-byte pages (as a build with another page size made it). */
function repage(path: string, size: number): void {
  const db = new Database(path);
  db.pragma('journal_mode = DELETE');
  db.pragma(`page_size = ${size}`);
  db.exec('VACUUM');
  db.pragma('journal_mode = WAL');
  db.close();
}

const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');

describe('KV schema upgrade', () => {
  test('a schema 1 file reads the same read-only (unchanged) and is rebuilt in revision order when opened for writing', () => {
    const dir = tempDir();
    const path = join(dir, 'kv.db');
    const a = new Applier(KvStore.open(path));
    history(a);
    const expected = reads(a.kv);
    a.kv.close();
    assert.deepEqual(schema(path), { version: 2, indexes: ['kv_by_key'] });

    downgradeToSchema1(path);
    assert.deepEqual(schema(path), { version: 1, indexes: ['kv_by_revision'] });
    const before = sha(path);

    const ro = KvStore.open(path, { readonly: true });
    try {
      assert.deepEqual(reads(ro), expected);
    } finally {
      ro.close();
    }
    assert.equal(sha(path), before, 'a read-only open changed the file');
    assert.deepEqual(schema(path), { version: 1, indexes: ['kv_by_revision'] });

    const rw = new Applier(KvStore.open(path));
    try {
      assert.deepEqual(schema(path), { version: 2, indexes: ['kv_by_key'] });
      assert.deepEqual(reads(rw.kv), expected);
      rw.put('after', 'upgrade');
      assert.deepEqual(pairs(rw.get('after').kvs), ['after=upgrade']);
    } finally {
      rw.kv.close();
    }
    assert.equal(existsSync(`${path}-wal`), false);
  });

  test('a new file has KV_PAGE_SIZE pages; a file with 4 KiB pages (earlier builds) keeps them, reads the same and takes writes', () => {
    const path = join(tempDir(), 'kv.db');
    const a = new Applier(KvStore.open(path));
    history(a);
    const expected = reads(a.kv);
    a.kv.close();
    assert.equal(pageSizeOf(path), KV_PAGE_SIZE);

    repage(path, 4096);
    assert.equal(pageSizeOf(path), 4096);
    const rw = new Applier(KvStore.open(path));
    let dbSize: number;
    try {
      assert.deepEqual(reads(rw.kv), expected);
      rw.put('after', 'repage');
      assert.deepEqual(pairs(rw.get('after').kvs), ['after=repage']);
      dbSize = rw.kv.dbSize();
    } finally {
      rw.kv.close();
    }
    assert.equal(pageSizeOf(path), 4096);
    // etcd's dbSize counts the file's own pages: the file once the WAL is copied back.
    assert.equal(statSync(path).size, dbSize);
  });

  test('a file from a newer schema is refused, naming both versions; the current one opens', () => {
    const path = join(tempDir(), 'kv.db');
    KvStore.open(path).close();
    const setVersion = (v: number) => {
      const db = new Database(path);
      db.pragma(`user_version = ${v}`);
      db.close();
    };
    setVersion(3);
    const err = thrown(() => KvStore.open(path));
    assert.match(err.message, /kv\.db has KV schema version 3, this build reads versions 1 and 2; use a matching lifeboat/);
    setVersion(2);
    KvStore.open(path).close();
  });
});
