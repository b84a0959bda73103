// The audit log: every recovery run, each of its steps and every prompt, note and
// override, appended to a hash chain in SQLite. The playbook engine writes it;
// `lifeboat audit …` reads it.
//
// Each write is one IMMEDIATE transaction that checks the run's state, then
// appends one chain row; with synchronous=FULL it is on disk when the call
// returns. Nothing is ever updated in place: a step finishing is a new row, and
// the runs/steps/events views fold the rows together.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type Database from 'better-sqlite3';
import { canonicalJson, GENESIS_HASH, linkHash } from './hashChain.js';
import { openAuditDatabase, schemaDifferences, type OpenAuditOptions } from './schema.js';
import {
  CHAIN_KINDS,
  COMPLETED_STEP_STATUSES,
  RUN_OUTCOMES,
  STEP_STATUSES,
  type ChainKind,
  type EventRecord,
  type FinalOutcome,
  type FinalStepStatus,
  type RunMark,
  type RunOutcome,
  type RunRecord,
  type RunState,
  type StepRecord,
  type StepRef,
  type StepStatus,
  type TimelineEntry,
  type VerifyResult,
} from './types.js';

/** A cluster or member ID: hex text (e.g. 8e9e05c52164694d) or the bigint itself. */
export type HexId = string | bigint;

export interface AuditLogOptions extends OpenAuditOptions {
  /** the clock for `at` timestamps (tests pass a fake one) */
  now?: () => Date;
  /** who runs things; defaults to the OS user and host name */
  who?: { user: string; host: string };
  /**
   * Refuse to open a log whose schema (views, triggers) is not the one this
   * build writes, so nothing is displayed through a forged view. Default: on
   * for readonly opens; `verify` turns it off to report the damage itself.
   */
  checkSchema?: boolean;
}

export interface StartRunInput {
  /** the playbook's name (or e.g. "recover" for the interactive session) */
  playbook: string;
  /** sha256 of the playbook file, hex (see sha256Hex); null when there is no file */
  playbookSha256?: string | null;
  /** why the operator is doing this: required, it is the first thing a reviewer asks */
  reason: string;
  /** the run's variables, recorded as given: mask secrets before passing them */
  variables?: Record<string, unknown>;
  clusterIdBefore?: HexId;
  memberIdsBefore?: HexId[];
}

export interface RunIdsPatch {
  clusterIdBefore?: HexId;
  memberIdsBefore?: HexId[];
  clusterIdAfter?: HexId;
  memberIdsAfter?: HexId[];
}

export interface FinishRunInput {
  outcome: FinalOutcome;
  /** why it failed, was refused or interrupted */
  error?: string | Error;
  clusterIdAfter?: HexId;
  memberIdsAfter?: HexId[];
}

export interface StartStepInput {
  /** the step's position in the playbook, from 1 */
  ordinal: number;
  /** the playbook's step id */
  stepId: string;
  /** a human title; defaults to stepId */
  name?: string;
  /** the step library's type, e.g. add-learner */
  type: string;
  inputs?: unknown;
}

export interface FinishStepInput {
  status: FinalStepStatus;
  outputs?: unknown;
  error?: string | Error;
}

export interface EventInput {
  /** prompt, note, warning, assume-dead, … */
  kind: string;
  message: string;
  data?: unknown;
  /** the step the event belongs to, if any */
  step?: StepRef;
}

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

interface RunRow {
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

interface StepRow {
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

interface EventRow {
  run_id: string;
  seq: number;
  at: string;
  kind: string;
  message: string;
  data: string | null;
  step_seq: number | null;
}

interface ChainRow {
  seq: number;
  at: string;
  kind: string;
  run_id: string;
  payload: string;
  prev_hash: string;
  hash: string;
}

interface Appended {
  seq: number;
  at: string;
  hash: string;
}

const RUN_ID_PATTERN = /^r-\d{8}-\d{6}-[0-9a-f]{4}$/;

export class AuditLog {
  private readonly now: () => Date;
  private readonly who: { user: string; host: string };
  private readonly q: ReturnType<typeof prepare>;

  private constructor(
    private readonly db: Database.Database,
    /** the database file */
    readonly path: string,
    opts: AuditLogOptions,
  ) {
    this.now = opts.now ?? (() => new Date());
    this.who = opts.who ?? currentUser();
    this.q = prepare(db);
  }

  /** Opens (creating it and its directories unless readonly) the audit log at `path`. */
  static open(path: string, opts: AuditLogOptions = {}): AuditLog {
    const db = openAuditDatabase(path, opts);
    if (opts.checkSchema ?? opts.readonly ?? false) {
      const changed = schemaDifferences(db);
      if (changed.length > 0) {
        db.close();
        throw new Error(`audit log ${path} was tampered with (${changed.join('; ')}); see 'lifeboat audit verify'`);
      }
    }
    return new AuditLog(db, path, opts);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  // ---- writing -------------------------------------------------------------

  /** Records the start of a run (outcome running) and returns it, with its new ID. */
  startRun(input: StartRunInput): RunRecord {
    requireText(input.playbook, 'playbook');
    requireText(input.reason, 'reason');
    if (input.playbookSha256 != null && !/^[0-9a-f]{64}$/.test(input.playbookSha256)) {
      throw new TypeError(`playbookSha256 must be 64 lowercase hex digits, got ${JSON.stringify(input.playbookSha256)}`);
    }
    const payload: Record<string, unknown> = {
      playbook: input.playbook,
      playbookSha256: input.playbookSha256 ?? null,
      reason: input.reason,
      user: this.who.user,
      host: this.who.host,
      pid: process.pid,
      variables: input.variables ?? {},
      ...idFields({ clusterIdBefore: input.clusterIdBefore, memberIdsBefore: input.memberIdsBefore }),
    };
    const id = this.write(() => {
      const at = this.nowIso();
      let runId: string;
      do runId = newRunId(at);
      while (this.q.runById.get(runId) !== undefined);
      this.append('run.start', runId, payload, at);
      return runId;
    });
    return this.requireRun(id);
  }

  /** Records cluster and member IDs learned during the run (before and/or after). */
  updateRun(runId: string, patch: RunIdsPatch): void {
    const fields = idFields(patch);
    if (Object.keys(fields).length === 0) return;
    this.write(() => {
      this.requireOpenRun(runId, 'update it');
      this.append('run.update', runId, fields);
    });
  }

  /**
   * Records that `runId` continues (outcome back to running), by whom and why.
   * Allowed in any state, including `running` (a process that died without
   * recording its end): whether to resume is the engine's decision.
   */
  resumeRun(runId: string, opts: { reason?: string } = {}): RunRecord {
    this.write(() => {
      this.requireRunRow(runId);
      this.append('run.resume', runId, {
        user: this.who.user,
        host: this.who.host,
        pid: process.pid,
        ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
      });
    });
    return this.requireRun(runId);
  }

  /**
   * Records how the run ended and returns the chain's head hash, for the caller
   * to print: kept outside the database, it proves later that the log was not
   * rewritten (`lifeboat audit verify --head HASH`).
   */
  finishRun(runId: string, result: FinishRunInput): string {
    if (!(RUN_OUTCOMES as readonly string[]).includes(result.outcome) || (result.outcome as string) === 'running') {
      throw new TypeError(`a run ends succeeded, failed, refused or interrupted, not ${JSON.stringify(result.outcome)}`);
    }
    return this.write(() => {
      this.requireOpenRun(runId, 'finish it again');
      if (result.outcome === 'succeeded') {
        const open = (this.q.stepsOfRun.all(runId) as StepRow[]).filter(isUnfinishedLatest);
        if (open.length > 0) {
          throw new Error(`run ${runId} cannot succeed with step ${open[0]!.ordinal} (${open[0]!.step_id}) still running; finish the step first`);
        }
      }
      return this.append('run.end', runId, {
        outcome: result.outcome,
        ...(result.error !== undefined ? { error: errorText(result.error) } : {}),
        ...idFields({ clusterIdAfter: result.clusterIdAfter, memberIdsAfter: result.memberIdsAfter }),
      }).hash;
    });
  }

  /**
   * Records a step as started (status running) before the engine runs it, so an
   * interrupted run shows where it stopped. Starting an ordinal again (after a
   * resume) records a new attempt.
   */
  startStep(runId: string, step: StartStepInput): StepRecord {
    if (!Number.isSafeInteger(step.ordinal) || step.ordinal < 1) {
      throw new TypeError(`a step's ordinal is its position in the playbook, from 1; got ${step.ordinal}`);
    }
    requireText(step.stepId, 'stepId');
    requireText(step.type, 'type');
    const seq = this.write(() => {
      this.requireOpenRun(runId, 'start a step');
      const sessionStart = this.q.sessionStart.get(runId) as number;
      const running = (this.q.stepsOfRun.all(runId) as StepRow[]).find(
        (r) => r.ordinal === step.ordinal && r.status === 'running' && r.seq > sessionStart,
      );
      if (running) throw new Error(`step ${step.ordinal} (${running.step_id}) of run ${runId} is already running; finish it first`);
      const previous = this.q.attempts.get(runId, step.ordinal) as number;
      return this.append('step.start', runId, {
        ordinal: step.ordinal,
        attempt: previous + 1,
        stepId: step.stepId,
        name: step.name ?? step.stepId,
        type: step.type,
        inputs: step.inputs ?? {},
      }).seq;
    });
    return this.requireStep({ runId, seq });
  }

  /** Records how a step ended, with its outputs or error; the duration is from its start. */
  finishStep(step: StepRef, result: FinishStepInput): StepRecord {
    if (!(STEP_STATUSES as readonly string[]).includes(result.status) || (result.status as string) === 'running') {
      throw new TypeError(`a step ends succeeded, failed or skipped, not ${JSON.stringify(result.status)}`);
    }
    this.write(() => {
      this.requireOpenRun(step.runId, 'finish a step');
      const row = this.q.stepBySeq.get(step.runId, step.seq) as StepRow | undefined;
      if (!row) throw new Error(`run ${step.runId} has no step recorded at seq ${step.seq}`);
      if (row.status !== 'running') {
        throw new Error(`step ${row.ordinal} (${row.step_id}) of run ${step.runId} already ended (${row.status})`);
      }
      const at = this.nowIso();
      this.append(
        'step.end',
        step.runId,
        {
          step: step.seq,
          ordinal: row.ordinal,
          attempt: row.attempt,
          status: result.status,
          durationMs: Math.max(0, Date.parse(at) - Date.parse(row.started_at)),
          ...(result.outputs !== undefined ? { outputs: result.outputs } : {}),
          ...(result.error !== undefined ? { error: errorText(result.error) } : {}),
        },
        at,
      );
    });
    return this.requireStep(step);
  }

  /** Adds a timeline entry: a note, a warning, an --assume-dead override, … */
  event(runId: string, e: EventInput): EventRecord {
    requireText(e.kind, 'event kind');
    if (typeof e.message !== 'string') throw new TypeError('event message must be a string');
    const seq = this.write(() => {
      this.requireOpenRun(runId, 'add an event');
      if (e.step) {
        if (e.step.runId !== runId || this.q.stepBySeq.get(runId, e.step.seq) === undefined) {
          throw new Error(`run ${runId} has no step recorded at seq ${e.step.seq}`);
        }
      }
      return this.append('event', runId, {
        kind: e.kind,
        message: e.message,
        ...(e.data !== undefined ? { data: e.data } : {}),
        ...(e.step ? { step: e.step.seq } : {}),
      }).seq;
    });
    return mapEvent(this.q.eventBySeq.get(seq) as EventRow);
  }

  /** Records a question put to the operator and the answer given (event kind `prompt`). */
  recordPrompt(runId: string, question: string, answer: unknown, opts: { step?: StepRef; data?: Record<string, unknown> } = {}): EventRecord {
    return this.event(runId, { kind: 'prompt', message: question, data: { ...opts.data, answer }, step: opts.step });
  }

  // ---- reading -------------------------------------------------------------

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
        { type: 'run', mark: { runId: r.run_id, seq: r.seq, at: r.at, kind: r.kind as RunMark['kind'], payload: JSON.parse(r.payload) } },
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

  // ---- verifying -----------------------------------------------------------

  /**
   * Walks the whole chain in one read transaction: rows numbered 1, 2, … with no
   * gap, each prev_hash equal to the previous row's hash, each hash recomputed
   * from its row, each row making sense where it is (a step ends once, in a run
   * that started and has not ended, …); then the schema, since the commands show
   * the runs/steps/events views; then, if `expectedHead` is given, that the chain
   * ends exactly there. The first problem found is returned.
   */
  verify(expectedHead?: string): VerifyResult {
    return this.db.transaction((): VerifyResult => {
      let prevHash = GENESIS_HASH;
      let expectedSeq = 1;
      const seen = new Map<string, number>(); // hash → seq, to place an old --head
      const runs = new Map<string, { ended: boolean }>();
      const steps = new Map<number, { runId: string; ended: boolean }>();
      for (const row of this.q.chainAll.iterate() as IterableIterator<ChainRow>) {
        const bad = (reason: string): VerifyResult => ({ ok: false, firstBad: { seq: row.seq, reason } });
        if (row.seq !== expectedSeq) {
          if (row.seq > expectedSeq) {
            const what = row.seq === expectedSeq + 1 ? `row ${expectedSeq} is missing` : `rows ${expectedSeq}-${row.seq - 1} are missing`;
            return {
              ok: false,
              firstBad: { seq: expectedSeq, reason: `${what}: the chain goes from row ${expectedSeq - 1} to row ${row.seq}` },
            };
          }
          return bad(`rows must be numbered from 1, found ${row.seq}`);
        }
        if (row.prev_hash !== prevHash) {
          return bad(
            expectedSeq === 1
              ? 'prev_hash of the first row is not the genesis hash (rows were removed from the start)'
              : `prev_hash does not match the hash of row ${expectedSeq - 1} (that row was rewritten, or rows were removed, inserted or reordered)`,
          );
        }
        let hash: string;
        let payload: Record<string, unknown>;
        try {
          payload = JSON.parse(row.payload) as Record<string, unknown>;
          hash = linkHash(row.prev_hash, { seq: row.seq, at: row.at, kind: row.kind, runId: row.run_id, payload: row.payload });
        } catch {
          return bad('payload is not valid JSON (the row was edited)');
        }
        if (hash !== row.hash) return bad('hash does not match the row (its contents were edited)');
        const problem = rowProblem(row, payload, runs, steps);
        if (problem) return bad(problem);
        seen.set(row.hash, row.seq);
        prevHash = row.hash;
        expectedSeq++;
      }
      const rows = expectedSeq - 1;

      const schema = schemaDifferences(this.db);
      if (schema.length > 0) {
        return { ok: false, firstBad: { seq: null, reason: `schema changed: ${schema.join('; ')}` } };
      }

      if (expectedHead !== undefined && expectedHead.toLowerCase() !== prevHash) {
        const at = seen.get(expectedHead.toLowerCase());
        if (at !== undefined) {
          return {
            ok: false,
            firstBad: {
              seq: at + 1,
              reason: `written after the expected head (row ${at}); the chain continues to row ${rows}: if those rows are later runs, verify against the newest head`,
            },
          };
        }
        if (rows === 0) {
          return { ok: false, firstBad: { seq: null, reason: `the chain is empty, not ending at the expected head ${expectedHead} (every row was removed)` } };
        }
        return {
          ok: false,
          firstBad: {
            seq: rows,
            reason: `the chain ends here with hash ${prevHash}, not at the expected head ${expectedHead} (rows were removed from the end, or the chain was rewritten)`,
          },
        };
      }
      return { ok: true, head: prevHash, rows };
    })();
  }

  // ---- internals -----------------------------------------------------------

  private write<T>(fn: () => T): T {
    return this.db.transaction(fn).immediate();
  }

  private nowIso(): string {
    return this.now().toISOString();
  }

  private append(kind: ChainKind, runId: string, payload: Record<string, unknown>, at = this.nowIso()): Appended {
    const last = this.q.last.get() as { seq: number; hash: string } | undefined;
    const seq = (last?.seq ?? 0) + 1;
    const prevHash = last?.hash ?? GENESIS_HASH;
    const text = canonicalJson(payload);
    const hash = linkHash(prevHash, { seq, at, kind, runId, payload: text });
    this.q.insert.run(seq, at, kind, runId, text, prevHash, hash);
    return { seq, at, hash };
  }

  private requireRunRow(runId: string): RunRow {
    const row = this.q.runById.get(runId) as RunRow | undefined;
    if (!row) throw new UnknownRunError(runId, this.path);
    return row;
  }

  private requireOpenRun(runId: string, doing: string): RunRow {
    const row = this.requireRunRow(runId);
    if (row.outcome !== 'running') throw new Error(`run ${runId} already ended (${row.outcome}); cannot ${doing}`);
    return row;
  }

  private requireStep(ref: StepRef): StepRecord {
    return mapStep(this.q.stepBySeq.get(ref.runId, ref.seq) as StepRow);
  }
}

const STATEMENTS = {
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
function prepare(db: Database.Database): Record<keyof typeof STATEMENTS, Database.Statement> {
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

/**
 * Whether a row, correctly hashed, is one this code could have written where it
 * stands. Catches a chain forged or patched without respecting the rules (and
 * bugs); it cannot catch a careful forger who rewrote the whole chain: only an
 * expected head kept elsewhere does that.
 */
function rowProblem(
  row: ChainRow,
  p: Record<string, unknown>,
  runs: Map<string, { ended: boolean }>,
  steps: Map<number, { runId: string; ended: boolean }>,
): string | undefined {
  if (!(CHAIN_KINDS as readonly string[]).includes(row.kind)) return `unknown kind ${JSON.stringify(row.kind)}`;
  if (Number.isNaN(Date.parse(row.at))) return `timestamp ${JSON.stringify(row.at)} is not a date`;
  const run = runs.get(row.run_id);
  if (row.kind === 'run.start') {
    if (run) return `run ${row.run_id} is started a second time`;
    runs.set(row.run_id, { ended: false });
    return undefined;
  }
  if (!run) return `${row.kind} for run ${row.run_id}, which was never started`;
  if (row.kind === 'run.resume') {
    run.ended = false;
    return undefined;
  }
  if (run.ended) return `${row.kind} for run ${row.run_id} after it ended`;
  switch (row.kind) {
    case 'run.end':
      if (!(RUN_OUTCOMES as readonly string[]).includes(p.outcome as string) || p.outcome === 'running') {
        return `run end with outcome ${JSON.stringify(p.outcome)}`;
      }
      run.ended = true;
      return undefined;
    case 'step.start':
      steps.set(row.seq, { runId: row.run_id, ended: false });
      return undefined;
    case 'step.end': {
      const step = steps.get(p.step as number);
      if (!step || step.runId !== row.run_id) return `step end for step ${String(p.step)}, which run ${row.run_id} never started`;
      if (step.ended) return `step ${String(p.step)} ends a second time`;
      if (!(STEP_STATUSES as readonly string[]).includes(p.status as string) || p.status === 'running') {
        return `step end with status ${JSON.stringify(p.status)}`;
      }
      step.ended = true;
      return undefined;
    }
    case 'event':
      if (p.step !== undefined && steps.get(p.step as number)?.runId !== row.run_id) {
        return `event for step ${String(p.step)}, which run ${row.run_id} never started`;
      }
      return undefined;
    default:
      return undefined;
  }
}

function latestAttempts(all: StepRecord[]): StepRecord[] {
  const byOrdinal = new Map<number, StepRecord>();
  for (const s of all) byOrdinal.set(s.ordinal, s); // in start order: the last one wins
  return [...byOrdinal.values()].sort((a, b) => a.ordinal - b.ordinal);
}

function isUnfinishedLatest(row: StepRow, _i: number, rows: StepRow[]): boolean {
  return row.status === 'running' && !rows.some((r) => r.ordinal === row.ordinal && r.seq > row.seq);
}

function mapRun(r: RunRow): RunRecord {
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

function mapStep(r: StepRow): StepRecord {
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

function mapEvent(r: EventRow): EventRecord {
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

function parseJson(text: string | null): unknown {
  return text === null ? null : JSON.parse(text);
}

/** r-YYYYMMDD-HHMMSS-xxxx, UTC, from an ISO timestamp: sorts by time, easy to type. */
export function newRunId(atIso: string): string {
  const d = atIso.replace(/[-:]/g, '');
  return `r-${d.slice(0, 8)}-${d.slice(9, 15)}-${randomBytes(2).toString('hex')}`;
}

export function isRunId(text: string): boolean {
  return RUN_ID_PATTERN.test(text);
}

function idFields(ids: RunIdsPatch): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of ['clusterIdBefore', 'clusterIdAfter'] as const) {
    const v = ids[key];
    if (v !== undefined) out[key] = normalizeHexId(v, key);
  }
  for (const key of ['memberIdsBefore', 'memberIdsAfter'] as const) {
    const v = ids[key];
    if (v !== undefined) out[key] = v.map((id) => normalizeHexId(id, key));
  }
  return out;
}

/** Lowercase hex without leading zeros, as Lifeboat writes IDs in JSON. */
function normalizeHexId(v: HexId, what: string): string {
  const text = typeof v === 'bigint' ? v.toString(16) : v.trim().toLowerCase().replace(/^0x/, '');
  if (!/^[0-9a-f]{1,16}$/.test(text)) {
    throw new TypeError(`${what}: expected a hex ID of up to 16 digits (e.g. 8e9e05c52164694d), got ${JSON.stringify(String(v))}`);
  }
  return BigInt(`0x${text}`).toString(16);
}

function requireText(v: unknown, what: string): void {
  if (typeof v !== 'string' || v.trim() === '') throw new TypeError(`${what} is required`);
}

function errorText(e: string | Error): string {
  return typeof e === 'string' ? e : e.message;
}

function currentUser(): { user: string; host: string } {
  let user: string;
  try {
    user = os.userInfo().username;
  } catch {
    // No passwd entry for this uid (common in containers).
    user = process.env.USER ?? process.env.LOGNAME ?? `uid ${process.getuid?.() ?? '?'}`;
  }
  return { user, host: os.hostname() };
}
