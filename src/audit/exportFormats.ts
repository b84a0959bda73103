// `lifeboat audit export`: the whole log (or one run) as JSON, or as CSV with one
// row per step and per event, for spreadsheets and ticket attachments.
import type { AuditExport } from './queries.js';

export const EXPORT_FORMATS = ['json', 'csv'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

export const CSV_COLUMNS = [
  'run_id',
  'playbook',
  'run_outcome',
  'seq',
  'record',
  'at',
  'ordinal',
  'attempt',
  'step_id',
  'name',
  'type',
  'status',
  'ended_at',
  'duration_ms',
  'kind',
  'message',
  'error',
  'inputs',
  'outputs',
  'data',
] as const;

type CsvRow = Partial<Record<(typeof CSV_COLUMNS)[number], string | number | null>>;

export function exportJson(data: AuditExport): string {
  return `${JSON.stringify(data, null, 2)}\n`;
}

/**
 * RFC 4180 CSV (CRLF line ends, a header row): per run, its steps and events in
 * the order they were written. `at` is a step's start; JSON columns hold JSON text.
 */
export function exportCsv(data: AuditExport): string {
  const rows: CsvRow[] = [];
  for (const run of data.runs) {
    const base = { run_id: run.id, playbook: run.playbook, run_outcome: run.outcome };
    const entries: Array<[number, CsvRow]> = [
      ...run.steps.map((s): [number, CsvRow] => [
        s.seq,
        {
          ...base,
          seq: s.seq,
          record: 'step',
          at: s.startedAt,
          ordinal: s.ordinal,
          attempt: s.attempt,
          step_id: s.stepId,
          name: s.name,
          type: s.type,
          status: s.status,
          ended_at: s.endedAt,
          duration_ms: s.durationMs,
          error: s.error,
          inputs: jsonCell(s.inputs),
          outputs: jsonCell(s.outputs),
        },
      ]),
      ...run.events.map((e): [number, CsvRow] => [
        e.seq,
        { ...base, seq: e.seq, record: 'event', at: e.at, kind: e.kind, message: e.message, data: jsonCell(e.data) },
      ]),
    ];
    entries.sort((a, b) => a[0] - b[0]);
    rows.push(...entries.map(([, r]) => r));
  }
  const lines = [CSV_COLUMNS.join(','), ...rows.map((r) => CSV_COLUMNS.map((c) => csvCell(r[c])).join(','))];
  return `${lines.join('\r\n')}\r\n`;
}

function jsonCell(v: unknown): string | null {
  return v === null || v === undefined ? null : JSON.stringify(v);
}

function csvCell(v: string | number | null | undefined): string {
  if (v === null || v === undefined) return '';
  const s = String(v);
  return /[",\r\n]/.test(s) ? `"${s.replaceAll('"', '""')}"` : s;
}
