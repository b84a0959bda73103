// `lifeboat audit report --markdown`: the same report as Markdown (GitHub
// flavour: tables), to paste into a ticket or a post-mortem.
import { ownTime } from '../../audit/operatorWait.js';
import type { ReportStep, RunReport } from '../../audit/report.js';
import { formatDuration } from './timelineOutput.js';
import { chainSummary, clusterChange, outcomeLabel, valueText } from './reportText.js';
import { drillSectionMarkdown } from './reportDrill.js';

export function renderReportMarkdown(r: RunReport): string {
  const run = r.run;
  const out: string[] = [];
  const STATUS_MARK: Record<string, string> = { failed: '**FAILED**', unfinished: '**unfinished**', skipped: '_skipped_' };

  out.push(`## Run \`${run.id}\`: ${outcomeLabel(run.outcome).toUpperCase()}`, '');
  out.push(`| | |`, `|---|---|`);
  const fact = (k: string, v: string) => out.push(`| ${k} | ${cell(v)} |`);
  fact('playbook', `${run.playbook}${run.playbookSha256 ? ` (sha256 \`${run.playbookSha256}\`)` : ''}`);
  if (r.playbookFile) fact('file', `\`${r.playbookFile}\``);
  fact('reason', run.reason);
  fact('who', `${run.user}@${run.host} (pid ${run.pid})`);
  fact('started', run.startedAt);
  fact('ended', run.endedAt ? `${run.endedAt} (${formatDuration(r.durationMs ?? 0)})` : 'not yet');
  if (run.resumes > 0) fact('resumed', `${run.resumes} time${run.resumes === 1 ? '' : 's'}`);
  if (run.error) fact('error', run.error);
  out.push('');

  if (r.drill) out.push(...drillSectionMarkdown(r.drill));

  out.push('### Cluster', '', '| | cluster ID | member IDs |', '|---|---|---|');
  const ids = (v: string[] | null) => (v === null ? 'not recorded' : v.length === 0 ? '(none)' : v.map((id) => `\`${id}\``).join(', '));
  out.push(`| before | ${run.clusterIdBefore ? `\`${run.clusterIdBefore}\`` : 'not recorded'} | ${ids(run.memberIdsBefore)} |`);
  out.push(`| after | ${run.clusterIdAfter ? `\`${run.clusterIdAfter}\`` : 'not recorded'} | ${ids(run.memberIdsAfter)} |`);
  for (const c of clusterChange(run)) out.push('', `- ${c}`);
  out.push('');

  out.push('### Steps', '');
  if (r.steps.length === 0) out.push('No steps recorded.', '');
  for (const s of r.sessions) {
    const steps = r.steps.filter((x) => x.session === s.index);
    const who = `${s.by.user}@${s.by.host} (pid ${s.by.pid})`;
    if (r.sessions.length > 1 || s.index > 0) {
      out.push(
        s.index === 0
          ? `**Started** ${s.startedAt} by ${who} (${formatDuration(s.durationMs)})`
          : `**Resume ${s.index}** ${s.startedAt} by ${who}${s.reason ? `: ${cell(s.reason)}` : ''} (${formatDuration(s.durationMs)})`,
        '',
      );
    }
    if (steps.length === 0) {
      out.push('No steps in this session.', '');
      continue;
    }
    out.push('| # | step | type | started | took | status |', '|---:|---|---|---|---:|---|');
    for (const x of steps) out.push(stepRow(x, STATUS_MARK));
    out.push('');
    for (const x of steps.filter((y) => y.error)) out.push(`- step ${x.ordinal} \`${x.stepId}\` error: ${cell(x.error ?? '')}`);
    if (steps.some((y) => y.error)) out.push('');
  }

  out.push('### Prompts and answers', '');
  if (r.prompts.length === 0) out.push('No questions were asked.', '');
  else {
    out.push('| at | question | answer |', '|---|---|---|');
    for (const p of r.prompts) {
      const answer = p.answer === null || p.answer === undefined ? '(no answer)' : p.answer === true ? 'yes' : p.answer === false ? 'no' : valueText(p.answer);
      out.push(
        `| ${p.at.slice(11, 23)} | ${cell(p.question)}${p.stepId ? ` (step \`${p.stepId}\`)` : ''} | ${cell(answer)}${p.answeredBy ? ` (by ${cell(p.answeredBy)})` : ''} |`,
      );
    }
    out.push('');
  }

  out.push('### Variables', '');
  if (r.variables.length === 0) out.push('None.', '');
  else {
    out.push('| name | value | from |', '|---|---|---|');
    for (const v of r.variables)
      out.push(`| \`${v.name}\` | ${v.redacted ? '_[redacted]_' : `\`${cell(valueText(v.value)).replace(/`/g, "'")}\``} | ${v.source ?? ''} |`);
    out.push('', '_Values whose names look like a password, token or key are masked, here and wherever else they appear._', '');
  }

  for (const p of r.plans) {
    out.push('### Plan shown', '', `Shown at ${p.at}. Recommended source: \`${p.recommended ?? '(unknown)'}\`${p.why ? `, because ${p.why}` : ''}.`, '');
    out.push('**Kept**', '', ...(p.keeps.length ? p.keeps.map((k) => `- ${k}`) : ['- nothing listed']), '');
    out.push('**Lost**', '', ...(p.loses.length ? p.loses.map((k) => `- ${k}`) : ['- nothing the sources hold']), '');
    if (p.warnings.length) out.push('**Warnings**', '', ...p.warnings.map((w) => `- ${w}`), '');
    if (p.command) out.push('**Command**', '', '```sh', p.command, '```', '');
  }

  if (r.events.length > 0) {
    out.push('### Notes, warnings and other events', '');
    for (const e of r.events) out.push(`- ${e.at.slice(11, 23)} **${e.kind}**${e.stepId ? ` (step \`${e.stepId}\`)` : ''}: ${cell(e.message)}`);
    out.push('');
  }

  out.push(
    '### Audit chain',
    '',
    chainSummary(r),
    '',
    `Head: \`${r.head}\` (${r.rows} rows). Check it later with \`lifeboat audit verify --head ${r.head}\`.`,
    '',
  );
  out.push(`_Report generated ${r.generatedAt} by lifeboat audit report._`);
  return `${out.join('\n')}\n`;
}

function stepRow(x: ReportStep, marks: Record<string, string>): string {
  const title = `\`${x.stepId}\`${x.name !== x.stepId ? ` ${cell(x.name)}` : ''}${x.attempt > 1 ? ` (attempt ${x.attempt})` : ''}`;
  const status = `${marks[x.status] ?? x.status}${x.note ? ` (${cell(x.note)})` : ''}`;
  const took =
    x.durationMs === null
      ? '—'
      : x.waitMs > 0
        ? `${formatDuration(ownTime(x.durationMs, x.waitMs))} (+ ${formatDuration(x.waitMs)} waiting for the operator)`
        : formatDuration(x.durationMs);
  return `| ${x.ordinal} | ${title} | ${x.type} | ${x.startedAt.slice(11, 23)} | ${took} | ${status} |`;
}

/** Text safe inside a table cell: one line, pipes escaped. */
function cell(s: string): string {
  return s.replace(/\r?\n/g, ' ').replace(/\|/g, '\\|');
}
