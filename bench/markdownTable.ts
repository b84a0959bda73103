// The report as a Markdown table: figure, etcd, Lifeboat, Lifeboat ÷ etcd.
import { formatValue, ratio, type Figure } from './figures.js';

const cell = (f: Figure, s: 'etcd' | 'lifeboat') => {
  const t = f.text?.[s];
  const v = formatValue(f[s], f.unit);
  return t ? (Number.isFinite(f[s]) ? `${t}, ${v}` : t) : v;
};

export function markdownTable(figures: Figure[]): string {
  const rows = figures.map((f) => {
    const r = ratio(f);
    return `| ${f.label} (${f.better === 'higher' ? '↑' : '↓'})${f.note ? ` ${f.note}` : ''} | ${cell(f, 'etcd')} | ${cell(f, 'lifeboat')} | ${r === undefined ? '—' : `${r.toFixed(2)}×`} |`;
  });
  return ['| figure (↑ higher is better, ↓ lower is better) | etcd 3.4 | Lifeboat | Lifeboat ÷ etcd |', '|---|---:|---:|---:|', ...rows].join('\n');
}
