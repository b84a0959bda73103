// `npm run bench -- medians RUN.json RUN.json RUN.json... [--out FILE.md]`: the
// issue's targets are medians of several `cluster` runs (each runs etcd, then
// Lifeboat, so runs one after the other interleave the two). Per figure: each
// system's median over the runs, the median of the per-run ratios (a noisy run
// moves both systems alike), and the runs' ratios themselves.
import fs from 'node:fs';
import path from 'node:path';
import type { CheckPerfResult } from './checkPerf.js';
import { formatValue, ratio, type Figure } from './figures.js';
import { median } from './runStats.js';

const USAGE = 'usage: npm run bench -- medians RUN.json RUN.json... [--out FILE.md]';

interface Run {
  file: string;
  status: string;
  figures: Figure[];
  machine: { loadAverageAtStart?: number[] };
  raw?: { checkPerfCeiling?: CheckPerfResult[] };
}

const finite = (xs: Array<number | undefined>): number[] => xs.filter((x): x is number => Number.isFinite(x));

export function run(args: string[]): Promise<void> {
  const files: string[] = [];
  let out: string | undefined;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--out') out = args[++i];
    else files.push(args[i]);
  }
  if (files.length < 2 || (out !== undefined && !out.endsWith('.md'))) {
    console.error(USAGE);
    process.exit(2);
  }
  const runs: Run[] = files.map((file) => {
    try {
      return { file, ...(JSON.parse(fs.readFileSync(file, 'utf8')) as Omit<Run, 'file'>) };
    } catch (e) {
      console.error(`cannot read ${file}: ${(e as Error).message}; give the .json files that npm run bench -- cluster wrote`);
      process.exit(2);
    }
  });
  const ids = [...new Set(runs.flatMap((r) => r.figures.map((f) => f.id)))];
  const rows = ids.map((id) => {
    const each = runs.map((r) => r.figures.find((f) => f.id === id));
    const first = each.find((f) => f !== undefined)!;
    const m = (s: 'etcd' | 'lifeboat') => {
      const xs = finite(each.map((f) => f?.[s]));
      return xs.length > 0 ? formatValue(median(xs), first.unit) : '—';
    };
    const ratios = finite(each.map((f) => (f ? ratio(f) : undefined)));
    const verdicts = (s: 'etcd' | 'lifeboat') => each.map((f) => f?.text?.[s]).filter(Boolean);
    const text = (s: 'etcd' | 'lifeboat') => (verdicts(s).length > 0 ? `${verdicts(s).join('/')}, ` : '');
    return `| ${first.label} (${first.better === 'higher' ? '↑' : '↓'}) | ${text('etcd')}${m('etcd')} | ${text('lifeboat')}${m('lifeboat')} | ${
      ratios.length > 0 ? `${median(ratios).toFixed(2)}×` : '—'
    } | ${ratios.map((r) => r.toFixed(2)).join(' / ') || '—'} |`;
  });
  const loads = runs.map((r) => r.machine.loadAverageAtStart?.[0]?.toFixed(2) ?? '?');
  const perfLoads = [...new Set(runs.flatMap((r) => r.raw?.checkPerfCeiling?.map((c) => c.load) ?? []))];
  const perfCeiling = perfLoads.map((load) => {
    const each = runs.map((r) => r.raw?.checkPerfCeiling?.find((c) => c.load === load));
    return `--load=${load} ${each.map((c) => (c ? `${c.pass ? 'PASS' : 'FAIL'} ${c.writesPerSecond}` : '—')).join(' / ')}`;
  });
  const header = [
    `Medians of ${runs.length} \`npm run bench -- cluster\` runs (${runs.map((r) => `${path.basename(r.file)}: ${r.status}`).join('; ')}).`,
    `Load average (1 min) at each run's start: ${loads.join(' / ')}.`,
    ...(perfCeiling.length > 0 ? [`etcdctl check perf against no-op servers, writes/s in each run: ${perfCeiling.join('; ')}.`] : []),
  ].join('\n');
  const table = [
    '| figure (↑ higher is better, ↓ lower is better) | etcd 3.4 | Lifeboat | Lifeboat ÷ etcd, median of the runs | each run |',
    '|---|---:|---:|---:|---|',
    ...rows,
  ].join('\n');
  console.log(`${header}\n\n${table}`);
  if (out) {
    fs.writeFileSync(`${out}.tmp`, `${header}\n\n${table}\n`);
    fs.renameSync(`${out}.tmp`, out);
    console.log(`\nwritten ${out}`);
  }
  return Promise.resolve();
}
