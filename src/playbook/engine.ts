// Running a validated playbook: steps in order, for-each expanded when the run
// reaches it, each step's parameters resolved, its start recorded before it
// runs and its end (outputs or error) after, every prompt and answer recorded,
// and the run's outcome closing the record with the chain's head hash. The
// recording is runRecorder.ts's, which a drill's steps go through too.
//
// The run stops at the first step that fails and returns its outcome: succeeded;
// refused (a SafetyCheckError, a refusal, an unconfirmed step); failed;
// interrupted (src/cli maps it to an exit code). A stopped run can be resumed
// (resume.ts): completed steps are skipped with their recorded outputs, the rest
// run again.
import type { AuditLog, FinalOutcome, StepRecord } from '../audit/index.js';
import { RefusedError } from '../common/errors.js';
import { RunInterruptedError } from './errors.js';
import { interpolate, UnresolvedReferenceError } from './interpolate.js';
import { resolveParams, RunScope, stepTitle } from './params.js';
import { normalizeOutputs, recordableConnection, RunRecorder, StepFailedError, type EngineKnobs } from './runRecorder.js';
import type { ExecNode, RunView, StepUi } from './runView.js';
import type { ForEachNode, PlanNode, Playbook, StepNode } from './schema.js';
import { secretValues } from './secrets.js';
import { SafetyCheckError, type StepContext } from './stepTypes.js';
import type { StepLibrary } from './validate.js';
import type { BoundVariables } from './variables.js';

export { recordableConnection, StepFailedError, type EngineKnobs } from './runRecorder.js';

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

class PlaybookRun {
  private ordinal = 0;
  private readonly ran: string[] = [];
  private readonly skipped: string[] = [];
  private readonly signal: AbortSignal;
  private readonly rec: RunRecorder;

  constructor(private readonly o: RunPlaybookOptions) {
    this.signal = o.signal ?? new AbortController().signal;
    this.rec = new RunRecorder({
      audit: o.audit,
      connection: o.connection,
      secrets: secretValues(o.playbook, o.variables.values),
      yes: o.yes,
      interactive: o.view.interactive,
      signal: this.signal,
      ...(o.knobs ? { knobs: o.knobs } : {}),
    });
  }

  private get runId(): string {
    return this.rec.runId;
  }

  async run(): Promise<RunResult> {
    const { audit, playbook: pb } = this.o;
    if (this.o.resume) this.rec.resumeRun(this.o.resume.runId, this.o.resume.reason, this.o.runDir);
    else this.rec.startRun({ playbook: pb.name, playbookSha256: pb.sha256, reason: this.o.reason, variables: this.o.variables.values }, this.o.runDir);
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
          runDir: this.rec.runDir,
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
      const e = this.rec.scrubError(err instanceof Error ? err : new Error(String(err)));
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
    const head = this.rec.finishRun(outcome, error);
    return {
      runId: this.runId,
      outcome,
      head,
      ...(error ? { error } : {}),
      ...(failedStep ? { failedStep } : {}),
      ran: this.ran,
      skipped: this.skipped,
      runDir: this.rec.runDir,
    };
  }

  private nodes(nodes: PlanNode[], scope: RunScope, prefix: string): ExecNode[] {
    return nodes.map((n) => (n.kind === 'step' ? this.stepNode(n, scope, `${prefix}${n.id}`) : this.forEachNode(n, scope, `${prefix}${n.id}`)));
  }

  private forEachNode(n: ForEachNode, scope: RunScope, stableId: string): ExecNode {
    return {
      kind: 'for-each',
      id: stableId,
      title: this.rec.showText(stepTitle(n, scope) === n.id ? `for each ${n.as}` : stepTitle(n, scope)),
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
    return { title: this.rec.showText(title), nodes: items.flatMap((item, i) => this.nodes(n.steps, scope.child(n.as, item), `${stableId}[${i + 1}].`)) };
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
    const ordinal = ++this.ordinal;
    const title = stepTitle(n, scope);
    ui.setTitle(this.rec.showText(title));
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
    const step = {
      ordinal,
      stepId: stableId,
      title,
      type: n.type,
      inputs: resolved.ok ? resolved.params : Object.fromEntries(Object.entries(n.with).map(([k, p]) => [k, p.value])),
    };
    this.ran.push(stableId);
    if (!resolved.ok)
      throw this.rec.failUnrun(
        step,
        new Error(`${this.o.playbook.file}:${resolved.origin.line}:${resolved.origin.col}: ${resolved.origin.field}: ${resolved.error}`),
      );
    const { outputs } = await this.rec.step({ ...step, run: (ctx) => def.run(resolved.params, ctx) }, ui);
    scope.setOutputs(n.id, outputs);
  }
}
