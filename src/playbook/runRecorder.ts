// The one way a run and its steps are recorded in the audit log, for a playbook
// run (engine.ts) and a drill (src/drill) alike: the run's start (or resume) and
// end; each step's start with its inputs before it runs and its end with its
// outputs (as the audit log stores them) or its error after, with the crash point
// between the step's work and its record; the events a step records, whose
// cluster/member IDs are set on the run; its prompts and their answers. A secret
// (a secret variable, the --user password) is written to the log as its digest
// and shown as <redacted>.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { AuditLog, FinalOutcome, RunIdsPatch, StartRunInput, StepRef } from '../audit/index.js';
import { canonicalJson } from '../audit/index.js';
import { SECRET_MARK, SecretScrubber } from '../audit/secretDigest.js';
import { crashAt } from '../common/failpoint.js';
import { monotonicMs } from '../common/clock.js';
import { NotConfirmedError } from './errors.js';
import type { StepUi } from './runView.js';
import type { StepContext } from './stepTypes.js';

const ID_FIELDS = ['clusterIdBefore', 'memberIdsBefore', 'clusterIdAfter', 'memberIdsAfter'] as const;

export interface EngineKnobs {
  /**
   * Called at each crash point (`after-step:<stable step id>`: the step's work
   * returned, its end not yet recorded) instead of failpoint.ts's crashAt; a
   * test throws (or records) there to stand in for a kill.
   */
  crashAt?: (point: string) => void;
}

/**
 * The connection as the audit log keeps it: the user's name, never the password
 * (a resumed run is given the credentials again).
 */
export function recordableConnection(c: StepContext['connection']): Record<string, unknown> {
  const { credentials, ...rest } = c;
  return { ...rest, ...(credentials ? { user: credentials.user } : {}) };
}

/** A step's failure, named: `step readd[2].add-learner (Add m2 as a learner): …`. */
export class StepFailedError extends Error {
  constructor(
    readonly stepId: string,
    /** what the step threw */
    readonly error: Error,
    title: string,
  ) {
    super(`step ${stepId}${title && title !== stepId ? ` (${title})` : ''}: ${error.message}`);
    this.name = 'StepFailedError';
  }
}

/** Hex IDs (or lists of them) equal, however zero-padded or cased. */
function sameIds(a: unknown, b: unknown): boolean {
  const norm = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(norm) : typeof v === 'string' && /^[0-9a-fA-F]{1,16}$/.test(v) ? BigInt(`0x${v}`).toString(16) : v;
  return JSON.stringify(norm(a)) === JSON.stringify(norm(b));
}

/** Outputs as the audit log stores them (bigints → hex, no undefined), so a resumed run sees exactly what the first one did. */
export function normalizeOutputs(outputs: unknown): Record<string, unknown> {
  if (outputs === null || outputs === undefined) return {};
  const v = JSON.parse(canonicalJson(outputs)) as unknown;
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
}

export interface RunRecorderOptions {
  audit: AuditLog;
  /** the connection the steps get: its password, once known, is a secret of the run */
  connection: StepContext['connection'];
  /** values written to the log as their digest (the run's secret variables) */
  secrets?: readonly string[];
  /** answer every confirmation yes */
  yes: boolean;
  /** prompts can be asked (a terminal) */
  interactive: boolean;
  signal: AbortSignal;
  knobs?: EngineKnobs;
}

/** One step as the recorder runs it. */
export interface RecordedStep {
  /** the step's position in the run, from 1 */
  ordinal: number;
  /** the stable step id (crash points and resume use it) */
  stepId: string;
  title: string;
  type: string;
  /** recorded as the step's inputs */
  inputs: Record<string, unknown>;
  run(ctx: StepContext): Promise<unknown>;
}

export class RunRecorder {
  runId = '';
  runDir = '';
  readonly connection: StepContext['connection'];
  /** what the terminal shows in place of a secret (the audit log writes its digest instead) */
  private readonly shown = new SecretScrubber(() => SECRET_MARK);

  constructor(private readonly o: RunRecorderOptions) {
    for (const v of o.secrets ?? []) this.addSecret(v);
    this.connection = this.guardPassword(o.connection);
  }

  get audit(): AuditLog {
    return this.o.audit;
  }

  /** Records a new run; its files go to `runDir` (default: runs/<run id> next to the audit database). */
  startRun(input: StartRunInput, runDir?: string): string {
    this.runId = this.o.audit.startRun(input).id;
    this.useRunDir(runDir);
    return this.runId;
  }

  /** Records that a stopped run goes on. */
  resumeRun(runId: string, reason: string | undefined, runDir?: string): void {
    this.runId = runId;
    this.o.audit.resumeRun(runId, reason !== undefined ? { reason } : {});
    this.useRunDir(runDir);
  }

  private useRunDir(runDir: string | undefined): void {
    this.runDir = runDir ?? path.join(path.dirname(this.o.audit.path), 'runs', this.runId);
    mkdirSync(this.runDir, { recursive: true });
  }

  /** A timeline event of the run (not of a step). */
  event(e: { kind: string; message: string; data?: Record<string, unknown>; at?: string }): void {
    this.o.audit.event(this.runId, e);
  }

  /** Records the run's end; returns the audit chain's head hash. */
  finishRun(outcome: FinalOutcome, error?: Error | string, ids: Omit<RunIdsPatch, 'clusterIdBefore' | 'memberIdsBefore'> = {}): string {
    return this.o.audit.finishRun(this.runId, { outcome, ...(error !== undefined ? { error } : {}), ...ids });
  }

  /** From now on `value` is written to the audit log as its digest and shown as <redacted>. */
  addSecret(value: string): void {
    this.o.audit.addSecret(value);
    this.shown.add(value);
  }

  /** `text` with the run's secrets replaced, for the terminal. */
  showText(text: string): string {
    return this.shown.text(text);
  }

  /** `e` with secrets replaced in its message, for the terminal and the error the run returns. */
  scrubError<E extends Error>(e: E): E {
    const text = this.shown.text(e.message);
    if (text !== e.message) e.message = text;
    return e;
  }

  /** Records a step that cannot run (e.g. its parameters do not resolve) as started and failed. */
  failUnrun(step: Omit<RecordedStep, 'run'>, e: Error): StepFailedError {
    const ref = this.startStep(step);
    this.o.audit.finishStep(ref, { status: 'failed', error: e });
    return new StepFailedError(step.stepId, this.scrubError(e), this.shown.text(step.title));
  }

  /**
   * Runs one step, its start recorded before and its end after: returns its
   * outputs as recorded and how long its work took; throws a StepFailedError
   * (the failure recorded) when it fails.
   */
  async step(step: RecordedStep, ui: StepUi): Promise<{ outputs: Record<string, unknown>; ms: number }> {
    const ref = this.startStep(step);
    const t0 = monotonicMs();
    let outputs: Record<string, unknown>;
    try {
      outputs = normalizeOutputs(await step.run(this.context(step.stepId, ref, ui)));
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      this.o.audit.finishStep(ref, { status: 'failed', error: e });
      throw new StepFailedError(step.stepId, this.scrubError(e), this.shown.text(step.title));
    }
    const ms = monotonicMs() - t0;
    // The crash point: die (LIFEBOAT_FAULT=after-step:<id>) as if killed between the step's effect and its record.
    (this.o.knobs?.crashAt ?? crashAt)(`after-step:${step.stepId}`);
    this.o.audit.finishStep(ref, { status: 'succeeded', outputs });
    return { outputs, ms };
  }

  private startStep(step: Omit<RecordedStep, 'run'>): StepRef {
    return this.o.audit.startStep(this.runId, { ordinal: step.ordinal, stepId: step.stepId, name: step.title, type: step.type, inputs: step.inputs });
  }

  /** The --user password is a secret of the run like a secret variable, also when it is asked for only when first needed. */
  private guardPassword(c: StepContext['connection']): StepContext['connection'] {
    const creds = c.credentials;
    if (!creds) return c;
    if (typeof creds.password === 'string') {
      this.addSecret(creds.password);
      return c;
    }
    const ask = creds.password;
    const password = async () => {
      const p = await ask();
      this.addSecret(p);
      return p;
    };
    return { ...c, credentials: { user: creds.user, password } };
  }

  /**
   * An event whose data carries clusterIdBefore, memberIdsBefore, clusterIdAfter or
   * memberIdsAfter (hex IDs) also sets them on the run's record. Every membership
   * step reports both sides of its change: the run keeps the first "before" (the
   * cluster as the run found it, kept across a resume) and the latest "after".
   */
  private recordIds(data: Record<string, unknown> | undefined, ui: StepUi): void {
    if (!data) return;
    const run = this.o.audit.run(this.runId);
    // A "before" already recorded stays; an "after" equal to the recorded one is not written again.
    const skip = (k: (typeof ID_FIELDS)[number]) => run?.[k] !== null && run?.[k] !== undefined && (k.endsWith('Before') || sameIds(run[k], data[k]));
    const patch: RunIdsPatch = Object.fromEntries(ID_FIELDS.filter((k) => data[k] !== undefined && !skip(k)).map((k) => [k, data[k]]));
    if (Object.keys(patch).length === 0) return;
    try {
      this.o.audit.updateRun(this.runId, patch);
    } catch (err) {
      ui.event('warning', `cluster/member IDs not recorded on the run: ${(err as Error).message}`);
    }
  }

  private context(stableId: string, ref: StepRef, ui: StepUi): StepContext {
    const { audit } = this.o;
    return {
      progress: (text) => ui.progress(this.shown.text(text)),
      event: (kind, message, data) => {
        audit.event(this.runId, { kind, message, ...(data !== undefined ? { data } : {}), step: ref });
        ui.event(kind, this.shown.text(message));
        this.recordIds(data, ui);
      },
      confirm: async (question) => {
        if (this.o.yes) {
          audit.recordPrompt(this.runId, question, true, { step: ref, data: { answeredBy: '--yes' } });
          ui.event('confirmed', this.shown.text(`${question} (--yes)`));
          return true;
        }
        if (!this.o.interactive) {
          audit.recordPrompt(this.runId, question, null, { step: ref, data: { answeredBy: 'nobody: no terminal and no --yes' } });
          throw new NotConfirmedError(
            `needs confirmation ("${question}") and there is no terminal to ask on; resume with 'lifeboat playbook resume ${this.runId} --yes' to confirm`,
            stableId,
          );
        }
        let answer: boolean;
        // The operator's time to answer is recorded with the answer: the step's own time is its duration less this.
        const asked = Date.now();
        try {
          answer = await ui.ask(this.shown.text(question), this.o.signal);
        } catch (err) {
          audit.recordPrompt(this.runId, question, null, {
            step: ref,
            data: { answeredBy: 'nobody: the prompt was interrupted', waitedMs: Date.now() - asked },
          });
          throw err;
        }
        audit.recordPrompt(this.runId, question, answer, { step: ref, data: { waitedMs: Date.now() - asked } });
        ui.event('answered', this.shown.text(`${question} ${answer ? 'yes' : 'no'}`));
        return answer;
      },
      runDir: this.runDir,
      signal: this.o.signal,
      connection: this.connection,
    };
  }
}
