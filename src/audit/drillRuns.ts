// Recovery drills in the audit log. A drill (`lifeboat drill`) is recorded as a
// run of kind `drill`: playbook name `drill` with no playbook file (a playbook run
// always has its file's sha256), its phases as steps, and one `drill-result`
// event whose data is the summary below (the RTO breakdown, the checks). Read
// here for `audit report RUN_ID` (the breakdown) and `audit report --drills`
// (the history). The drill itself lives in src/drill.
import { openAuditLogForReport } from './open.js';
import type { AuditReader } from './queries.js';
import type { EventRecord, RunOutcome, RunRecord } from './types.js';

export const DRILL_PLAYBOOK = 'drill';
export const DRILL_RESULT_EVENT = 'drill-result';

export type RunKind = 'drill' | 'playbook';

/** What a run is: a drill, or a playbook run (`lifeboat recover` runs a playbook too). */
export function runKind(run: Pick<RunRecord, 'playbook' | 'playbookSha256'>): RunKind {
  return run.playbook === DRILL_PLAYBOOK && run.playbookSha256 === null ? 'drill' : 'playbook';
}

/** One measured phase of the recovery a drill demonstrated. */
export interface DrillPhase {
  /** snapshot, restore, first-write, member:<name> */
  phase: string;
  /** what it covers, for people */
  label: string;
  seconds: number;
}

export interface DrillCheck {
  /** snapshot, keys, hash, write, members, … */
  name: string;
  ok: boolean;
  detail: string;
}

/** The data of a drill's `drill-result` event. */
export interface DrillSummary {
  passed: boolean;
  runtime: 'lifeboat' | 'etcd';
  members: number;
  snapshotRevision: number | null;
  keys: number | null;
  /** how the data was compared: HashKV at the snapshot's revision, or sampled keys */
  comparison: 'hashkv' | 'sampled-keys' | null;
  phases: DrillPhase[];
  /** snapshot to first write accepted */
  writableSeconds: number | null;
  /** every phase: snapshot to the last member caught up and promoted */
  totalSeconds: number | null;
  checks: DrillCheck[];
  failures: string[];
  /** set by `backup verify`: the backup it proved (or failed to), replayed from a store instead of a snapshot taken */
  backup?: { store: string; clusterId: string; revision: number; objects: string[] };
}

export function isDrillSummary(v: unknown): v is DrillSummary {
  if (typeof v !== 'object' || v === null) return false;
  const o = v as Record<string, unknown>;
  return typeof o.passed === 'boolean' && Array.isArray(o.phases) && Array.isArray(o.checks);
}

/** The drill summary among a run's events (the last one recorded), or null. */
export function drillSummaryOf(events: readonly EventRecord[]): DrillSummary | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (e.kind === DRILL_RESULT_EVENT && isDrillSummary(e.data)) return e.data;
  }
  return null;
}

export interface DrillHistoryEntry {
  runId: string;
  startedAt: string;
  outcome: RunOutcome;
  error: string | null;
  /** null when the drill stopped before it could record one (a process that died) */
  summary: DrillSummary | null;
}

export interface DrillHistory {
  auditDb: string;
  generatedAt: string;
  drills: DrillHistoryEntry[];
}

/** Every drill in the log, oldest first. */
export function drillHistory(log: AuditReader, now: Date = new Date()): DrillHistory {
  const drills = log
    .runs()
    .filter((r) => runKind(r) === 'drill')
    .map((r): DrillHistoryEntry => ({
      runId: r.id,
      startedAt: r.startedAt,
      outcome: r.outcome,
      error: r.error,
      summary: drillSummaryOf(log.events(r.id)),
    }));
  return { auditDb: log.path, generatedAt: now.toISOString(), drills };
}

/** The drill history of the log --audit-db names; a missing or foreign file is an input error (exit 2). */
export function readDrillHistory(auditDbFlag: string | undefined, now: Date = new Date()): DrillHistory {
  const log: AuditReader = openAuditLogForReport(auditDbFlag);
  try {
    return drillHistory(log, now);
  } finally {
    log.close();
  }
}
