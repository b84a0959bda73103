// A hand-written SVG bar chart: for each figure, how many times better (right of
// the 1× line) or worse (left) Lifeboat is than etcd, on a log₂ scale so 2× better
// and 2× worse are the same length.
import { advantage, type Figure } from './figures.js';

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

export function svgChart(figures: Figure[], title: string): string {
  const rows = figures.map((f) => ({ f, a: advantage(f) })).filter((r): r is { f: Figure; a: number } => r.a !== undefined && Number.isFinite(r.a) && r.a > 0);
  const labelW = 360;
  const plotW = 480;
  const rowH = 22;
  const top = 56;
  const width = labelW + plotW + 90;
  const height = top + rows.length * rowH + 40;
  const span = Math.max(2, Math.ceil(Math.max(1, ...rows.map((r) => Math.abs(Math.log2(r.a)))))); // ± log2 range
  const mid = labelW + plotW / 2;
  const x = (a: number) => mid + (Math.max(-span, Math.min(span, Math.log2(a))) / span) * (plotW / 2);
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="10" y="20" font-size="15" font-weight="bold">${esc(title)}</text>`,
    `<text x="10" y="38" fill="#555">Lifeboat relative to etcd 3.4 (log scale): right of 1× Lifeboat is better, left it is worse</text>`,
  ];
  for (let k = -span; k <= span; k++) {
    const gx = mid + (k / span) * (plotW / 2);
    out.push(`<line x1="${gx}" y1="${top - 6}" x2="${gx}" y2="${top + rows.length * rowH}" stroke="${k === 0 ? '#000' : '#ddd'}"/>`);
    out.push(`<text x="${gx}" y="${top + rows.length * rowH + 16}" text-anchor="middle" fill="#555">${k >= 0 ? 2 ** k : `1/${2 ** -k}`}×</text>`);
  }
  rows.forEach(({ f, a }, i) => {
    const y = top + i * rowH;
    const x1 = Math.min(mid, x(a));
    const w = Math.max(1, Math.abs(x(a) - mid));
    out.push(`<text x="${labelW - 8}" y="${y + 15}" text-anchor="end">${esc(f.label)}</text>`);
    out.push(`<rect x="${x1}" y="${y + 4}" width="${w}" height="${rowH - 8}" fill="${a >= 1 ? '#2a9d4b' : '#d1495b'}"/>`);
    out.push(`<text x="${labelW + plotW + 8}" y="${y + 15}">${a >= 1 ? a.toFixed(2) : `1/${(1 / a).toFixed(2)}`}×</text>`);
  });
  out.push('</svg>');
  return out.join('\n') + '\n';
}
