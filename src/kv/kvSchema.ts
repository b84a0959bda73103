// The SQLite file behind the KV: schema, pragmas, and the checks made at open.
//
// kv      every stored revision of every key (etcd's `key` bucket), ordered by
//         revision (main, sub) as bbolt's bucket is: a put appends to the last page.
//         kv_by_key (key, main, sub) makes "latest revision of a key <= R" one seek.
//         (Schema 1 clustered kv by key, so each put dirtied a random page of rows
//         with values; it is rebuilt as schema 2 when opened for writing.)
// live    the latest revision of each existing key, without its value (etcd's
//         in-memory key index, reduced to what reads at the current revision need).
//         Reads at the current revision scan `live`; historical reads scan `kv`.
// state   one row: applied index/term, current and compacted revision. Written in
//         the same transaction as each apply, so nothing is applied twice or skipped.
// meta, members, removed_members, leases, alarms: cluster state the server keeps
//         next to the data so that a snapshot carries it.

import type Database from 'better-sqlite3';
import { openSqlite } from '../common/sqlite.js';

/** 'LBKV' — marks the file as a Lifeboat KV (PRAGMA application_id). */
export const APPLICATION_ID = 0x4c424b56;
export const SCHEMA_VERSION = 2;

// Same columns in both schemas, so every query reads either (a read-only open
// of a schema 1 file is served as it is).
const KV_TABLE = (name: string) => `
CREATE TABLE ${name} (
  main INTEGER NOT NULL,
  sub INTEGER NOT NULL,
  key BLOB NOT NULL,
  create_rev INTEGER NOT NULL,
  version INTEGER NOT NULL,
  lease INTEGER NOT NULL,
  tombstone INTEGER NOT NULL,
  value BLOB NOT NULL,
  PRIMARY KEY (main, sub)
) WITHOUT ROWID;`;
const KV_BY_KEY = `CREATE INDEX kv_by_key ON kv (key, main, sub);`;

const DDL = `${KV_TABLE('kv')}
${KV_BY_KEY}

CREATE TABLE live (
  key BLOB PRIMARY KEY,
  main INTEGER NOT NULL,
  sub INTEGER NOT NULL,
  create_rev INTEGER NOT NULL,
  version INTEGER NOT NULL,
  lease INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX live_by_lease ON live (lease) WHERE lease <> 0;

CREATE TABLE state (
  one INTEGER PRIMARY KEY CHECK (one = 1),
  applied_index INTEGER NOT NULL,
  applied_term INTEGER NOT NULL,
  current_revision INTEGER NOT NULL,
  compact_revision INTEGER NOT NULL
);
-- etcd starts at revision 1 (the first write gets 2) with compactMainRev -1.
INSERT INTO state VALUES (1, 0, 0, 1, -1);

CREATE TABLE meta (name TEXT PRIMARY KEY, value BLOB NOT NULL) WITHOUT ROWID;

CREATE TABLE members (
  id TEXT PRIMARY KEY,          -- 16 lowercase hex digits: uint64 ordered as text
  name TEXT NOT NULL,
  peer_urls TEXT NOT NULL,      -- JSON array
  client_urls TEXT NOT NULL,    -- JSON array
  is_learner INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE removed_members (id TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE leases (id INTEGER PRIMARY KEY, ttl INTEGER NOT NULL);
CREATE TABLE alarms (member_id TEXT NOT NULL, alarm INTEGER NOT NULL, PRIMARY KEY (member_id, alarm)) WITHOUT ROWID;
`;

export interface OpenOptions {
  /** Open without creating or writing (inspection, snapshot status). */
  readonly?: boolean;
  /**
   * false: skip SQLite's quick_check, for a file just installed from a snapshot
   * whose every byte was checked against the sender's (a consistent read of a
   * store that passed its own check when opened). Default true.
   */
  quickCheck?: boolean;
}

/**
 * The file is not a sound SQLite database: SQLite refused it, or its quick_check
 * found damage. Callers that know the data dir add the recovery command.
 */
export class KvDamagedError extends Error {
  constructor(
    readonly path: string,
    readonly detail: string,
  ) {
    super(`${path} is damaged: ${detail}`);
    this.name = 'KvDamagedError';
  }
}

/** SQLite's own words for a file that is not (or no longer) a database. */
const DAMAGE_CODES = new Set(['SQLITE_CORRUPT', 'SQLITE_NOTADB', 'SQLITE_IOERR_SHORT_READ']);

/**
 * The page size of a KV database this build creates (SQLite's default is 4 KiB).
 * A by-key B-tree with etcdctl check perf's 276-byte keys holds about 13 cells a
 * 4 KiB page, so each random put dirtied a leaf and two interior pages of each; and
 * a revision row over about 1 KB (that key, a 1 KiB value) took an overflow page of
 * its own. A file keeps the page size it was created with.
 */
export const KV_PAGE_SIZE = 16384;

/** The size kv.db's WAL file is cut back to whenever SQLite starts it over. */
export const KV_WAL_LIMIT_BYTES = 64 << 20;

/**
 * Opens (creating if needed) a KV database with our pragmas. WAL lets snapshots
 * read while applies write; synchronous=NORMAL skips the fsync per commit because
 * the Raft log is the source of durability and is replayed from the applied index.
 */
export function openKvDatabase(path: string, opts: OpenOptions = {}): Database.Database {
  const db = openSqlite(path, { readonly: opts.readonly ?? false, fileMustExist: opts.readonly ?? false });
  try {
    if (!opts.readonly) {
      // Only a file with no pages yet takes it; before WAL mode, which fixes it.
      db.pragma(`page_size = ${KV_PAGE_SIZE}`);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = NORMAL');
      // When SQLite starts the WAL over, it cuts the file back to this size.
      db.pragma(`journal_size_limit = ${KV_WAL_LIMIT_BYTES}`);
    }
    db.pragma('temp_store = MEMORY');
    const appId = db.pragma('application_id', { simple: true }) as number;
    // A page-level check of every b-tree (not the index-vs-table cross check of
    // integrity_check): 0.2-0.3 s per 100k keys (20 MB), measured; so a damaged
    // file stops the opener instead of being served from. Run with SQLite's small
    // default cache: with the large one it took longer, and every page it read stayed
    // in the opener's memory (a restarted member held its whole store).
    if (path !== ':memory:' && opts.quickCheck !== false) quickCheck(db, path);
    db.pragma('cache_size = -65536'); // 64 MiB
    const version = db.pragma('user_version', { simple: true }) as number;
    if (appId === 0 && version === 0 && isEmpty(db)) {
      if (opts.readonly) throw new Error(`${path} is an empty database, not a Lifeboat KV`);
      db.transaction(() => {
        db.exec(DDL);
        db.pragma(`application_id = ${APPLICATION_ID}`);
        db.pragma(`user_version = ${SCHEMA_VERSION}`);
      })();
    } else if (appId !== APPLICATION_ID) {
      throw new Error(`${path} is not a Lifeboat KV database (application_id ${appId}); check the path`);
    } else if (version !== 1 && version !== SCHEMA_VERSION) {
      throw new Error(`${path} has KV schema version ${version}, this build reads versions 1 and ${SCHEMA_VERSION}; use a matching lifeboat`);
    } else if (version === 1 && !opts.readonly) {
      migrateFromSchema1(db);
    }
    return db;
  } catch (err) {
    db.close();
    const code = (err as { code?: unknown }).code;
    if (typeof code === 'string' && DAMAGE_CODES.has(code)) throw new KvDamagedError(path, `${(err as Error).message} (${code})`);
    throw err;
  }
}

/**
 * Rebuilds a schema 1 `kv` (clustered by key) in revision order, in one
 * transaction: a crash leaves the file as it was, and the next open does it again.
 */
function migrateFromSchema1(db: Database.Database): void {
  db.transaction(() => {
    db.exec(`${KV_TABLE('kv_by_revision_order')}
      INSERT INTO kv_by_revision_order (main, sub, key, create_rev, version, lease, tombstone, value)
        SELECT main, sub, key, create_rev, version, lease, tombstone, value FROM kv ORDER BY main, sub;
      DROP TABLE kv;
      ALTER TABLE kv_by_revision_order RENAME TO kv;
      ${KV_BY_KEY}`);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  })();
}

function quickCheck(db: Database.Database, path: string): void {
  const problems = (db.pragma('quick_check(3)') as { quick_check: string }[]).map((r) => r.quick_check);
  if (problems.length === 1 && problems[0] === 'ok') return;
  throw new KvDamagedError(path, `SQLite quick_check: ${problems.join('; ').replace(/\s+/g, ' ')}`);
}

function isEmpty(db: Database.Database): boolean {
  return db.prepare(`SELECT count(*) FROM sqlite_schema`).pluck().get() === 0;
}
