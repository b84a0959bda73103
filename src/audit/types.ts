// What the audit log records, as the rest of Lifeboat sees it.

export const RUN_OUTCOMES = ['running', 'succeeded', 'failed', 'refused', 'interrupted'] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];
/** How a run can end. */
export type FinalOutcome = Exclude<RunOutcome, 'running'>;

export const STEP_STATUSES = ['running', 'succeeded', 'failed', 'skipped'] as const;
export type StepStatus = (typeof STEP_STATUSES)[number];
/** How a step can end. */
export type FinalStepStatus = Exclude<StepStatus, 'running'>;

/** A step counts as completed (not to be run again on resume) when it ended like this. */
export const COMPLETED_STEP_STATUSES: readonly StepStatus[] = ['succeeded', 'skipped'];

/** The kinds of chain rows. */
export const CHAIN_KINDS = ['run.start', 'run.update', 'run.resume', 'run.end', 'step.start', 'step.end', 'event'] as const;
export type ChainKind = (typeof CHAIN_KINDS)[number];

export interface RunRecord {
  /** e.g. r-20261122-083015-3f2a */
  id: string;
  startedAt: string;
  /** null while running (and again after a resume) */
  endedAt: string | null;
  outcome: RunOutcome;
  /** OS user and host that started the run */
  user: string;
  host: string;
  pid: number;
  reason: string;
  playbook: string;
  /** sha256 of the playbook file, hex; null for a run without a file */
  playbookSha256: string | null;
  variables: Record<string, unknown>;
  /** why the run failed, was refused or interrupted */
  error: string | null;
  clusterIdBefore: string | null;
  memberIdsBefore: string[] | null;
  clusterIdAfter: string | null;
  memberIdsAfter: string[] | null;
  /** how many times the run was resumed */
  resumes: number;
  /** chain seq of the run's first and latest rows */
  startSeq: number;
  lastSeq: number;
}

/** Names one recorded attempt of a step: pass it back to finishStep. */
export interface StepRef {
  runId: string;
  /** chain seq of the step's start row: unique across the log */
  seq: number;
}

export interface StepRecord extends StepRef {
  /** the step's position in the playbook, from 1 */
  ordinal: number;
  /** 1, then 2, … each time the same ordinal is started again (after a resume) */
  attempt: number;
  /** the playbook's step id */
  stepId: string;
  name: string;
  /** the step library's type, e.g. add-learner */
  type: string;
  inputs: unknown;
  outputs: unknown;
  startedAt: string;
  endedAt: string | null;
  durationMs: number | null;
  status: StepStatus;
  error: string | null;
}

export interface EventRecord {
  runId: string;
  seq: number;
  at: string;
  /** free-form: prompt, note, warning, assume-dead, … */
  kind: string;
  message: string;
  data: unknown;
  /** the step (its start seq) the event happened in, if any */
  stepSeq: number | null;
}

/** A run's own rows after its start: updates, resumes and its end, as the timeline shows them. */
export interface RunMark {
  runId: string;
  seq: number;
  at: string;
  kind: 'run.update' | 'run.resume' | 'run.end';
  payload: Record<string, unknown>;
}

export type TimelineEntry = { type: 'step'; step: StepRecord } | { type: 'event'; event: EventRecord } | { type: 'run'; mark: RunMark };

/** Everything the playbook engine needs to resume a run. */
export interface RunState {
  run: RunRecord;
  /** the latest attempt of each ordinal, by ordinal */
  steps: StepRecord[];
  /** ordinals whose latest attempt succeeded or was skipped, ascending */
  completed: number[];
  /** the most recently started step attempt, or null if none */
  lastStep: StepRecord | null;
  /**
   * The smallest ordinal (from 1) not completed: a step that failed or was left
   * running by an interrupted process, else one past the last completed step (1
   * for a run with no steps). Resume there, after checking that the playbook's
   * step at that ordinal still has the same step id (and the playbook the same sha256).
   */
  resumeFrom: number;
  /**
   * Who last started or resumed the run. A run still `running` whose process is
   * alive (same host, pid still there) is being driven by someone else: do not
   * resume it from a second process.
   */
  process: { user: string; host: string; pid: number };
}

export type VerifyResult =
  | { ok: true; head: string; rows: number }
  | {
      ok: false;
      /** seq of the first bad chain row; null when the damage is in the schema (a view or trigger) */
      firstBad: { seq: number | null; reason: string };
    };
