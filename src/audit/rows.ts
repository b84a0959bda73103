// How the audit log's rows look in SQLite and as records: the row shapes, the
// statements (prepared on first use) and the row → record mapping shared by
// the journal, its queries and verify.
import type Database from 'better-sqlite3';
import type { EventRecord, RunOutcome, RunRecord, StepRecord, StepStatus } from './types.js';

export interface RunRow {
  id: string;
  started_at: string;
  ended_at: string | null;
  outcome: string;
  os_user: string;
  host: string;
  pid: number;
  reason: string;
  playbook: string;
  playbook_sha256: string | null;
  variables: string | null;
  error: string | null;
  cluster_id_before: string | null;
  member_ids_before: string | null;
  cluster_id_after: string | null;
  member_ids_after: string | null;
  resumes: number;
  start_seq: number;
  last_seq: number;
}

export interface StepRow {
  run_id: string;
  seq: number;
  ordinal: number;
  attempt: number;
  step_id: string;
  name: string;
  type: string;
  inputs: string | null;
  outputs: string | null;
  started_at: string;
  ended_at: string | null;
  duration_ms: number | null;
  status: string;
  error: string | null;
}

export interface EventRow {
  run_id: string;
  seq: number;
  at: string;
  kind: string;
  message: string;
  data: string | null;
  step_seq: number | null;
}

export interface ChainRow {
  seq: number;
  at: string;
  kind: string;
  run_id: string;
  payload: string;
  prev_hash: string;
  hash: string;
}

export const STATEMENTS = {
  last: `SELECT seq, hash FROM chain ORDER BY seq DESC LIMIT 1`,
  count: `SELECT count(*) FROM chain`,
  insert: `INSERT INTO chain (seq, at, kind, run_id, payload, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)`,
  chainAll: `SELECT seq, at, kind, run_id, payload, prev_hash, hash FROM chain ORDER BY seq`,
  allRuns: `SELECT * FROM runs ORDER BY start_seq`,
  runById: `SELECT * FROM runs WHERE id = ?`,
  stepsOfRun: `SELECT * FROM steps WHERE run_id = ? ORDER BY seq`,
  stepBySeq: `SELECT * FROM steps WHERE run_id = ? AND seq = ?`,
  attempts: `SELECT count(*) FROM steps WHERE run_id = ? AND ordinal = ?`,
  sessionStart: `SELECT max(seq) FROM chain WHERE run_id = ? AND kind IN ('run.start', 'run.resume')`,
  lastProcess: `SELECT payload FROM chain WHERE run_id = ? AND kind IN ('run.start', 'run.resume') ORDER BY seq DESC LIMIT 1`,
  eventsOfRun: `SELECT * FROM events WHERE run_id = ? ORDER BY seq`,
  eventBySeq: `SELECT * FROM events WHERE seq = ?`,
  marksOfRun: `SELECT * FROM chain WHERE run_id = ? AND kind IN ('run.update', 'run.resume', 'run.end') ORDER BY seq`,
} as const;

const PLUCKED = new Set<keyof typeof STATEMENTS>(['count', 'attempts', 'sessionStart', 'lastProcess']);

/**
 * Statements prepared on first use, so that a log whose views were tampered
 * with still opens and `verify` can say so.
 */
export function prepare(db: Database.Database): Record<keyof typeof STATEMENTS, Database.Statement> {
  const cache = new Map<string, Database.Statement>();
  return new Proxy({} as Record<keyof typeof STATEMENTS, Database.Statement>, {
    get(_target, name: keyof typeof STATEMENTS) {
      let stmt = cache.get(name);
      if (!stmt) {
        stmt = db.prepare(STATEMENTS[name]);
        if (PLUCKED.has(name)) stmt.pluck();
        cache.set(name, stmt);
      }
      return stmt;
    },
  });
}

export type Statements = ReturnType<typeof prepare>;

export function mapRun(r: RunRow): RunRecord {
  return {
    id: r.id,
    startedAt: r.started_at,
    endedAt: r.ended_at,
    outcome: r.outcome as RunOutcome,
    user: r.os_user,
    host: r.host,
    pid: r.pid,
    reason: r.reason,
    playbook: r.playbook,
    playbookSha256: r.playbook_sha256,
    variables: (parseJson(r.variables) ?? {}) as Record<string, unknown>,
    error: r.error,
    clusterIdBefore: r.cluster_id_before,
    memberIdsBefore: parseJson(r.member_ids_before) as string[] | null,
    clusterIdAfter: r.cluster_id_after,
    memberIdsAfter: parseJson(r.member_ids_after) as string[] | null,
    resumes: r.resumes,
    startSeq: r.start_seq,
    lastSeq: r.last_seq,
  };
}

export function mapStep(r: StepRow): StepRecord {
  return {
    runId: r.run_id,
    seq: r.seq,
    ordinal: r.ordinal,
    attempt: r.attempt,
    stepId: r.step_id,
    name: r.name,
    type: r.type,
    inputs: parseJson(r.inputs),
    outputs: parseJson(r.outputs),
    startedAt: r.started_at,
    endedAt: r.ended_at,
    durationMs: r.duration_ms,
    status: r.status as StepStatus,
    error: r.error,
  };
}

export function mapEvent(r: EventRow): EventRecord {
  return {
    runId: r.run_id,
    seq: r.seq,
    at: r.at,
    kind: r.kind,
    message: r.message,
    data: parseJson(r.data),
    stepSeq: r.step_seq,
  };
}

export function parseJson(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}
