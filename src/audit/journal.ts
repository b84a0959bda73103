// The audit journal: AuditLog opens the log and appends every run, step, prompt,
// note and override to its SQLite hash chain, each durable when the call returns;
// its reads are AuditReader's (queries.ts). The playbook engine writes it.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type Database from 'better-sqlite3';
import { canonicalJson, GENESIS_HASH, linkHash } from './hashChain.js';
import { AuditReader } from './queries.js';
import { mapEvent, type EventRow, type RunRow, type StepRow } from './rows.js';
import { openAuditDatabase, schemaDifferences, type OpenAuditOptions } from './schema.js';
import { loadOrCreateSecretKey, secretDigest, SecretScrubber } from './secretDigest.js';
import {
  RUN_OUTCOMES,
  STEP_STATUSES,
  type ChainKind,
  type EventRecord,
  type FinalOutcome,
  type FinalStepStatus,
  type RunRecord,
  type StepRecord,
  type StepRef,
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
  /** the run's variables, recorded as given, but for the values given to addSecret */
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
  /** when it happened (ISO 8601), if not now: a question answered before the run was recorded */
  at?: string;
}

interface Appended {
  seq: number;
  at: string;
  hash: string;
}

const RUN_ID_PATTERN = /^r-\d{8}-\d{6}-[0-9a-f]{4}$/;

/**
 * Each write is one IMMEDIATE transaction that checks the run's state, then
 * appends one chain row; with synchronous=FULL it is on disk when the call
 * returns. Nothing is ever updated in place: a step finishing is a new row, and
 * the runs/steps/events views fold the rows together.
 */
export class AuditLog extends AuditReader {
  private readonly now: () => Date;
  private readonly who: { user: string; host: string };
  private secretKey: Buffer | undefined;
  /** every record passes through it before it is written: see `secrets` */
  private readonly scrubber = new SecretScrubber((v) => this.secretDigest(v));

  private constructor(db: Database.Database, path: string, opts: AuditLogOptions) {
    super(db, path);
    this.now = opts.now ?? (() => new Date());
    this.who = opts.who ?? currentUser();
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

  // ---- secrets -------------------------------------------------------------

  /**
   * Values never to be written: from now on each is recorded as its digest
   * (secretDigest.ts) wherever it appears in a record — variables, step inputs
   * and outputs, prompts' answers, messages, errors.
   */
  addSecret(value: string): void {
    this.scrubber.add(value);
  }

  /** How this log records `value` as a secret: `<redacted> hmac:…`, keyed with the log's key file. */
  secretDigest(value: string): string {
    this.secretKey ??= loadOrCreateSecretKey(this.path);
    return secretDigest(this.secretKey, value);
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
          throw new Error(`run ${runId} cannot succeed with step ${open[0].ordinal} (${open[0].step_id}) still running; finish the step first`);
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
      const running = (this.q.stepsOfRun.all(runId) as StepRow[]).find((r) => r.ordinal === step.ordinal && r.status === 'running' && r.seq > sessionStart);
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
    if (e.at !== undefined && Number.isNaN(Date.parse(e.at))) throw new TypeError(`event time ${JSON.stringify(e.at)} is not a date`);
    const seq = this.write(() => {
      this.requireOpenRun(runId, 'add an event');
      if (e.step) {
        if (e.step.runId !== runId || this.q.stepBySeq.get(runId, e.step.seq) === undefined) {
          throw new Error(`run ${runId} has no step recorded at seq ${e.step.seq}`);
        }
      }
      return this.append(
        'event',
        runId,
        {
          kind: e.kind,
          message: e.message,
          ...(e.data !== undefined ? { data: e.data } : {}),
          ...(e.step ? { step: e.step.seq } : {}),
        },
        e.at ?? this.nowIso(),
      ).seq;
    });
    return mapEvent(this.q.eventBySeq.get(seq) as EventRow);
  }

  /** Records a question put to the operator and the answer given (event kind `prompt`). */
  recordPrompt(runId: string, question: string, answer: unknown, opts: { step?: StepRef; data?: Record<string, unknown>; at?: string } = {}): EventRecord {
    return this.event(runId, {
      kind: 'prompt',
      message: question,
      data: { ...opts.data, answer },
      step: opts.step,
      ...(opts.at !== undefined ? { at: opts.at } : {}),
    });
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
    const text = canonicalJson(this.scrubber.value(payload));
    const hash = linkHash(prevHash, { seq, at, kind, runId, payload: text });
    this.q.insert.run(seq, at, kind, runId, text, prevHash, hash);
    return { seq, at, hash };
  }

  private requireOpenRun(runId: string, doing: string): RunRow {
    const row = this.requireRunRow(runId);
    if (row.outcome !== 'running') throw new Error(`run ${runId} already ended (${row.outcome}); cannot ${doing}`);
    return row;
  }
}

function isUnfinishedLatest(row: StepRow, _i: number, rows: StepRow[]): boolean {
  return row.status === 'running' && !rows.some((r) => r.ordinal === row.ordinal && r.seq > row.seq);
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
