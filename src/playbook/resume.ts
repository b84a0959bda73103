// Picking up an interrupted run: what was recorded about it (the playbook file,
// its sha256, the variables, the connection), whether it may be resumed, and the
// latest attempt of each step for the engine to skip what is done.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import type { AuditLog, RunRecord } from '../audit/index.js';
import { InputError, RefusedError } from '../common/errors.js';
import type { ResumeState } from './engine.js';
import { referencesIn } from './interpolate.js';
import type { PlanNode, Playbook } from './schema.js';
import type { StepContext } from './stepTypes.js';

export interface RecordedRun {
  run: RunRecord;
  /** the playbook file the run followed (absolute) */
  file: string;
  sha256: string;
  endpoints?: string;
  connection?: StepContext['connection'] & { user?: string };
  runDir?: string;
}

/** What the run recorded at its start (the `playbook` event). */
export function recordedRun(audit: AuditLog, runId: string): RecordedRun {
  const run = audit.requireRun(runId);
  const start = audit.events(runId).find((e) => e.kind === 'playbook');
  const data = (start?.data ?? {}) as {
    file?: string;
    sha256?: string;
    endpoints?: string | null;
    connection?: StepContext['connection'] & { user?: string };
    runDir?: string;
  };
  if (!start || typeof data.file !== 'string') {
    throw new InputError(`run ${runId} was not started by 'lifeboat playbook run' (no playbook file recorded); it cannot be resumed`);
  }
  return {
    run,
    file: data.file,
    sha256: data.sha256 ?? run.playbookSha256 ?? '',
    ...(data.endpoints ? { endpoints: data.endpoints } : {}),
    ...(data.connection ? { connection: data.connection } : {}),
    ...(data.runDir ? { runDir: data.runDir } : {}),
  };
}

/** The process last working on the run: the latest resume, else the start. */
function lastOwner(audit: AuditLog, rec: RecordedRun): { pid: number; host: string } {
  let owner = { pid: rec.run.pid, host: rec.run.host };
  for (const entry of audit.timeline(rec.run.id)) {
    if (entry.type === 'run' && entry.mark.kind === 'run.resume') {
      const p = entry.mark.payload as { pid?: number; host?: string };
      if (typeof p.pid === 'number' && typeof p.host === 'string') owner = { pid: p.pid, host: p.host };
    }
  }
  return owner;
}

/** Whether `pid` on this host is a live lifeboat process. */
function isLiveLifeboat(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    return /lifeboat|run\.js/.test(cmd);
  } catch {
    return true; // alive, and no /proc to tell what it is: assume the worst
  }
}

/**
 * Refuses to resume a run that succeeded, that another live process is still
 * running, or whose playbook changed since (naming both hashes).
 */
export function checkResumable(audit: AuditLog, rec: RecordedRun, pb: Playbook): void {
  const { run } = rec;
  if (run.outcome === 'succeeded') throw new InputError(`run ${run.id} already succeeded; there is nothing to resume`);
  if (run.outcome === 'running') {
    const owner = lastOwner(audit, rec);
    if (owner.host === os.hostname() && isLiveLifeboat(owner.pid)) {
      throw new RefusedError(`run ${run.id} is still being run by pid ${owner.pid} on this host; stop that process (or wait for it) before resuming`);
    }
  }
  if (pb.sha256 !== rec.sha256) {
    throw new RefusedError(
      `playbook ${rec.file} changed since run ${run.id} started: its sha256 was ${rec.sha256}, it is now ${pb.sha256}; resume only with the file the run started with, or start a new run`,
    );
  }
}

/** The engine's resume point: the latest attempt of every step position. */
export function resumeState(audit: AuditLog, runId: string, reason?: string): ResumeState {
  const state = audit.lastRunState(runId);
  return { runId, latest: new Map(state.steps.map((s) => [s.ordinal, s])), ...(reason !== undefined ? { reason } : {}) };
}

/**
 * The run's variables now: as recorded at its start, then each change a resume
 * made with --set (a `variable` event), in order.
 */
export function recordedVariables(audit: AuditLog, run: RunRecord): Record<string, unknown> {
  const values: Record<string, unknown> = { ...run.variables };
  for (const e of audit.events(run.id)) {
    const d = (e.data ?? {}) as { variable?: unknown; to?: unknown };
    if (e.kind === 'variable' && typeof d.variable === 'string') values[d.variable] = d.to;
  }
  return values;
}

/** Each step of the playbook (by id path without item numbers: `readd.add`) and the variables it reads, its for-each's included. */
function variablesByStep(pb: Playbook): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const varsIn = (value: unknown) =>
    referencesIn(value, () => undefined)
      .filter((r) => r.root === 'vars')
      .map((r) => r.path[0]);
  const walk = (nodes: PlanNode[], prefix: string, inherited: string[]): void => {
    for (const n of nodes) {
      if (n.kind === 'for-each') walk(n.steps, `${prefix}${n.id}.`, [...inherited, ...varsIn(n.forEach.value)]);
      else out.set(`${prefix}${n.id}`, new Set([...inherited, ...Object.values(n.with).flatMap((p) => varsIn(p.value))]));
    }
  };
  walk(pb.steps, '', []);
  return out;
}

/** The stable ids of the steps the run completed that read variable `name`. */
export function completedStepsUsing(pb: Playbook, state: ResumeState, name: string): string[] {
  const byStep = variablesByStep(pb);
  return [...state.latest.values()]
    .filter((s) => (s.status === 'succeeded' || s.status === 'skipped') && byStep.get(s.stepId.replace(/\[\d+\]/g, ''))?.has(name))
    .map((s) => s.stepId);
}
