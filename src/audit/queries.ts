// Reading the audit log: runs, their steps, events and timelines, where to
// resume, exports and the chain's head. Read-only; the journal (AuditLog) adds
// the writes, verify.ts the chain check.
import type Database from 'better-sqlite3';
import { GENESIS_HASH } from './hashChain.js';
import { mapEvent, mapRun, mapStep, prepare, type ChainRow, type EventRow, type RunRow, type Statements, type StepRow } from './rows.js';
import {
  COMPLETED_STEP_STATUSES,
  type EventRecord,
  type RunMark,
  type RunRecord,
  type RunState,
  type StepRecord,
  type StepRef,
  type TimelineEntry,
  type VerifyResult,
} from './types.js';
import { verifyChain } from './verify.js';

export interface AuditExport {
  auditDb: string;
  /** the chain's head hash when exported */
  head: string;
  /** the chain's row count when exported */
  rows: number;
  runs: Array<RunRecord & { steps: StepRecord[]; events: EventRecord[] }>;
}

/** A run ID that is not in the log: one line, naming the file and what to do. */
export class UnknownRunError extends Error {
  constructor(
    readonly runId: string,
    readonly path: string,
  ) {
    super(`no run ${runId} in ${path}; see 'lifeboat audit list'`);
    this.name = 'UnknownRunError';
  }
}

export class AuditReader {
  protected readonly q: Statements;

  protected constructor(
    protected readonly db: Database.Database,
    /** the database file */
    readonly path: string,
  ) {
    this.q = prepare(db);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /** Every run, oldest first. */
  runs(): RunRecord[] {
    return (this.q.allRuns.all() as RunRow[]).map(mapRun);
  }

  run(runId: string): RunRecord | undefined {
    const row = this.q.runById.get(runId) as RunRow | undefined;
    return row && mapRun(row);
  }

  /** The run, or UnknownRunError. */
  requireRun(runId: string): RunRecord {
    return mapRun(this.requireRunRow(runId));
  }

  /** Every step attempt of the run, in the order they started. */
  steps(runId: string): StepRecord[] {
    this.requireRunRow(runId);
    return (this.q.stepsOfRun.all(runId) as StepRow[]).map(mapStep);
  }

  events(runId: string): EventRecord[] {
    this.requireRunRow(runId);
    return (this.q.eventsOfRun.all(runId) as EventRow[]).map(mapEvent);
  }

  /** Steps (at their start), events and the run's own updates, resumes and end, in the order they were written. */
  timeline(runId: string): TimelineEntry[] {
    const entries: Array<[number, TimelineEntry]> = [
      ...this.steps(runId).map((step): [number, TimelineEntry] => [step.seq, { type: 'step', step }]),
      ...this.events(runId).map((event): [number, TimelineEntry] => [event.seq, { type: 'event', event }]),
      ...(this.q.marksOfRun.all(runId) as ChainRow[]).map((r): [number, TimelineEntry] => [
        r.seq,
        { type: 'run', mark: { runId: r.run_id, seq: r.seq, at: r.at, kind: r.kind as RunMark['kind'], payload: JSON.parse(r.payload) as RunMark['payload'] } },
      ]),
    ];
    return entries.sort((a, b) => a[0] - b[0]).map(([, e]) => e);
  }

  /** The steps not to run again on resume: the latest attempt of each ordinal, if it succeeded or was skipped; by ordinal. */
  completedSteps(runId: string): StepRecord[] {
    return latestAttempts(this.steps(runId)).filter((s) => COMPLETED_STEP_STATUSES.includes(s.status));
  }

  /** The run, its steps and where to resume it. */
  lastRunState(runId: string): RunState {
    const run = this.requireRun(runId);
    const all = this.steps(runId);
    const steps = latestAttempts(all);
    const completed = steps.filter((s) => COMPLETED_STEP_STATUSES.includes(s.status)).map((s) => s.ordinal);
    // The first ordinal not completed: a failed or interrupted step, a gap, or one past the last.
    const done = new Set(completed);
    let resumeFrom = 1;
    while (done.has(resumeFrom)) resumeFrom++;
    const p = JSON.parse(this.q.lastProcess.get(runId) as string) as { user: string; host: string; pid: number };
    return { run, steps, completed, lastStep: all.at(-1) ?? null, resumeFrom, process: { user: p.user, host: p.host, pid: p.pid } };
  }

  /**
   * Every run (or just `runId`) with its steps and events, and the chain's head
   * and row count, read in one transaction so they agree with each other.
   */
  exportRuns(runId?: string): AuditExport {
    return this.db.transaction((): AuditExport => {
      const runs = runId === undefined ? this.runs() : [this.requireRun(runId)];
      return {
        auditDb: this.path,
        head: this.headHash(),
        rows: this.rowCount(),
        runs: runs.map((run) => ({ ...run, steps: this.steps(run.id), events: this.events(run.id) })),
      };
    })();
  }

  /** The hash of the chain's last row (GENESIS_HASH when empty). */
  headHash(): string {
    return (this.q.last.get() as { hash: string } | undefined)?.hash ?? GENESIS_HASH;
  }

  /** How many rows the chain holds. */
  rowCount(): number {
    return this.q.count.get() as number;
  }

  /** Walks the whole chain (see verifyChain); the first problem found is returned. */
  verify(expectedHead?: string): VerifyResult {
    return verifyChain(this.db, this.q, expectedHead);
  }

  protected requireRunRow(runId: string): RunRow {
    const row = this.q.runById.get(runId) as RunRow | undefined;
    if (!row) throw new UnknownRunError(runId, this.path);
    return row;
  }

  protected requireStep(ref: StepRef): StepRecord {
    return mapStep(this.q.stepBySeq.get(ref.runId, ref.seq) as StepRow);
  }
}

export function latestAttempts(all: StepRecord[]): StepRecord[] {
  const byOrdinal = new Map<number, StepRecord>();
  for (const s of all) byOrdinal.set(s.ordinal, s); // in start order: the last one wins
  return [...byOrdinal.values()].sort((a, b) => a.ordinal - b.ordinal);
}
