// `lifeboat audit show`: one run as a readable timeline — a header, then its
// steps, prompts, notes, resumes and end in the order they were written.
import type { Renderer } from '../baseCommand.js';
import { operatorWaits, ownTime } from '../../audit/operatorWait.js';
import type { EventRecord, RunMark, RunRecord, StepRecord, TimelineEntry } from '../../audit/types.js';

export interface RunTimeline {
  run: RunRecord;
  timeline: TimelineEntry[];
}

export const timelineOutput: Renderer<RunTimeline> = {
  simple: renderTimeline,
  table: renderTimeline,
  json: ({ run, timeline }) => {
    const waits = waitsOf(timeline);
    return {
      run,
      timeline: timeline.map((e) =>
        e.type === 'step'
          ? { entry: 'step', ...e.step, waitMs: waits.get(e.step.seq) ?? 0 }
          : e.type === 'event'
            ? { entry: 'event', ...e.event }
            : { entry: 'run', ...e.mark },
      ),
    };
  },
};

const INDENT = ' '.repeat(14);

/** Each step's time spent waiting for the operator (its prompts' answers), by its start seq. */
function waitsOf(timeline: TimelineEntry[]): Map<number, number> {
  return operatorWaits(timeline.flatMap((e) => (e.type === 'event' ? [e.event] : [])));
}

export function renderTimeline({ run, timeline }: RunTimeline): string {
  const lines: string[] = [];
  const field = (name: string, value: string) => lines.push(`  ${name.padEnd(10)} ${value.replace(/\n/g, `\n${' '.repeat(13)}`)}`);

  lines.push(`run ${run.id}: ${run.outcome}`);
  field('playbook', run.playbookSha256 ? `${run.playbook} (sha256 ${run.playbookSha256})` : run.playbook);
  field('reason', run.reason);
  field('who', `${run.user}@${run.host} (pid ${run.pid})`);
  field('started', run.startedAt);
  if (run.endedAt) field('ended', `${run.endedAt} (${formatDuration(Date.parse(run.endedAt) - Date.parse(run.startedAt))})`);
  if (run.error) field('error', run.error);
  if (run.clusterIdBefore || run.memberIdsBefore) field('before', clusterText(run.clusterIdBefore, run.memberIdsBefore));
  if (run.clusterIdAfter || run.memberIdsAfter) field('after', clusterText(run.clusterIdAfter, run.memberIdsAfter));
  if (Object.keys(run.variables).length > 0) field('variables', JSON.stringify(run.variables));
  if (run.resumes > 0) field('resumed', `${run.resumes} time${run.resumes === 1 ? '' : 's'}`);

  lines.push('');
  if (timeline.length === 0) lines.push('(no steps or events recorded)');
  const day = run.startedAt.slice(0, 10);
  const when = (iso: string) => (iso.startsWith(day) ? iso.slice(11, 23) : iso.slice(0, 23).replace('T', ' '));
  const superseded = supersededSteps(timeline);
  const waits = waitsOf(timeline);
  for (const entry of timeline) {
    if (entry.type === 'step') stepLines(entry.step, run, superseded, when, lines, waits.get(entry.step.seq) ?? 0);
    else if (entry.type === 'event') eventLines(entry.event, when, lines);
    else markLines(entry.mark, when, lines);
  }
  return lines.join('\n');
}

function stepLines(s: StepRecord, run: RunRecord, superseded: Set<number>, when: (iso: string) => string, lines: string[], waitMs: number) {
  const title = s.name !== s.stepId ? `${s.stepId} "${s.name}"` : s.stepId;
  const attempt = s.attempt > 1 ? ` (attempt ${s.attempt})` : '';
  let status: string = s.status;
  if (s.status === 'running' && (run.outcome !== 'running' || superseded.has(s.seq))) status = 'unfinished';
  // The step's own time; the operator's time to answer its questions is shown apart.
  const took =
    s.durationMs === null
      ? ''
      : waitMs > 0
        ? `  ${formatDuration(ownTime(s.durationMs, waitMs))} (+ ${formatDuration(waitMs)} waiting for the operator)`
        : `  ${formatDuration(s.durationMs)}`;
  lines.push(`${when(s.startedAt).padEnd(12)}  step ${s.ordinal} ${title} [${s.type}]${attempt}  ${status}${took}`);
  if (!isEmpty(s.inputs)) lines.push(`${INDENT}inputs  ${JSON.stringify(s.inputs)}`);
  if (!isEmpty(s.outputs)) lines.push(`${INDENT}outputs ${JSON.stringify(s.outputs)}`);
  if (s.error) lines.push(`${INDENT}error   ${indentMore(s.error)}`);
}

function eventLines(e: EventRecord, when: (iso: string) => string, lines: string[]) {
  const pad = e.stepSeq !== null ? '  ' : '';
  if (e.kind === 'prompt') {
    const data = (e.data ?? {}) as Record<string, unknown>;
    const { answer, ...rest } = data;
    lines.push(`${when(e.at).padEnd(12)}  ${pad}? ${e.message} → ${answerText(answer)}`);
    if (Object.keys(rest).length > 0) lines.push(`${INDENT}${pad}  ${JSON.stringify(rest)}`);
    return;
  }
  lines.push(`${when(e.at).padEnd(12)}  ${pad}${e.kind}: ${indentMore(e.message)}`);
  if (!isEmpty(e.data)) lines.push(`${INDENT}${pad}  ${JSON.stringify(e.data)}`);
}

function markLines(m: RunMark, when: (iso: string) => string, lines: string[]) {
  const p = m.payload;
  const at = when(m.at).padEnd(12);
  if (m.kind === 'run.end') {
    lines.push(`${at}  run ${String(p.outcome)}${typeof p.error === 'string' ? `: ${indentMore(p.error)}` : ''}`);
  } else if (m.kind === 'run.resume') {
    const why = typeof p.reason === 'string' ? `: ${p.reason}` : '';
    lines.push(`${at}  run resumed by ${String(p.user)}@${String(p.host)} (pid ${String(p.pid)})${why}`);
  } else {
    const parts: string[] = [];
    if (p.clusterIdBefore !== undefined || p.memberIdsBefore !== undefined) {
      parts.push(`before ${clusterText(p.clusterIdBefore as string | undefined, p.memberIdsBefore as string[] | undefined)}`);
    }
    if (p.clusterIdAfter !== undefined || p.memberIdsAfter !== undefined) {
      parts.push(`after ${clusterText(p.clusterIdAfter as string | undefined, p.memberIdsAfter as string[] | undefined)}`);
    }
    lines.push(`${at}  run recorded ${parts.join('; ')}`);
  }
}

/** Step attempts that a later attempt of the same ordinal replaced. */
function supersededSteps(timeline: TimelineEntry[]): Set<number> {
  const latest = new Map<number, number>();
  for (const e of timeline) if (e.type === 'step') latest.set(e.step.ordinal, e.step.seq);
  const out = new Set<number>();
  for (const e of timeline) if (e.type === 'step' && latest.get(e.step.ordinal) !== e.step.seq) out.add(e.step.seq);
  return out;
}

function clusterText(cluster: string | null | undefined, members: string[] | null | undefined): string {
  const parts: string[] = [];
  if (cluster) parts.push(`cluster ${cluster}`);
  if (members) parts.push(`members ${members.length > 0 ? members.join(', ') : '(none)'}`);
  return parts.join(', ');
}

function answerText(answer: unknown): string {
  if (answer === undefined) return '(no answer)';
  return typeof answer === 'string' ? answer : JSON.stringify(answer);
}

function isEmpty(v: unknown): boolean {
  return v === null || v === undefined || (typeof v === 'object' && Object.keys(v).length === 0);
}

function indentMore(text: string): string {
  return text.replace(/\n/g, `\n${INDENT}  `);
}

/** 850ms, 1.2s, 2m03s, 1h02m. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}
