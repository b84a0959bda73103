// `lifeboat audit report`'s page: one self-contained HTML file (inline CSS and
// SVG, no script, nothing fetched) with the run's outcome, who and why, the
// cluster before and after, a timeline chart of every step attempt per session,
// the prompts and answers, the variables (secrets masked), the plan shown, and
// the chain's verification.
import type { ReportSession, ReportStep, RunReport } from '../../audit/report.js';
import { ownTime } from '../../audit/operatorWait.js';
import { formatDuration } from './timelineOutput.js';
import { chainSummary, clusterChange, outcomeLabel, valueText } from './reportText.js';
import { drillSectionHtml } from './reportDrill.js';

const CSS = `
:root { color-scheme: light; --ok: #1a7f37; --bad: #cf222e; --warn: #9a6700; --skip: #6e7781; --run: #0969da; --line: #d0d7de; --muted: #57606a; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328; background: #f6f8fa; overflow-wrap: anywhere; }
main { max-width: 1100px; margin: 0 auto; padding: 16px; }
section, header.run { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px; margin: 0 0 16px; }
h1 { font-size: 20px; margin: 0 0 8px; }
h2 { font-size: 16px; margin: 0 0 8px; }
h3 { font-size: 14px; margin: 12px 0 4px; }
code, pre, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f8fa; padding: 8px; border-radius: 6px; margin: 4px 0; }
table { width: 100%; border-collapse: collapse; table-layout: fixed; }
th, td { text-align: left; vertical-align: top; padding: 4px 6px; border-bottom: 1px solid var(--line); }
th { color: var(--muted); font-weight: 600; }
dl.facts { display: grid; grid-template-columns: minmax(6em, max-content) 1fr; gap: 2px 12px; margin: 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; min-width: 0; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 12px; color: #fff; font-weight: 600; font-size: 12px; background: var(--skip); }
.badge.succeeded { background: var(--ok); } .badge.failed { background: var(--bad); } .badge.refused { background: #bc4c00; }
.badge.interrupted, .badge.unfinished { background: var(--warn); } .badge.running { background: var(--run); } .badge.skipped { background: var(--skip); }
h1 .badge { font-size: 14px; vertical-align: 2px; }
.error { color: var(--bad); }
.lost { color: var(--bad); } .added { color: var(--ok); }
.muted { color: var(--muted); }
svg.chart { display: block; width: 100%; height: auto; }
svg.chart text { font: 12px system-ui, sans-serif; fill: #1f2328; }
svg.chart .axis { stroke: var(--line); } svg.chart .tick { fill: var(--muted); font-size: 11px; }
svg.chart .succeeded { fill: var(--ok); } svg.chart .failed { fill: var(--bad); } svg.chart .running { fill: var(--run); }
svg.chart .unfinished { fill: var(--warn); } svg.chart .skipped { stroke: var(--skip); }
svg.chart text.in-bar { fill: #fff; }
.legend span { margin-right: 12px; white-space: nowrap; }
.legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; vertical-align: -1px; }
tr.step.failed td { background: #ffebe9; } tr.step.skipped td, tr.step.unfinished td { background: #f6f8fa; color: var(--muted); }
tr.step.unfinished td { background: #fff8c5; }
details summary { cursor: pointer; color: var(--muted); }
.secret { color: var(--muted); font-style: italic; }
.chain.ok { border-left: 4px solid var(--ok); } .chain.bad { border-left: 4px solid var(--bad); }
col.n { width: 3em; } col.status { width: 7.5em; } col.dur { width: 5.5em; } col.when { width: 7.5em; }
@media (max-width: 600px) { svg.chart text { font-size: 18px; } svg.chart .tick { font-size: 16px; } main { padding: 8px; } section, header.run { padding: 8px; } col.when { width: 0; } .when { display: none; } }
`;

/** The whole page. */
export function renderReportHtml(r: RunReport): string {
  const run = r.run;
  const title = `Run ${run.id}: ${outcomeLabel(run.outcome)}`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>${esc(title)}</title>
<style>${CSS}</style>
</head>
<body>
<main>
${header(r)}
${r.drill ? drillSectionHtml(r.drill) : ''}
${cluster(r)}
${timeline(r)}
${prompts(r)}
${variables(r)}
${plans(r)}
${events(r)}
${chain(r)}
<p class="muted">Report generated ${esc(r.generatedAt)} by lifeboat audit report from ${esc(r.auditDb)}.</p>
</main>
</body>
</html>
`;
}

function header(r: RunReport): string {
  const run = r.run;
  const facts: Array<[string, string]> = [
    ['playbook', `${esc(run.playbook)}${run.playbookSha256 ? ` <span class="mono muted">sha256 ${esc(run.playbookSha256)}</span>` : ''}`],
    ...(r.playbookFile ? ([['file', `<span class="mono">${esc(r.playbookFile)}</span>`]] as Array<[string, string]>) : []),
    ['reason', esc(run.reason)],
    ['who', `${esc(run.user)}@${esc(run.host)} <span class="muted">(pid ${run.pid})</span>`],
    ['started', esc(run.startedAt)],
    ['ended', run.endedAt ? `${esc(run.endedAt)} <span class="muted">(${formatDuration(r.durationMs ?? 0)})</span>` : '<span class="muted">not yet</span>'],
  ];
  if (run.resumes > 0) facts.push(['resumed', `${run.resumes} time${run.resumes === 1 ? '' : 's'}`]);
  if (run.error) facts.push(['error', `<span class="error">${esc(run.error)}</span>`]);
  return `<header class="run" id="run" data-run-id="${esc(run.id)}" data-outcome="${esc(run.outcome)}">
<h1>Run <span class="mono">${esc(run.id)}</span> <span class="badge ${esc(run.outcome)}" id="outcome">${esc(outcomeLabel(run.outcome))}</span></h1>
<dl class="facts">${facts.map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`).join('')}</dl>
</header>`;
}

function cluster(r: RunReport): string {
  const c = clusterChange(r.run);
  const members = (ids: string[] | null, other: string[] | null, cls: string) =>
    ids === null
      ? '<span class="muted">not recorded</span>'
      : ids.length === 0
        ? '(none)'
        : ids.map((id) => `<span class="mono${other !== null && !other.includes(id) ? ` ${cls}` : ''}">${esc(id)}</span>`).join(', ');
  const id = (v: string | null) => (v === null ? '<span class="muted">not recorded</span>' : `<span class="mono">${esc(v)}</span>`);
  return `<section id="cluster">
<h2>Cluster</h2>
<table><colgroup><col style="width:6em"><col><col></colgroup>
<thead><tr><th></th><th>cluster ID</th><th>member IDs</th></tr></thead>
<tbody>
<tr><th>before</th><td>${id(r.run.clusterIdBefore)}</td><td>${members(r.run.memberIdsBefore, r.run.memberIdsAfter, 'lost')}</td></tr>
<tr><th>after</th><td>${id(r.run.clusterIdAfter)}</td><td>${members(r.run.memberIdsAfter, r.run.memberIdsBefore, 'added')}</td></tr>
</tbody></table>
${c.length > 0 ? `<p>${c.map(esc).join('; ')}</p>` : ''}
</section>`;
}

// ---- the timeline ----------------------------------------------------------

const CHART = { width: 720, gutter: 48, right: 12, row: 24, bar: 14, top: 8, axis: 26 };

function timeline(r: RunReport): string {
  if (r.steps.length === 0) return `<section id="timeline"><h2>Timeline</h2><p class="muted">No steps recorded.</p></section>`;
  const parts = r.sessions.map((s) =>
    sessionBlock(
      r,
      s,
      r.steps.filter((x) => x.session === s.index),
    ),
  );
  return `<section id="timeline">
<h2>Timeline</h2>
<p class="legend"><span><i style="background:var(--ok)"></i>succeeded</span><span><i style="background:var(--bad)"></i>failed</span><span><i style="background:var(--skip)"></i>skipped (done before)</span><span><i style="background:var(--warn)"></i>unfinished</span><span><i style="background:var(--run)"></i>running</span></p>
${parts.join('\n')}
</section>`;
}

function sessionBlock(r: RunReport, s: ReportSession, steps: ReportStep[]): string {
  const who = `${esc(s.by.user)}@${esc(s.by.host)} (pid ${s.by.pid})`;
  const head =
    s.index === 0 ? `Started ${esc(s.startedAt)} by ${who}` : `Resume ${s.index}: ${esc(s.startedAt)} by ${who}${s.reason ? ` — ${esc(s.reason)}` : ''}`;
  return `<div class="session" data-session="${s.index}">
<h3>${head} <span class="muted">(${formatDuration(s.durationMs)})</span></h3>
${steps.length > 0 ? chartSvg(s, steps) : '<p class="muted">No steps in this session.</p>'}
${stepTable(steps)}
</div>`;
}

function chartSvg(s: ReportSession, steps: ReportStep[]): string {
  const c = CHART;
  const plot = c.width - c.gutter - c.right;
  const span = Math.max(1, s.durationMs, ...steps.map((x) => x.offsetMs + (x.durationMs ?? 0)));
  const height = c.top + steps.length * c.row + c.axis;
  const bars = steps.map((x, i) => {
    const y = c.top + i * c.row;
    const x0 = c.gutter + (x.offsetMs / span) * plot;
    const w = x.status === 'skipped' ? 16 : Math.max(3, ((x.durationMs ?? 0) / span) * plot);
    const label = x.durationMs === null ? x.status : stepTime(x);
    const by = y + c.row / 2 + 4;
    let text: string;
    if (w > 70) text = `<text class="in-bar" x="${n(x0 + w - 4)}" y="${n(by)}" text-anchor="end">${esc(label)}</text>`;
    else if (x0 + w + 6 + label.length * 10 < c.width) text = `<text x="${n(x0 + w + 4)}" y="${n(by)}">${esc(label)}</text>`;
    else text = `<text x="${n(x0 - 4)}" y="${n(by)}" text-anchor="end">${esc(label)}</text>`;
    const ord = x.attempt > 1 ? `${x.ordinal}·${x.attempt}` : String(x.ordinal);
    return `<g class="bar" data-step-id="${esc(x.stepId)}" data-status="${x.status}"><title>${esc(stepTitle(x))}: ${x.status}${x.durationMs === null ? '' : `, ${stepTime(x)}`}${x.note ? ` (${esc(x.note)})` : ''}</title>
<text x="${c.gutter - 6}" y="${n(by)}" text-anchor="end">${esc(ord)}</text>
<rect class="${x.status}"${x.status === 'skipped' ? ` fill="url(#hatch-${s.index})"` : ''} x="${n(x0)}" y="${n(y + (c.row - c.bar) / 2)}" width="${n(w)}" height="${c.bar}" rx="2"/>${text}</g>`;
  });
  const axisY = c.top + steps.length * c.row + 4;
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => {
    const x = c.gutter + f * plot;
    const anchor = f === 0 ? 'start' : f === 1 ? 'end' : 'middle';
    return `<line class="axis" x1="${n(x)}" y1="${axisY}" x2="${n(x)}" y2="${axisY + 4}"/><text class="tick" x="${n(x)}" y="${axisY + 17}" text-anchor="${anchor}">${f === 0 ? '0' : `+${formatDuration(span * f)}`}</text>`;
  });
  return `<svg class="chart" viewBox="0 0 ${c.width} ${height}" role="img" aria-label="steps of session ${s.index} on a time line" xmlns="http://www.w3.org/2000/svg">
<defs><pattern id="hatch-${s.index}" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#eaeef2"/><line x1="0" y1="0" x2="0" y2="6" stroke="#8c959f" stroke-width="3"/></pattern></defs>
<line class="axis" x1="${c.gutter}" y1="${axisY}" x2="${c.width - c.right}" y2="${axisY}"/>
${bars.join('\n')}
${ticks.join('')}
</svg>`;
}

/** A step's own time, and apart the operator's time to answer its questions. */
function stepTime(x: ReportStep): string {
  const took = x.durationMs ?? 0;
  return x.waitMs > 0 ? `${formatDuration(ownTime(took, x.waitMs))} + ${formatDuration(x.waitMs)} waiting for the operator` : formatDuration(took);
}

function stepTable(steps: ReportStep[]): string {
  const rows = steps.map((x) => {
    const detail: string[] = [];
    if (x.error) detail.push(`<div class="error">${esc(x.error)}</div>`);
    if (x.note) detail.push(`<div class="muted">${esc(x.note)}</div>`);
    const io: string[] = [];
    if (!isEmpty(x.inputs)) io.push(`inputs <pre>${esc(JSON.stringify(x.inputs, null, 2))}</pre>`);
    if (!isEmpty(x.outputs)) io.push(`outputs <pre>${esc(JSON.stringify(x.outputs, null, 2))}</pre>`);
    if (io.length > 0) detail.push(`<details><summary>inputs and outputs</summary>${io.join('')}</details>`);
    const duration =
      x.durationMs === null
        ? '—'
        : x.waitMs > 0
          ? `${formatDuration(ownTime(x.durationMs, x.waitMs))}<div class="muted">+ ${formatDuration(x.waitMs)} waiting for the operator</div>`
          : formatDuration(x.durationMs);
    return `<tr class="step ${x.status}" data-step-id="${esc(x.stepId)}" data-status="${x.status}" data-attempt="${x.attempt}" data-duration-ms="${x.durationMs ?? ''}" data-wait-ms="${x.waitMs}">
<td>${x.ordinal}</td><td><div><b>${esc(x.stepId)}</b>${x.name !== x.stepId ? ` ${esc(x.name)}` : ''} <span class="muted">[${esc(x.type)}]${x.attempt > 1 ? ` attempt ${x.attempt}` : ''}</span></div>${detail.join('')}</td>
<td class="when mono">${esc(x.startedAt.slice(11, 23))}</td><td class="duration">${duration}</td><td class="status"><span class="badge ${x.status}">${x.status}</span></td></tr>`;
  });
  return `<table class="steps"><colgroup><col class="n"><col><col class="when"><col class="dur"><col class="status"></colgroup>
<thead><tr><th>#</th><th>step</th><th class="when">started</th><th>took</th><th>status</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table>`;
}

// ---- the rest --------------------------------------------------------------

function prompts(r: RunReport): string {
  if (r.prompts.length === 0) return `<section id="prompts"><h2>Prompts and answers</h2><p class="muted">No questions were asked.</p></section>`;
  const rows = r.prompts.map(
    (p) =>
      `<tr><td class="when mono">${esc(p.at.slice(11, 23))}</td><td>${esc(p.question)}${p.stepId ? ` <span class="muted">(step ${esc(p.stepId)})</span>` : ''}</td><td>${answerHtml(p.answer)}${p.answeredBy ? ` <span class="muted">by ${esc(p.answeredBy)}</span>` : ''}</td></tr>`,
  );
  return `<section id="prompts"><h2>Prompts and answers</h2>
<table><colgroup><col class="when"><col><col style="width:35%"></colgroup><thead><tr><th class="when">at</th><th>question</th><th>answer</th></tr></thead><tbody>${rows.join('')}</tbody></table></section>`;
}

function answerHtml(v: unknown): string {
  if (v === '[redacted]') return '<span class="secret">[redacted]</span>';
  if (v === null || v === undefined) return '<span class="muted">(no answer)</span>';
  if (v === true) return 'yes';
  if (v === false) return 'no';
  return esc(valueText(v));
}

function variables(r: RunReport): string {
  if (r.variables.length === 0) return `<section id="variables"><h2>Variables</h2><p class="muted">None.</p></section>`;
  const rows = r.variables.map(
    (v) =>
      `<tr data-variable="${esc(v.name)}"><td class="mono">${esc(v.name)}</td><td class="mono">${v.redacted ? '<span class="secret">[redacted]</span>' : esc(valueText(v.value))}</td><td class="muted">${esc(v.source ?? '')}</td></tr>`,
  );
  return `<section id="variables"><h2>Variables</h2>
<table><colgroup><col style="width:30%"><col><col style="width:7em"></colgroup><thead><tr><th>name</th><th>value</th><th>from</th></tr></thead><tbody>${rows.join('')}</tbody></table>
<p class="muted">Values whose names look like a password, token or key are masked, here and wherever else they appear.</p></section>`;
}

function plans(r: RunReport): string {
  if (r.plans.length === 0) return '';
  const blocks = r.plans.map((p) => {
    const list = (items: string[], cls: string, none: string) =>
      items.length > 0 ? `<ul class="${cls}">${items.map((i) => `<li>${esc(i)}</li>`).join('')}</ul>` : `<p class="muted">${none}</p>`;
    return `<div class="plan">
<p>Shown at ${esc(p.at)}. Recommended source: <span class="mono">${esc(p.recommended ?? '(unknown)')}</span>${p.why ? `, because ${esc(p.why)}` : ''}.</p>
<h3>Kept</h3>${list(p.keeps, 'kept', 'nothing listed')}
<h3>Lost</h3>${list(p.loses, 'lost', 'nothing the sources hold')}
${p.warnings.length > 0 ? `<h3>Warnings</h3>${list(p.warnings, 'warn', '')}` : ''}
${p.command ? `<h3>Command</h3><pre>${esc(p.command)}</pre>` : ''}
${p.text ? `<details><summary>the plan as shown</summary><pre>${esc(p.text)}</pre></details>` : ''}
</div>`;
  });
  return `<section id="plan"><h2>Plan shown</h2>${blocks.join('')}</section>`;
}

function events(r: RunReport): string {
  if (r.events.length === 0) return '';
  const rows = r.events.map(
    (e) =>
      `<tr class="event ${esc(e.kind)}"><td class="when mono">${esc(e.at.slice(11, 23))}</td><td><b>${esc(e.kind)}</b>${e.stepId ? ` <span class="muted">(step ${esc(e.stepId)})</span>` : ''}</td><td>${esc(e.message)}</td></tr>`,
  );
  return `<section id="events"><h2>Notes, warnings and other events</h2>
<table><colgroup><col class="when"><col style="width:30%"><col></colgroup><tbody>${rows.join('')}</tbody></table></section>`;
}

function chain(r: RunReport): string {
  const ok = r.chain.ok;
  return `<section id="chain" class="chain ${ok ? 'ok' : 'bad'}" data-ok="${ok}">
<h2>Audit chain</h2>
<p class="${ok ? '' : 'error'}">${esc(chainSummary(r))}</p>
<dl class="facts"><dt>head</dt><dd class="mono" id="head">${esc(r.head)}</dd><dt>rows</dt><dd>${r.rows}</dd></dl>
<p class="muted">Compare the head with the one printed when the run ended, kept outside the log: <code>lifeboat audit verify --head HASH</code>.</p>
</section>`;
}

function stepTitle(x: ReportStep): string {
  return `step ${x.ordinal} ${x.stepId}${x.attempt > 1 ? ` (attempt ${x.attempt})` : ''}`;
}

function isEmpty(v: unknown): boolean {
  return v === null || v === undefined || (typeof v === 'object' && Object.keys(v).length === 0);
}

function n(x: number): string {
  return String(Math.round(x * 10) / 10);
}

/** Text for HTML content and attribute values. */
export function esc(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch] ?? ch);
}
