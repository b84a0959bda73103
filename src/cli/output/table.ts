// ASCII tables in etcdctl's style (+---+ borders, centred headers), via cli-table3.
import { createRequire } from 'node:module';
import type TableClass from 'cli-table3';

// Loaded at the first table, not with every command that might print one: it
// is most of what a command's own imports cost at start-up (9 ms, measured).
const require = createRequire(import.meta.url);
let loaded: typeof TableClass | undefined;
const Table = (): typeof TableClass => (loaded ??= require('cli-table3') as typeof TableClass);

const ASCII = {
  top: '-',
  'top-mid': '+',
  'top-left': '+',
  'top-right': '+',
  bottom: '-',
  'bottom-mid': '+',
  'bottom-left': '+',
  'bottom-right': '+',
  left: '|',
  'left-mid': '+',
  mid: '-',
  'mid-mid': '+',
  right: '|',
  'right-mid': '+',
  middle: '|',
};

/** Columns listed in `right` are right-aligned (numbers, booleans), as etcdctl does. */
export function renderTable(head: string[], rows: Array<Array<string | number | boolean>>, opts: { right?: number[] } = {}): string {
  const right = new Set(opts.right ?? []);
  const table = new (Table())({
    // cli-table3 accepts cell objects in the head at runtime; its types say string[].
    head: head.map((h) => ({ content: h, hAlign: 'center' })) as unknown as string[],
    chars: ASCII,
    style: { head: [], border: [], compact: true, 'padding-left': 1, 'padding-right': 1 },
    colAligns: head.map((_, i) => (right.has(i) ? 'right' : 'left')),
  });
  for (const r of rows) table.push(r.map((c) => String(c)));
  return table.toString();
}
