// One run as a report reads it (`lifeboat audit report`): the run, its sessions
// (the first and each resume), every step attempt placed on its session's time
// line, the prompts and answers, other events, the recover plan it showed, and
// the chain's verification — secrets masked (redact.ts). Read-only; the HTML and
// Markdown live in src/cli/output.
import { InputError } from '../common/errors.js';
import { openAuditLogForReport } from './open.js';
import { UnknownRunError, type AuditReader } from './queries.js';
import { Redactor } from './redact.js';
import { isSecretDigest } from './secretDigest.js';
import { drillSummaryOf, runKind, type DrillSummary } from './drillRuns.js';
import { operatorWaits } from './operatorWait.js';
import { COMPLETED_STEP_STATUSES, type EventRecord, type RunMark, type RunRecord, type StepRecord, type StepStatus, type VerifyResult } from './types.js';

/** How a step shows in a report: `unfinished` when a later attempt replaced it or the run ended around it; `skipped` also for a step a resume found done. */
export type ReportStepStatus = StepStatus | 'unfinished';

export interface ReportSession {
  /** 0 for the run's start, then 1, 2, … for each resume */
  index: number;
  startedAt: string;
  /** the session's last recorded moment (its end, or its last row if the process died) */
  lastAt: string;
  durationMs: number;
  by: { user: string; host: string; pid: number };
  /** a resume's own reason, if it gave one */
  reason: string | null;
}

export interface ReportStep {
  /** chain seq of the attempt's start; null for a step a resume skipped as done (no row of its own) */
  seq: number | null;
  ordinal: number;
  attempt: number;
  stepId: string;
  name: string;
  type: string;
  status: ReportStepStatus;
  session: number;
  startedAt: string;
  /** ms from its session's start */
  offsetMs: number;
  /** wall time from start to end, the operator's waits included */
  durationMs: number | null;
  /** of durationMs, the time spent waiting for the operator to answer the step's questions */
  waitMs: number;
  inputs: unknown;
  outputs: unknown;
  error: string | null;
  /** why it is shown as it is: "replaced by attempt 2", "done in attempt 1", … */
  note: string | null;
}

export interface ReportPrompt {
  at: string;
  question: string;
  answer: unknown;
  /** e.g. `--yes`, or `nobody: no terminal and no --yes` */
  answeredBy: string | null;
  /** the variable the answer bound, if a variable prompt */
  variable: string | null;
  stepId: string | null;
}

export interface ReportEvent {
  at: string;
  kind: string;
  message: string;
  stepId: string | null;
}

/** The plan `lifeboat recover` showed before it asked to go ahead. */
export interface ReportPlan {
  at: string;
  recommended: string | null;
  why: string | null;
  keeps: string[];
  loses: string[];
  warnings: string[];
  command: string | null;
  /** the plan exactly as shown */
  text: string | null;
}

export interface ReportVariable {
  name: string;
  value: unknown;
  redacted: boolean;
  /** where it came from: set, vars-file, prompt, default, recorded, … */
  source: string | null;
}

export interface RunReport {
  auditDb: string;
  generatedAt: string;
  run: RunRecord;
  /** from start to end; null while running */
  durationMs: number | null;
  /** the playbook file the run read, if it recorded one */
  playbookFile: string | null;
  variables: ReportVariable[];
  sessions: ReportSession[];
  steps: ReportStep[];
  prompts: ReportPrompt[];
  events: ReportEvent[];
  plans: ReportPlan[];
  /** a drill's result (its RTO breakdown and checks); null for any other run */
  drill: DrillSummary | null;
  /** the whole log's chain, checked now */
  chain: VerifyResult;
  head: string;
  rows: number;
}

/** Builds the report of `runId` (UnknownRunError if the log has no such run); `now` stamps it. */
export function buildRunReport(log: AuditReader, runId: string, now: Date = new Date()): RunReport {
  const run = log.requireRun(runId);
  const timeline = log.timeline(runId);
  const redact = new Redactor(run.variables);

  const stepsBySeq = new Map<number, StepRecord>();
  const marks: RunMark[] = [];
  const events: EventRecord[] = [];
  for (const e of timeline) {
    if (e.type === 'step') stepsBySeq.set(e.step.seq, e.step);
    else if (e.type === 'event') events.push(e.event);
    else marks.push(e.mark);
  }
  const stepIdOf = (seq: number | null) => (seq === null ? null : (stepsBySeq.get(seq)?.stepId ?? null));

  const sessions = buildSessions(run, timeline, marks, redact);
  const steps = buildSteps(run, [...stepsBySeq.values()], sessions, marks, redact, operatorWaits(events));

  const playbookEvent = events.find((e) => e.kind === 'playbook');
  const playbookData = asRecord(playbookEvent?.data);
  const sources = asRecord(playbookData.variableSources);
  const variables = Object.entries(run.variables).map(([name, value]): ReportVariable => ({
    name,
    value: redact.isSecret(name) ? '[redacted]' : redact.value(value),
    // a secret variable (recorded as its digest) is one too, whatever its name
    redacted: redact.isSecret(name) || isSecretDigest(value),
    source: typeof sources[name] === 'string' ? sources[name] : null,
  }));

  const prompts: ReportPrompt[] = [];
  const plans: ReportPlan[] = [];
  const others: ReportEvent[] = [];
  for (const e of events) {
    const data = asRecord(e.data);
    if (e.kind === 'prompt') {
      const variable = typeof data.variable === 'string' ? data.variable : null;
      prompts.push({
        at: e.at,
        question: redact.text(e.message),
        answer: variable !== null && redact.isSecret(variable) ? '[redacted]' : redact.value(data.answer),
        answeredBy: typeof data.answeredBy === 'string' ? data.answeredBy : null,
        variable,
        stepId: stepIdOf(e.stepSeq),
      });
    } else if (e.kind === 'plan') {
      plans.push(planOf(e, data, redact));
    } else {
      others.push({ at: e.at, kind: e.kind, message: redact.text(e.message), stepId: stepIdOf(e.stepSeq) });
    }
  }

  const chain = log.verify();
  const endedAt = run.endedAt;
  return {
    auditDb: log.path,
    generatedAt: now.toISOString(),
    run: { ...run, reason: redact.text(run.reason), error: run.error === null ? null : redact.text(run.error), variables: {} },
    durationMs: endedAt === null ? null : Date.parse(endedAt) - Date.parse(run.startedAt),
    playbookFile: typeof playbookData.file === 'string' ? playbookData.file : null,
    variables,
    sessions,
    steps,
    prompts,
    events: others,
    plans,
    drill: runKind(run) === 'drill' ? drillSummaryOf(events) : null,
    chain,
    head: chain.ok ? chain.head : log.headHash(),
    rows: chain.ok ? chain.rows : log.rowCount(),
  };
}

function buildSessions(run: RunRecord, timeline: ReturnType<AuditReader['timeline']>, marks: RunMark[], redact: Redactor): ReportSession[] {
  const sessions: ReportSession[] = [
    { index: 0, startedAt: run.startedAt, lastAt: run.startedAt, durationMs: 0, by: { user: run.user, host: run.host, pid: run.pid }, reason: null },
  ];
  for (const m of marks) {
    if (m.kind !== 'run.resume') continue;
    const p = m.payload;
    sessions.push({
      index: sessions.length,
      startedAt: m.at,
      lastAt: m.at,
      durationMs: 0,
      by: { user: String(p.user), host: String(p.host), pid: Number(p.pid) },
      reason: typeof p.reason === 'string' ? redact.text(p.reason) : null,
    });
  }
  // Every row of the run after a session's start and before the next one's belongs to it.
  const starts = [run.startSeq, ...marks.filter((m) => m.kind === 'run.resume').map((m) => m.seq)];
  const widen = (seq: number, at: string) => {
    const s = sessions[sessionOfSeq(starts, seq)];
    if (Date.parse(at) > Date.parse(s.lastAt)) s.lastAt = at;
  };
  for (const e of timeline) {
    if (e.type === 'step') widen(e.step.seq, e.step.endedAt ?? e.step.startedAt);
    else if (e.type === 'event') widen(e.event.seq, e.event.at);
    else widen(e.mark.seq, e.mark.at);
  }
  for (const s of sessions) s.durationMs = Date.parse(s.lastAt) - Date.parse(s.startedAt);
  return sessions;
}

function sessionOfSeq(starts: number[], seq: number): number {
  let i = 0;
  while (i + 1 < starts.length && starts[i + 1] < seq) i++;
  return i;
}

function buildSteps(
  run: RunRecord,
  attempts: StepRecord[],
  sessions: ReportSession[],
  marks: RunMark[],
  redact: Redactor,
  waits: Map<number, number>,
): ReportStep[] {
  const starts = [run.startSeq, ...marks.filter((m) => m.kind === 'run.resume').map((m) => m.seq)];
  const latestSeq = new Map<number, number>();
  for (const s of attempts) latestSeq.set(s.ordinal, s.seq);
  const out: ReportStep[] = [];
  for (let i = 0; i < sessions.length; i++) {
    const session = sessions[i];
    const mine = attempts.filter((s) => sessionOfSeq(starts, s.seq) === i);
    if (i > 0) {
      // A resume skips, with their recorded outputs, the steps done before it: shown here so the session reads whole.
      const before = attempts.filter((s) => s.seq < starts[i]);
      const done = new Map<number, StepRecord>();
      for (const s of before) done.set(s.ordinal, s);
      const firstRun = mine.length > 0 ? Math.min(...mine.map((s) => s.ordinal)) : Infinity;
      for (const s of [...done.values()].sort((a, b) => a.ordinal - b.ordinal)) {
        if (!COMPLETED_STEP_STATUSES.includes(s.status) || s.ordinal > firstRun) continue;
        out.push({
          ...stepFields(s, redact),
          seq: null,
          status: 'skipped',
          session: i,
          startedAt: session.startedAt,
          offsetMs: 0,
          durationMs: null,
          waitMs: 0,
          outputs: redact.value(s.outputs),
          error: null,
          note: `done in attempt ${s.attempt}`,
        });
      }
    }
    for (const s of mine) {
      const superseded = latestSeq.get(s.ordinal) !== s.seq;
      const unfinished = s.status === 'running' && (run.outcome !== 'running' || superseded || i < sessions.length - 1);
      out.push({
        ...stepFields(s, redact),
        seq: s.seq,
        status: unfinished ? 'unfinished' : s.status,
        session: i,
        startedAt: s.startedAt,
        offsetMs: Date.parse(s.startedAt) - Date.parse(session.startedAt),
        durationMs: s.durationMs,
        waitMs: waits.get(s.seq) ?? 0,
        outputs: redact.value(s.outputs),
        error: s.error === null ? null : redact.text(s.error),
        note: superseded ? 'run again in a later attempt' : unfinished ? 'the process stopped before the step ended' : null,
      });
    }
  }
  return out;
}

function stepFields(s: StepRecord, redact: Redactor) {
  return { ordinal: s.ordinal, attempt: s.attempt, stepId: s.stepId, name: redact.text(s.name), type: s.type, inputs: redact.value(s.inputs) };
}

function planOf(e: EventRecord, data: Record<string, unknown>, redact: Redactor): ReportPlan {
  const plan = asRecord(data.plan);
  const sources = Array.isArray(plan.sources) ? (plan.sources as unknown[]) : [];
  const best = typeof plan.recommended === 'number' ? asRecord(sources[plan.recommended]) : {};
  const texts = (v: unknown) => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string').map((x) => redact.text(x)) : []);
  const text = (v: unknown) => (typeof v === 'string' ? redact.text(v) : null);
  return {
    at: e.at,
    recommended: text(best.path),
    why: text(plan.why),
    keeps: texts(plan.keeps),
    loses: texts(plan.loses),
    warnings: texts(plan.warnings),
    command: text(plan.command),
    text: text(data.text),
  };
}

function asRecord(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/**
 * The report of `runId` in the log --audit-db names (see openAuditLogForReport).
 * A missing file, a file that is not an audit log and an unknown run ID are the
 * caller's input errors (InputError: exit 2), each one line.
 */
export function readRunReport(auditDbFlag: string | undefined, runId: string, now: Date = new Date()): RunReport {
  const log: AuditReader = openAuditLogForReport(auditDbFlag);
  try {
    return buildRunReport(log, runId, now);
  } catch (err) {
    if (err instanceof UnknownRunError) throw new InputError(err.message);
    throw err;
  } finally {
    log.close();
  }
}
