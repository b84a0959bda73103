// Drills in `lifeboat audit report`: one drill's RTO breakdown (a bar chart in
// the HTML page, a table in Markdown) and `--drills`, the history of every
// drill's RTO over time (a chart and a table in HTML, a table in Markdown). Inline
// SVG only: nothing is fetched and no script runs.
import type { DrillHistory, DrillSummary } from '../../audit/drillRuns.js';

/** Text for HTML content and attribute values (as reportHtml.ts's, which imports this file). */
function esc(s: string): string {
  return s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[ch] ?? ch);
}

const PHASE_COLOURS = ['#0969da', '#8250df', '#1a7f37', '#bf8700', '#cf222e', '#57606a'];

function colourOf(phase: string): string {
  if (phase === 'snapshot') return PHASE_COLOURS[0];
  if (phase === 'restore') return PHASE_COLOURS[1];
  if (phase === 'first-write') return PHASE_COLOURS[2];
  return PHASE_COLOURS[3];
}

function s(x: number | null): string {
  return x === null ? '—' : `${x.toFixed(x < 10 ? 2 : 1)}s`;
}

function n(x: number): string {
  return String(Math.round(x * 10) / 10);
}

/** One drill's phases as horizontal bars, longest the full width. */
export function drillRtoSvg(d: DrillSummary): string {
  const width = 720;
  const gutter = 170;
  const right = 70;
  const row = 24;
  const plot = width - gutter - right;
  const rows = [
    ...d.phases.map((p) => ({ label: p.label, seconds: p.seconds, colour: colourOf(p.phase), id: p.phase })),
    ...(d.writableSeconds !== null ? [{ label: 'writable after', seconds: d.writableSeconds, colour: '#1f2328', id: 'writable' }] : []),
    ...(d.totalSeconds !== null && d.members > 1 ? [{ label: 'all members caught up', seconds: d.totalSeconds, colour: '#1f2328', id: 'total' }] : []),
  ];
  const max = Math.max(0.001, ...rows.map((r) => r.seconds));
  const height = rows.length * row + 8;
  const bars = rows.map((r, i) => {
    const y = 4 + i * row;
    const w = Math.max(2, (r.seconds / max) * plot);
    return `<g class="rto" data-phase="${esc(r.id)}" data-seconds="${r.seconds}"><title>${esc(r.label)}: ${s(r.seconds)}</title>
<text x="${gutter - 6}" y="${y + 16}" text-anchor="end">${esc(r.label)}</text>
<rect x="${gutter}" y="${y + 5}" width="${n(w)}" height="14" rx="2" fill="${r.colour}"/>
<text x="${n(gutter + w + 4)}" y="${y + 16}">${s(r.seconds)}</text></g>`;
  });
  return `<svg class="chart" viewBox="0 0 ${width} ${height}" role="img" aria-label="recovery time per phase" xmlns="http://www.w3.org/2000/svg">
${bars.join('\n')}
</svg>`;
}

/** What the scratch cluster was restored from: a snapshot, or a backup replayed to a revision (`backup verify`). */
function restoredFrom(d: DrillSummary): string {
  if (d.backup)
    return `, replayed from the backup of cluster ${d.backup.clusterId} in ${d.backup.store} to revision ${d.backup.revision} (${d.keys ?? '?'} keys, ${d.backup.objects.length} objects)`;
  return d.snapshotRevision !== null ? `, restored from a snapshot at revision ${d.snapshotRevision} (${d.keys ?? '?'} keys)` : '';
}

/** The drill section of a run's HTML page. */
export function drillSectionHtml(d: DrillSummary): string {
  const checks = d.checks.map(
    (c) =>
      `<tr class="check ${c.ok ? 'ok' : 'failed'}" data-check="${esc(c.name)}"><td>${c.ok ? '<span class="badge succeeded">ok</span>' : '<span class="badge failed">failed</span>'}</td><td><b>${esc(c.name)}</b></td><td>${esc(c.detail)}</td></tr>`,
  );
  return `<section id="drill" data-passed="${d.passed}">
<h2>Recovery drill: ${d.passed ? 'passed' : 'failed'}</h2>
<p>${esc(d.runtime)} scratch cluster of ${d.members} member${d.members === 1 ? '' : 's'}${esc(restoredFrom(d))}${d.comparison ? `; data compared by ${d.comparison === 'hashkv' ? 'HashKV' : 'sampled keys'}` : ''}.</p>
<h3>Recovery time demonstrated (RTO)</h3>
${d.phases.length > 0 ? drillRtoSvg(d) : '<p class="muted">No phase was measured.</p>'}
<table class="checks"><colgroup><col style="width:6em"><col style="width:7em"><col></colgroup><tbody>${checks.join('')}</tbody></table>
</section>`;
}

/** The drill section of a run's Markdown report. */
export function drillSectionMarkdown(d: DrillSummary): string[] {
  const out = [`### Recovery drill: ${d.passed ? 'passed' : '**FAILED**'}`, ''];
  out.push(
    `${d.runtime} scratch cluster of ${d.members} member${d.members === 1 ? '' : 's'}${restoredFrom(d)}${d.comparison ? `; data compared by ${d.comparison === 'hashkv' ? 'HashKV' : 'sampled keys'}` : ''}.`,
    '',
  );
  out.push('| phase | seconds |', '|---|---:|');
  for (const p of d.phases) out.push(`| ${p.label} | ${p.seconds.toFixed(3)} |`);
  if (d.writableSeconds !== null) out.push(`| **writable after** | **${d.writableSeconds.toFixed(3)}** |`);
  if (d.totalSeconds !== null && d.members > 1) out.push(`| **all members caught up** | **${d.totalSeconds.toFixed(3)}** |`);
  out.push('', '| check | result | detail |', '|---|---|---|');
  for (const c of d.checks) out.push(`| ${c.name} | ${c.ok ? 'ok' : '**FAILED**'} | ${c.detail.replace(/\|/g, '\\|').replace(/\r?\n/g, ' ')} |`);
  out.push('');
  return out;
}

// ---- the history (--drills) --------------------------------------------------

const HISTORY_CSS = `
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1f2328; background: #f6f8fa; overflow-wrap: anywhere; }
main { max-width: 1100px; margin: 0 auto; padding: 16px; }
section { background: #fff; border: 1px solid #d0d7de; border-radius: 8px; padding: 12px 16px; margin: 0 0 16px; }
h1 { font-size: 20px; margin: 0 0 8px; } h2 { font-size: 16px; margin: 0 0 8px; }
table { width: 100%; border-collapse: collapse; } th, td { text-align: left; padding: 4px 6px; border-bottom: 1px solid #d0d7de; overflow-wrap: normal; }
td.num, th.num { text-align: right; white-space: nowrap; } .scroll { overflow-x: auto; } .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12.5px; }
.failed { color: #cf222e; font-weight: 600; } .muted { color: #57606a; }
svg.chart { display: block; width: 100%; height: auto; } svg.chart text { font: 11px system-ui, sans-serif; fill: #1f2328; } svg.chart .axis { stroke: #d0d7de; }
.legend span { margin-right: 12px; white-space: nowrap; } .legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; }
@media (max-width: 600px) { main { padding: 8px; } svg.chart text { font-size: 16px; } }
`;

/** Seconds of a drill by kind of phase: snapshot, restore, first write, the members. */
function stack(d: DrillSummary): Array<{ phase: string; seconds: number; measured: boolean }> {
  const sum = (f: (p: string) => boolean) => {
    const ps = d.phases.filter((p) => f(p.phase));
    return { seconds: ps.reduce((a, p) => a + p.seconds, 0), measured: ps.length > 0 };
  };
  return [
    { phase: 'snapshot', ...sum((p) => p === 'snapshot') },
    { phase: 'restore', ...sum((p) => p === 'restore') },
    { phase: 'first-write', ...sum((p) => p === 'first-write') },
    { phase: 'members', ...sum((p) => p.startsWith('member:')) },
  ];
}

/** A kind of phase's seconds in a table: — when the drill did not measure it (a given snapshot, one member). */
function partText(sum: DrillSummary | null, phase: string): string {
  const x = sum ? stack(sum).find((p) => p.phase === phase) : undefined;
  return x?.measured ? s(x.seconds) : '—';
}

/** Each drill a stacked bar (phases), oldest on the left; a failed drill is marked with ✗. */
function historySvg(h: DrillHistory): string {
  const drills = h.drills.filter((d) => d.summary !== null);
  const width = 720;
  const left = 48;
  const bottom = 40;
  const top = 10;
  const plotH = 200;
  const plotW = width - left - 10;
  const max = Math.max(0.001, ...drills.map((d) => stack(d.summary as DrillSummary).reduce((a, p) => a + p.seconds, 0)));
  const slot = plotW / Math.max(1, drills.length);
  const barW = Math.max(3, Math.min(40, slot * 0.7));
  const y0 = top + plotH;
  // Dates under the bars; times of day when every drill shown is from the same day.
  const oneDay = new Set(drills.map((d) => d.startedAt.slice(0, 10))).size === 1;
  const bars = drills.map((d, i) => {
    const sum = d.summary as DrillSummary;
    const x = left + i * slot + (slot - barW) / 2;
    let y = y0;
    const parts = stack(sum)
      .filter((p) => p.seconds > 0)
      .map((p) => {
        const hgt = (p.seconds / max) * plotH;
        y -= hgt;
        return `<rect x="${n(x)}" y="${n(y)}" width="${n(barW)}" height="${n(Math.max(0.5, hgt))}" fill="${colourOf(p.phase === 'members' ? 'member:' : p.phase)}"/>`;
      });
    const mark = sum.passed ? '' : `<text x="${n(x + barW / 2)}" y="${n(y - 3)}" text-anchor="middle" fill="#cf222e">✗</text>`;
    const label =
      drills.length <= 12 || i % Math.ceil(drills.length / 12) === 0
        ? `<text x="${n(x + barW / 2)}" y="${y0 + 14}" text-anchor="middle">${esc(oneDay ? d.startedAt.slice(11, 16) : d.startedAt.slice(5, 10))}</text>`
        : '';
    return `<g class="drill" data-run-id="${esc(d.runId)}" data-passed="${sum.passed}"><title>${esc(d.runId)} ${esc(d.startedAt)}: ${sum.passed ? 'passed' : 'failed'}, writable after ${s(sum.writableSeconds)}, all members ${s(sum.totalSeconds)}</title>${parts.join('')}${mark}${label}</g>`;
  });
  const ticks = [0, 0.5, 1].map(
    (f) =>
      `<line class="axis" x1="${left}" y1="${n(y0 - f * plotH)}" x2="${width - 10}" y2="${n(y0 - f * plotH)}"/><text x="${left - 4}" y="${n(y0 - f * plotH + 4)}" text-anchor="end">${s(max * f)}</text>`,
  );
  return `<svg class="chart" viewBox="0 0 ${width} ${top + plotH + bottom}" role="img" aria-label="recovery time of each drill over time" xmlns="http://www.w3.org/2000/svg">
${ticks.join('')}
${bars.join('\n')}
</svg>`;
}

/** `audit report --drills` as one self-contained HTML page. */
export function renderDrillHistoryHtml(h: DrillHistory): string {
  const rows = h.drills.map((d) => {
    const sum = d.summary;
    const part = (p: string) => partText(sum, p);
    return `<tr data-run-id="${esc(d.runId)}"><td class="mono">${esc(d.startedAt.slice(0, 19).replace('T', ' '))}</td><td class="mono">${esc(d.runId)}</td><td>${sum ? `${esc(sum.runtime)}, ${sum.members}` : '—'}</td><td class="${sum?.passed ? '' : 'failed'}">${sum ? (sum.passed ? 'passed' : 'failed') : esc(d.outcome)}</td><td class="num">${part('snapshot')}</td><td class="num">${part('restore')}</td><td class="num">${part('first-write')}</td><td class="num">${part('members')}</td><td class="num"><b>${s(sum?.writableSeconds ?? null)}</b></td><td class="num">${s(sum?.totalSeconds ?? null)}</td></tr>`;
  });
  const legend = ['snapshot', 'restore', 'first-write', 'member:']
    .map(
      (p) =>
        `<span><i style="background:${colourOf(p)}"></i>${p === 'member:' ? 'members caught up' : p === 'first-write' ? 'start to first write' : p}</span>`,
    )
    .join('');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>Recovery drills</title>
<style>${HISTORY_CSS}</style>
</head>
<body>
<main>
<section id="drills" data-count="${h.drills.length}">
<h1>Recovery drills</h1>
<p>${h.drills.length} drill${h.drills.length === 1 ? '' : 's'} in ${esc(h.auditDb)}; ${h.drills.filter((d) => d.summary?.passed).length} passed.</p>
${h.drills.some((d) => d.summary) ? `<p class="legend">${legend}</p>${historySvg(h)}` : '<p class="muted">No drill recorded yet: run lifeboat drill.</p>'}
</section>
<section>
<h2>Every drill</h2>
<div class="scroll"><table><thead><tr><th>started (UTC)</th><th>run</th><th>runtime, members</th><th>result</th><th class="num">snapshot</th><th class="num">restore</th><th class="num">first write</th><th class="num">members</th><th class="num">writable</th><th class="num">total</th></tr></thead>
<tbody>${rows.join('\n')}</tbody></table></div>
</section>
<p class="muted">Generated ${esc(h.generatedAt)} by lifeboat audit report --drills.</p>
</main>
</body>
</html>
`;
}

/** `audit report --drills --markdown`. */
export function renderDrillHistoryMarkdown(h: DrillHistory): string {
  const out = [`## Recovery drills`, '', `${h.drills.length} drill${h.drills.length === 1 ? '' : 's'} in \`${h.auditDb}\`.`, ''];
  if (h.drills.length === 0) out.push('No drill recorded yet: run `lifeboat drill`.', '');
  else {
    out.push(
      '| started (UTC) | run | runtime | members | result | snapshot | restore | first write | members caught up | writable | total |',
      '|---|---|---|---:|---|---:|---:|---:|---:|---:|---:|',
    );
    for (const d of h.drills) {
      const sum = d.summary;
      const part = (p: string) => partText(sum, p);
      out.push(
        `| ${d.startedAt.slice(0, 19).replace('T', ' ')} | \`${d.runId}\` | ${sum?.runtime ?? '—'} | ${sum?.members ?? '—'} | ${sum ? (sum.passed ? 'passed' : '**failed**') : d.outcome} | ${part('snapshot')} | ${part('restore')} | ${part('first-write')} | ${part('members')} | ${s(sum?.writableSeconds ?? null)} | ${s(sum?.totalSeconds ?? null)} |`,
      );
    }
    out.push('');
  }
  out.push(`_Generated ${h.generatedAt} by lifeboat audit report --drills._`);
  return `${out.join('\n')}\n`;
}
