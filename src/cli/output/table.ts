// ASCII tables in etcdctl's style (+---+ borders, centred headers), via cli-table3.
import Table from 'cli-table3';

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
  const table = new Table({
    // cli-table3 accepts cell objects in the head at runtime; its types say string[].
    head: head.map((h) => ({ content: h, hAlign: 'center' })) as unknown as string[],
    chars: ASCII,
    style: { head: [], border: [], compact: true, 'padding-left': 1, 'padding-right': 1 },
    colAligns: head.map((_, i) => (right.has(i) ? 'right' : 'left')),
  });
  for (const r of rows) table.push(r.map((c) => String(c)));
  return table.toString();
}
