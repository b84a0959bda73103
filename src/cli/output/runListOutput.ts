// `lifeboat audit list`'s output: one line per run (ID, start, playbook, who,
// outcome, reason), oldest first.
import type { Renderer } from '../baseCommand.js';
import { renderTable } from './table.js';
import type { RunRecord } from '../../audit/types.js';

const HEAD = ['ID', 'STARTED', 'PLAYBOOK', 'WHO', 'OUTCOME', 'REASON'];

function row(r: RunRecord): string[] {
  // Whole seconds are enough to tell runs apart by eye; `show` and -w json have milliseconds.
  return [r.id, r.startedAt.replace(/\.\d+Z$/, 'Z'), r.playbook, `${r.user}@${r.host}`, r.outcome, oneLine(r.reason)];
}

/** Runs, oldest first; `auditDb` names the file when there are none. */
export function runListOutput(auditDb: string): Renderer<RunRecord[]> {
  return {
    simple: (runs) => (runs.length === 0 ? `no runs recorded in ${auditDb}` : alignedColumns([HEAD, ...runs.map(row)])),
    table: (runs) => renderTable(HEAD, runs.map(row)),
    json: (runs) => runs,
  };
}

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
function alignedColumns(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ');
}
