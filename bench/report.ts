// Writes a run's figures as bench/results/<date>.json, .md and .svg and prints
// the table. Also used for a run cut short, whose report says so.
import fs from 'node:fs';
import path from 'node:path';
import type { CheckPerfResult } from './checkPerf.js';
import type { ClusterOptions } from './clusterOptions.js';
import type { Figure } from './figures.js';
import type { LoadResult } from './loadGenerator.js';
import { describeMachineLine, type Machine } from './machine.js';
import { markdownTable } from './markdownTable.js';
import { svgChart } from './svgChart.js';

export interface Report {
  outDir: string;
  tag?: string;
  options: ClusterOptions;
  machine: Machine;
  figures: Figure[];
  raw: Record<string, unknown>;
  /** 'complete', or why the run ended early */
  status: string;
  ceiling?: LoadResult;
  /** etcdctl check perf against the same no-op servers, per load */
  checkPerfCeiling?: CheckPerfResult[];
  minutes: number;
}

export function writeReport(r: Report): string {
  const date = new Date().toISOString().slice(0, 10);
  const base = path.join(r.outDir, `${date}${r.options.quick ? '-quick' : ''}${r.options.tls ? '-tls' : ''}${r.tag ? `-${r.tag}` : ''}`);
  fs.mkdirSync(r.outDir, { recursive: true });
  const o = r.options;
  const header = [
    `Machine: ${describeMachineLine(r.machine)}.`,
    `Load generator: ${o.workers} worker processes, our own gRPC client, ${o.valueSize}-byte values, ${o.seconds} s per load point after ${o.warmupSeconds} s of 16-client puts on each system (warm-up)` +
      (r.ceiling
        ? `; its ceiling against no-op gRPC servers: ${Math.round(r.ceiling.perSecond).toLocaleString('en-US')} puts/s at ${r.ceiling.clients} clients (p50 ${r.ceiling.p50Ms.toFixed(2)} ms).`
        : '.'),
    ...(r.checkPerfCeiling?.length
      ? [
          `etcdctl check perf against the same no-op servers (plaintext), the tool's own ceiling here: ${r.checkPerfCeiling
            .map((c) => `--load=${c.load} ${c.pass ? 'PASS' : 'FAIL'} at ${c.writesPerSecond.toLocaleString('en-US')} writes/s`)
            .join(', ')}.`,
        ]
      : []),
    ...(o.tls ? ['TLS: clients and peers of every system on https:// with certificate auth (the recovery figure without).'] : []),
    `Run: ${r.status}, ${r.minutes.toFixed(1)} min.`,
  ].join('\n');
  const table = markdownTable(r.figures);
  fs.writeFileSync(
    `${base}.json`,
    JSON.stringify({ date: new Date().toISOString(), status: r.status, machine: r.machine, options: o, figures: r.figures, raw: r.raw }, null, 2) + '\n',
  );
  fs.writeFileSync(`${base}.md`, `${header}\n\n${table}\n`);
  fs.writeFileSync(
    `${base}.svg`,
    svgChart(r.figures, `Lifeboat vs etcd ${r.machine.etcd}, ${date}${o.quick ? ' (quick)' : ''}${r.status === 'complete' ? '' : ' (incomplete)'}`),
  );
  console.log(`\n${header}\n\n${table}\n`);
  return base;
}
