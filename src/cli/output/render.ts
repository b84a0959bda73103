// A command's result as text in the --write-out format chosen (BaseCommand.print
// and the commands that run without oclif print through this).
import type { WriteOut } from '../connectionFlags.js';
import { toJson } from './json.js';
import { renderTable } from './table.js';

/** How one result prints in each --write-out format. */
export interface Renderer<T> {
  simple: (r: T) => string;
  /** absent: a one-row table of the JSON view's fields when flat, else the simple form */
  table?: (r: T) => string;
  /** absent: the result itself (bigints, the IDs, as decimal numbers: etcdctl's uint64s) */
  json?: (r: T) => unknown;
}

/** `result` in the format `writeOut`, without a final newline; `simple` renders the human form. */
export function render<T>(writeOut: WriteOut, result: T, renderer: ((r: T) => string) | Renderer<T>): string {
  const r: Renderer<T> = typeof renderer === 'function' ? { simple: renderer } : renderer;
  let text: string;
  if (writeOut === 'json') {
    text = toJson(r.json ? r.json(result) : result);
  } else if (writeOut === 'table') {
    text = r.table ? r.table(result) : (genericTable(r.json ? r.json(result) : result) ?? r.simple(result));
  } else {
    text = r.simple(result);
  }
  return text.replace(/\n$/, '');
}

function genericTable(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.some(([, v]) => typeof v === 'object' && v !== null)) return undefined;
  return renderTable(
    entries.map(([k]) => k.toUpperCase()),
    [entries.map(([, v]) => (typeof v === 'bigint' ? v.toString(16) : String(v)))],
  );
}
