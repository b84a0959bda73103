// The audit database file: pragmas, schema, and the check that the schema is the
// one this build wrote.
//
// One table holds everything: `chain`, append-only (triggers refuse UPDATE and
// DELETE), one row per thing ever written. `runs`, `steps` and `events` are views
// derived from it, so there is no second copy to disagree with the chain; `verify`
// checks the views' definitions too, since the commands display through them.
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type Database from 'better-sqlite3';
import { openSqlite } from '../common/sqlite.js';

/** 'LBAU' */
export const AUDIT_APPLICATION_ID = 0x4c424155;
export const AUDIT_SCHEMA_VERSION = 1;

// The latest value of a run field, from the run's own rows (later rows win).
const latest = (field: string, op: '->' | '->>', kinds: string) =>
  `(SELECT u.payload ${op} '$.${field}' FROM chain u
      WHERE u.run_id = s.run_id AND u.kind IN (${kinds}) AND u.payload ->> '$.${field}' IS NOT NULL
      ORDER BY u.seq DESC LIMIT 1)`;

export const AUDIT_DDL = `
CREATE TABLE chain (
  seq INTEGER PRIMARY KEY,
  at TEXT NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('run.start', 'run.update', 'run.resume', 'run.end', 'step.start', 'step.end', 'event')),
  run_id TEXT NOT NULL,
  payload TEXT NOT NULL,
  prev_hash TEXT NOT NULL,
  hash TEXT NOT NULL
);
CREATE UNIQUE INDEX chain_run_start ON chain (run_id) WHERE kind = 'run.start';
CREATE INDEX chain_by_run ON chain (run_id, kind, seq);
CREATE INDEX chain_step_end ON chain (run_id, (payload ->> '$.step')) WHERE kind = 'step.end';
CREATE TRIGGER chain_no_update BEFORE UPDATE ON chain
  BEGIN SELECT RAISE(ABORT, 'the audit chain is append-only'); END;
CREATE TRIGGER chain_no_delete BEFORE DELETE ON chain
  BEGIN SELECT RAISE(ABORT, 'the audit chain is append-only'); END;

CREATE VIEW runs AS
SELECT
  s.run_id AS id,
  s.at AS started_at,
  CASE WHEN x.kind = 'run.end' THEN x.at END AS ended_at,
  CASE WHEN x.kind = 'run.end' THEN x.payload ->> '$.outcome' ELSE 'running' END AS outcome,
  s.payload ->> '$.user' AS os_user,
  s.payload ->> '$.host' AS host,
  s.payload ->> '$.pid' AS pid,
  s.payload ->> '$.reason' AS reason,
  s.payload ->> '$.playbook' AS playbook,
  s.payload ->> '$.playbookSha256' AS playbook_sha256,
  s.payload -> '$.variables' AS variables,
  CASE WHEN x.kind = 'run.end' THEN x.payload ->> '$.error' END AS error,
  ${latest('clusterIdBefore', '->>', "'run.start', 'run.update'")} AS cluster_id_before,
  ${latest('memberIdsBefore', '->', "'run.start', 'run.update'")} AS member_ids_before,
  ${latest('clusterIdAfter', '->>', "'run.update', 'run.end'")} AS cluster_id_after,
  ${latest('memberIdsAfter', '->', "'run.update', 'run.end'")} AS member_ids_after,
  (SELECT count(*) FROM chain r WHERE r.run_id = s.run_id AND r.kind = 'run.resume') AS resumes,
  s.seq AS start_seq,
  (SELECT max(l.seq) FROM chain l WHERE l.run_id = s.run_id) AS last_seq
FROM chain s
LEFT JOIN chain x ON x.seq = (
  SELECT max(y.seq) FROM chain y WHERE y.run_id = s.run_id AND y.kind IN ('run.end', 'run.resume'))
WHERE s.kind = 'run.start';

CREATE VIEW steps AS
SELECT
  s.run_id AS run_id,
  s.seq AS seq,
  s.payload ->> '$.ordinal' AS ordinal,
  s.payload ->> '$.attempt' AS attempt,
  s.payload ->> '$.stepId' AS step_id,
  s.payload ->> '$.name' AS name,
  s.payload ->> '$.type' AS type,
  s.payload -> '$.inputs' AS inputs,
  e.payload -> '$.outputs' AS outputs,
  s.at AS started_at,
  e.at AS ended_at,
  e.payload ->> '$.durationMs' AS duration_ms,
  coalesce(e.payload ->> '$.status', 'running') AS status,
  e.payload ->> '$.error' AS error,
  e.seq AS end_seq
FROM chain s
LEFT JOIN chain e ON e.kind = 'step.end' AND e.run_id = s.run_id AND e.payload ->> '$.step' = s.seq
WHERE s.kind = 'step.start';

CREATE VIEW events AS
SELECT
  run_id,
  seq,
  at,
  payload ->> '$.kind' AS kind,
  payload ->> '$.message' AS message,
  payload -> '$.data' AS data,
  payload ->> '$.step' AS step_seq
FROM chain
WHERE kind = 'event';
`;

/** The audit database is missing (reading commands never create it). */
export class AuditDbMissingError extends Error {
  constructor(readonly path: string) {
    super(`no audit log at ${path} (nothing recorded there yet); pass --audit-db or set LIFEBOAT_AUDIT_DB if it lives elsewhere`);
    this.name = 'AuditDbMissingError';
  }
}

export interface OpenAuditOptions {
  /** Open an existing log without writing (the audit commands). */
  readonly?: boolean;
}

/**
 * Opens (creating the file and its directories if needed, unless readonly) an
 * audit database: WAL, synchronous=FULL (every commit is on disk before the call
 * returns: this is the record operators trust), and a 5 s busy timeout so two
 * processes appending at once wait for each other instead of failing.
 */
export function openAuditDatabase(file: string, opts: OpenAuditOptions = {}): Database.Database {
  const readonly = opts.readonly ?? false;
  if (readonly && !existsSync(file)) throw new AuditDbMissingError(file);
  let db: Database.Database;
  try {
    if (!readonly) mkdirSync(path.dirname(file), { recursive: true });
    db = openSqlite(file, { readonly, fileMustExist: readonly });
  } catch (err) {
    throw new Error(`cannot open audit log ${file}: ${(err as Error).message}`);
  }
  try {
    db.pragma('busy_timeout = 5000');
    if (!readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL');
    }
    const appId = db.pragma('application_id', { simple: true }) as number;
    const version = db.pragma('user_version', { simple: true }) as number;
    if (appId === 0 && version === 0 && isEmpty(db)) {
      if (readonly) throw new AuditDbMissingError(file);
      db.transaction(() => {
        db.exec(AUDIT_DDL);
        db.pragma(`application_id = ${AUDIT_APPLICATION_ID}`);
        db.pragma(`user_version = ${AUDIT_SCHEMA_VERSION}`);
      }).immediate();
    } else if (appId !== AUDIT_APPLICATION_ID) {
      throw new Error(`${file} is not a Lifeboat audit log (application_id ${appId}); check --audit-db`);
    } else if (version !== AUDIT_SCHEMA_VERSION) {
      throw new Error(`${file} has audit schema version ${version}, this build reads version ${AUDIT_SCHEMA_VERSION}; use a matching lifeboat`);
    }
    return db;
  } catch (err) {
    db.close();
    if ((err as { code?: string }).code === 'SQLITE_NOTADB') throw new Error(`${file} is not a Lifeboat audit log (not an SQLite database); check --audit-db`);
    throw err;
  }
}

function isEmpty(db: Database.Database): boolean {
  return db.prepare(`SELECT count(*) FROM sqlite_schema`).pluck().get() === 0;
}

interface SchemaObject {
  type: string;
  name: string;
  sql: string | null;
}

const SCHEMA_QUERY = `SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name`;

let expectedSchema: Map<string, SchemaObject> | undefined;

/**
 * Differences between `db`'s schema objects (tables, indexes, triggers, views)
 * and the ones AUDIT_DDL creates, one line each; empty when they match exactly.
 * A redefined view would make the commands display something the chain never
 * said; a dropped trigger means someone edited rows by hand.
 */
export function schemaDifferences(db: Database.Database): string[] {
  if (!expectedSchema) {
    const mem = openSqlite(':memory:');
    try {
      mem.exec(AUDIT_DDL);
      expectedSchema = new Map((mem.prepare(SCHEMA_QUERY).all() as SchemaObject[]).map((o) => [o.name, o]));
    } finally {
      mem.close();
    }
  }
  const actual = new Map((db.prepare(SCHEMA_QUERY).all() as SchemaObject[]).map((o) => [o.name, o]));
  const out: string[] = [];
  for (const [name, want] of expectedSchema) {
    const got = actual.get(name);
    if (!got) out.push(`${want.type} ${name} was dropped`);
    else if (got.type !== want.type || got.sql !== want.sql) out.push(`${want.type} ${name} was redefined`);
  }
  for (const [name, got] of actual) {
    if (!expectedSchema.has(name)) out.push(`${got.type} ${name} was added`);
  }
  return out;
}
