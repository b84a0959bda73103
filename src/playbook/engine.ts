// Running a validated playbook: steps in order, for-each expanded when the run
// reaches it, each step's parameters resolved, its start recorded before it
// runs and its end (outputs or error) after, every prompt and answer recorded,
// and the run's outcome closing the record with the chain's head hash.
//
// The run stops at the first step that fails and returns its outcome: succeeded;
// refused (a SafetyCheckError, a refusal, an unconfirmed step); failed;
// interrupted (src/cli maps it to an exit code). A stopped run can be resumed
// (resume.ts): completed steps are skipped with their recorded outputs, the rest
// run again.
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { AuditLog, FinalOutcome, RunIdsPatch, StepRecord, StepRef } from '../audit/index.js';
import { canonicalJson } from '../audit/index.js';
import { SECRET_MARK, SecretScrubber } from '../audit/secretDigest.js';
import { RefusedError } from '../common/errors.js';
import { crashAt } from '../common/failpoint.js';
import { NotConfirmedError, RunInterruptedError } from './errors.js';
import { interpolate, UnresolvedReferenceError } from './interpolate.js';
import { resolveParams, RunScope, stepTitle } from './params.js';
import type { ExecNode, RunView, StepUi } from './runView.js';
import type { ForEachNode, PlanNode, Playbook, StepNode } from './schema.js';
import { secretValues } from './secrets.js';
import { SafetyCheckError, type StepContext } from './stepTypes.js';
import type { StepLibrary } from './validate.js';
import type { BoundVariables } from './variables.js';

const ID_FIELDS = ['clusterIdBefore', 'memberIdsBefore', 'clusterIdAfter', 'memberIdsAfter'] as const;

/** Test knobs, passed at construction by in-process engine tests (a separate process uses LIFEBOAT_FAULT: common/failpoint.ts). */

/**
 * The connection as the audit log keeps it: the user's name, never the password
 * (a resumed run is given the credentials again).
 */
export function recordableConnection(c: StepContext['connection']): Record<string, unknown> {
  const { credentials, ...rest } = c;
  return { ...rest, ...(credentials ? { user: credentials.user } : {}) };
}

export interface EngineKnobs {
  /**
   * Called at each crash point (`after-step:<stable step id>`: the step's work
   * returned, its end not yet recorded) instead of failpoint.ts's crashAt; a
   * test throws (or records) there to stand in for a kill.
   */
  crashAt?: (point: string) => void;
}

/** Where a resumed run picks up: the latest attempt of each ordinal. */
export interface ResumeState {
  runId: string;
  /** latest attempt of each ordinal */
  latest: Map<number, StepRecord>;
  /** why the operator resumes, if given */
  reason?: string;
}

export interface RunPlaybookOptions {
  playbook: Playbook;
  library: StepLibrary;
  variables: BoundVariables;
  audit: AuditLog;
  view: RunView;
  /** why the run is made (required for a new run; resume records its own) */
  reason: string;
  /** the reason was asked for on the terminal: record the question */
  reasonPrompt?: string;
  /** when the reason was given (ISO 8601) */
  reasonAt?: string;
  /** continue this recorded run instead of starting one */
  resume?: ResumeState;
  /** answer every confirmation yes (never overrides a SafetyCheckError) */
  yes: boolean;
  connection: StepContext['connection'];
  /** the run's --endpoints: a step parameter named endpoints that the playbook leaves out gets it */
  endpoints?: string;
  /** where the run keeps files; default: runs/<run id> next to the audit database */
  runDir?: string;
  /** test knobs (in-process engine tests only) */
  knobs?: EngineKnobs;
  signal?: AbortSignal;
  /** events to record at the start (e.g. test step types in use) */
  startEvents?: Array<{ kind: string; message: string; data?: Record<string, unknown>; at?: string }>;
}

export interface RunResult {
  runId: string;
  outcome: FinalOutcome;
  /** the audit chain's head hash after the run's end was recorded */
  head: string;
  /** why it did not succeed: one line naming the step */
  error?: Error;
  /** the stable id of the step that failed or was refused */
  failedStep?: string;
  /** stable ids of the steps run (in order), and of those skipped as done earlier */
  ran: string[];
  skipped: string[];
  runDir: string;
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

/** Runs (or resumes) a playbook to its end; never throws for a step's failure: see the result. */
export async function runPlaybook(opts: RunPlaybookOptions): Promise<RunResult> {
  return new PlaybookRun(opts).run();
}

function isRefusal(err: unknown): boolean {
  return err instanceof SafetyCheckError || err instanceof RefusedError || (err as Error)?.name === 'SafetyCheckError';
}

function isPromptAbort(err: unknown): boolean {
  const name = (err as Error)?.name;
  return name === 'ExitPromptError' || name === 'AbortPromptError';
}

/** Hex IDs (or lists of them) equal, however zero-padded or cased. */
function sameIds(a: unknown, b: unknown): boolean {
  const norm = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(norm) : typeof v === 'string' && /^[0-9a-fA-F]{1,16}$/.test(v) ? BigInt(`0x${v}`).toString(16) : v;
  return JSON.stringify(norm(a)) === JSON.stringify(norm(b));
}

/** Outputs as the audit log stores them (bigints → hex, no undefined), so a resumed run sees exactly what the first one did. */
function normalizeOutputs(outputs: unknown): Record<string, unknown> {
  if (outputs === null || outputs === undefined) return {};
  const v = JSON.parse(canonicalJson(outputs)) as unknown;
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : { value: v };
}

class PlaybookRun {
  private ordinal = 0;
  private runId = '';
  private runDir = '';
  private readonly ran: string[] = [];
  private readonly skipped: string[] = [];
  private readonly signal: AbortSignal;
  /** the connection the steps get: its password, once known, is a secret too */
  private readonly connection: StepContext['connection'];
  /** what the terminal shows in place of a secret (the audit log writes its digest instead) */
  private readonly shown = new SecretScrubber(() => SECRET_MARK);

  constructor(private readonly o: RunPlaybookOptions) {
    this.signal = o.signal ?? new AbortController().signal;
    for (const v of secretValues(o.playbook, o.variables.values)) this.addSecret(v);
    this.connection = this.guardPassword(o.connection);
  }

  /** From now on `value` is written to the audit log as its digest and shown as <redacted>. */
  private addSecret(value: string): void {
    this.o.audit.addSecret(value);
    this.shown.add(value);
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

  /** `e` with secrets replaced in its message, for the terminal and the error the run returns. */
  private scrubError<E extends Error>(e: E): E {
    const text = this.shown.text(e.message);
    if (text !== e.message) e.message = text;
    return e;
  }

  async run(): Promise<RunResult> {
    const { audit, playbook: pb } = this.o;
    if (this.o.resume) {
      this.runId = this.o.resume.runId;
      audit.resumeRun(this.runId, this.o.resume.reason !== undefined ? { reason: this.o.resume.reason } : {});
    } else {
      this.runId = audit.startRun({ playbook: pb.name, playbookSha256: pb.sha256, reason: this.o.reason, variables: this.o.variables.values }).id;
    }
    this.runDir = this.o.runDir ?? path.join(path.dirname(audit.path), 'runs', this.runId);
    mkdirSync(this.runDir, { recursive: true });
    if (!this.o.resume) {
      audit.event(this.runId, {
        kind: 'playbook',
        message: `playbook ${pb.name} from ${pb.absPath}`,
        data: {
          file: pb.absPath,
          sha256: pb.sha256,
          variableSources: this.o.variables.sources,
          endpoints: this.o.endpoints ?? null,
          connection: recordableConnection(this.o.connection),
          runDir: this.runDir,
          interactive: this.o.view.interactive,
          yes: this.o.yes,
        },
      });
      // Everything asked before the run started, in the order it was answered, each at its own time.
      const asked: Array<{ kind: string; message: string; data?: Record<string, unknown>; at?: string }> = [
        ...(this.o.startEvents ?? []),
        ...this.o.variables.prompts.map((p) => ({ kind: 'prompt', message: p.question, data: { variable: p.variable, answer: p.answer }, at: p.at })),
        ...(this.o.reasonPrompt
          ? [
              {
                kind: 'prompt',
                message: this.o.reasonPrompt,
                data: { field: 'reason', answer: this.o.reason },
                ...(this.o.reasonAt ? { at: this.o.reasonAt } : {}),
              },
            ]
          : []),
      ];
      const when = (e: { at?: string }) => (e.at === undefined ? -Infinity : Date.parse(e.at));
      for (const e of asked.map((e, i) => ({ e, i })).sort((a, b) => when(a.e) - when(b.e) || a.i - b.i)) audit.event(this.runId, e.e);
    } else {
      audit.event(this.runId, {
        kind: 'resume',
        message: `resumed by pid ${process.pid}`,
        data: {
          interactive: this.o.view.interactive,
          yes: this.o.yes,
          endpoints: this.o.endpoints ?? null,
          connection: recordableConnection(this.o.connection),
        },
      });
    }
    if (this.o.resume) for (const e of this.o.startEvents ?? []) audit.event(this.runId, e);

    this.o.view.log(`${this.o.resume ? 'Resuming' : 'Running'} playbook ${pb.name} as run ${this.runId}`);
    let outcome: FinalOutcome = 'succeeded';
    let error: Error | undefined;
    let failedStep: string | undefined;
    try {
      await this.o.view.run(this.nodes(pb.steps, new RunScope(this.o.variables.values), ''));
    } catch (err) {
      const e = this.scrubError(err instanceof Error ? err : new Error(String(err)));
      failedStep = e instanceof StepFailedError ? e.stepId : undefined;
      const cause = e instanceof StepFailedError ? e.error : e;
      if (this.signal.aborted || isPromptAbort(cause) || cause instanceof RunInterruptedError) {
        outcome = 'interrupted';
        error = new RunInterruptedError(`interrupted${failedStep ? ` at step ${failedStep}` : ''}`);
      } else {
        outcome = isRefusal(cause) ? 'refused' : 'failed';
        error = e;
      }
    }
    const head = audit.finishRun(this.runId, { outcome, ...(error ? { error } : {}) });
    return {
      runId: this.runId,
      outcome,
      head,
      ...(error ? { error } : {}),
      ...(failedStep ? { failedStep } : {}),
      ran: this.ran,
      skipped: this.skipped,
      runDir: this.runDir,
    };
  }

  private nodes(nodes: PlanNode[], scope: RunScope, prefix: string): ExecNode[] {
    return nodes.map((n) => (n.kind === 'step' ? this.stepNode(n, scope, `${prefix}${n.id}`) : this.forEachNode(n, scope, `${prefix}${n.id}`)));
  }

  private forEachNode(n: ForEachNode, scope: RunScope, stableId: string): ExecNode {
    return {
      kind: 'for-each',
      id: stableId,
      title: this.shown.text(stepTitle(n, scope) === n.id ? `for each ${n.as}` : stepTitle(n, scope)),
      // A Promise executor turns a throw into a rejection, as an async function would.
      expand: () => new Promise((resolve) => resolve(this.expandForEach(n, scope, stableId))),
    };
  }

  private expandForEach(n: ForEachNode, scope: RunScope, stableId: string): { title: string; nodes: ExecNode[] } {
    let items: unknown;
    try {
      items = interpolate(n.forEach.value, scope.resolve);
    } catch (err) {
      if (!(err instanceof UnresolvedReferenceError)) throw err;
      throw new StepFailedError(stableId, new Error(`${n.forEach.origin.field}: ${err.message}`), '');
    }
    if (!Array.isArray(items))
      throw new StepFailedError(stableId, new Error(`${n.forEach.origin.field}: for-each needs a list, got ${JSON.stringify(items)}`), '');
    const title = `${stepTitle(n, scope) === n.id ? `for each ${n.as}` : stepTitle(n, scope)} (${items.length} item${items.length === 1 ? '' : 's'})`;
    return { title: this.shown.text(title), nodes: items.flatMap((item, i) => this.nodes(n.steps, scope.child(n.as, item), `${stableId}[${i + 1}].`)) };
  }

  private stepNode(n: StepNode, scope: RunScope, stableId: string): ExecNode {
    return {
      kind: 'step',
      id: stableId,
      title: n.name ?? n.type,
      // Synchronous up to the step's own run(): the title and a skip are known before the first await.
      run: (ui) => this.runStep(n, scope, stableId, ui),
    };
  }

  /** Whether the run being resumed attempted a step of one of `types` after position `ordinal`. */
  private attemptedSince(ordinal: number, types: readonly string[]): boolean {
    return [...(this.o.resume?.latest.values() ?? [])].some((s) => s.ordinal > ordinal && types.includes(s.type));
  }

  private async runStep(n: StepNode, scope: RunScope, stableId: string, ui: StepUi): Promise<void> {
    const { audit } = this.o;
    const ordinal = ++this.ordinal;
    const title = stepTitle(n, scope);
    ui.setTitle(this.shown.text(title));
    if (this.signal.aborted) throw new StepFailedError(stableId, new RunInterruptedError(), title);

    const prior = this.o.resume?.latest.get(ordinal);
    if (prior && prior.stepId !== stableId) {
      throw new StepFailedError(
        stableId,
        new RefusedError(
          `run ${this.runId} recorded step ${prior.stepId} at position ${ordinal}, the playbook now has ${stableId} there; the run cannot be resumed, start a new one`,
        ),
        title,
      );
    }
    const def = this.o.library[n.type];
    const recheck = prior?.status === 'succeeded' && def?.recheckOnResume !== undefined && !this.attemptedSince(ordinal, def.recheckOnResume.until);
    if (recheck) ui.progress(`checking again: the answer of attempt ${prior.attempt} may be stale`);
    else if (prior && (prior.status === 'succeeded' || prior.status === 'skipped')) {
      scope.setOutputs(n.id, normalizeOutputs(prior.outputs));
      this.skipped.push(stableId);
      ui.reuseRecorded(`done in attempt ${prior.attempt}`);
      return;
    }

    const resolved = def
      ? resolveParams(n, def, scope, this.o.endpoints)
      : ({ ok: false, origin: n.typeOrigin, error: `unknown step type ${n.type}` } as const);
    const ref = audit.startStep(this.runId, {
      ordinal,
      stepId: stableId,
      name: title,
      type: n.type,
      inputs: resolved.ok ? resolved.params : Object.fromEntries(Object.entries(n.with).map(([k, p]) => [k, p.value])),
    });
    this.ran.push(stableId);
    if (!resolved.ok) {
      const e = new Error(`${this.o.playbook.file}:${resolved.origin.line}:${resolved.origin.col}: ${resolved.origin.field}: ${resolved.error}`);
      audit.finishStep(ref, { status: 'failed', error: e });
      throw new StepFailedError(stableId, this.scrubError(e), this.shown.text(title));
    }

    let outputs: Record<string, unknown>;
    try {
      const raw = await def.run(resolved.params, this.context(stableId, ref, ui));
      outputs = normalizeOutputs(raw);
    } catch (err) {
      const e = err instanceof Error ? err : new Error(String(err));
      audit.finishStep(ref, { status: 'failed', error: e });
      throw new StepFailedError(stableId, this.scrubError(e), this.shown.text(title));
    }
    // The crash point: die (LIFEBOAT_FAULT=after-step:<id>) as if killed between the step's effect and its record.
    (this.o.knobs?.crashAt ?? crashAt)(`after-step:${stableId}`);
    audit.finishStep(ref, { status: 'succeeded', outputs });
    scope.setOutputs(n.id, outputs);
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
        if (!this.o.view.interactive) {
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
          answer = await ui.ask(this.shown.text(question), this.signal);
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
      signal: this.signal,
      connection: this.connection,
    };
  }
}
