// `npm run bench -- idle [--runs N] [--settle S] [--seconds S] [--fsync-seconds S] [--before DIR] [--tls]`:
// what a 3-member cluster costs when nothing uses it, per member: CPU seconds
// (utime + stime of every thread, workers included, from /proc/<pid>/stat), RSS
// and peak RSS (VmRSS, VmHWM) and fsync/fdatasync calls (strace -c -f, in a window
// of its own after the CPU window: tracing slows the process it traces). etcd 3.4
// and Lifeboat run one after the other, N rounds interleaved (A/B/A/B...); the
// table holds medians. --before DIR adds an older Lifeboat build (a worktree of an
// older commit with its own dist/) to every round, for before/after figures. --tls:
// clients and peers of every system on https:// with certificate auth.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { commitOf, median } from './runStats.js';
import { cleanupAll, onCleanup } from './cleanup.js';
import { FigureSet } from './figures.js';
import { describeMachine, describeMachineLine } from './machine.js';
import { markdownTable } from './markdownTable.js';
import { cpuSeconds, statusMiB } from './memberRss.js';
import { benchCerts, startEtcd, startLifeboat, type BenchCluster } from './systems.js';

const USAGE = 'usage: npm run bench -- idle [--runs N] [--settle S] [--seconds S] [--fsync-seconds S|0] [--before DIR] [--tls] [--out DIR] [--tag T]';

interface IdleOptions {
  runs: number;
  settleS: number;
  cpuS: number;
  fsyncS: number;
  before?: string;
  outDir: string;
  tag?: string;
  tls?: true;
}

/** One idle measurement of one cluster: per member, in the order of pids. */
interface IdleSample {
  cpuS: number[];
  rssMiB: number[];
  hwmMiB: number[];
  fsyncs: number[];
}

interface Variant {
  name: string;
  start(): Promise<{ pids: number[]; stop(): Promise<void> }>;
}

function parse(args: string[]): IdleOptions {
  const o: IdleOptions = { runs: 3, settleS: 10, cpuS: 30, fsyncS: 30, outDir: path.join('bench', 'results') };
  for (let i = 0; i < args.length; i++) {
    const v = args[i + 1];
    if (args[i] === '--runs') o.runs = Number(v);
    else if (args[i] === '--settle') o.settleS = Number(v);
    else if (args[i] === '--seconds') o.cpuS = Number(v);
    else if (args[i] === '--fsync-seconds') o.fsyncS = Number(v);
    else if (args[i] === '--before') o.before = path.resolve(v);
    else if (args[i] === '--out') o.outDir = v;
    else if (args[i] === '--tag') o.tag = v;
    else if (args[i] === '--tls') {
      o.tls = true;
      continue;
    } else {
      console.error(USAGE);
      process.exit(2);
    }
    i++;
  }
  if (![o.runs, o.settleS, o.cpuS, o.fsyncS].every((n) => Number.isFinite(n) && n >= 0) || o.runs < 1 || o.cpuS <= 0) {
    console.error(USAGE);
    process.exit(2);
  }
  return o;
}

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;

/** fsync + fdatasync calls of every thread of `pid` over `seconds` (strace -c -f), or NaN without strace. */
async function countFsyncs(pid: number, seconds: number, dir: string): Promise<number> {
  const out = path.join(dir, `strace-${pid}-${Date.now()}.txt`);
  const p = spawn('strace', ['-c', '-f', '-e', 'trace=fsync,fdatasync', '-o', out, '-p', String(pid)], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => p.on('close', () => resolve()));
  const failed = await Promise.race([exited.then(() => true), sleep(seconds * 1000).then(() => false)]);
  if (failed) return NaN;
  p.kill('SIGINT'); // strace detaches and writes its summary
  await Promise.race([exited, sleep(10_000)]);
  if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  let calls = 0;
  for (const line of fs.readFileSync(out, 'utf8').split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length >= 5 && (f[f.length - 1] === 'fsync' || f[f.length - 1] === 'fdatasync')) calls += Number(f[3]);
  }
  fs.rmSync(out, { force: true });
  return calls;
}

async function measure(v: Variant, o: IdleOptions, dir: string): Promise<IdleSample> {
  const c = await v.start();
  const unregister = onCleanup(() => c.stop());
  try {
    await sleep(o.settleS * 1000);
    const before = c.pids.map((p) => cpuSeconds(p));
    await sleep(o.cpuS * 1000);
    const cpuS = c.pids.map((p, i) => cpuSeconds(p) - before[i]);
    const rssMiB = c.pids.map((p) => statusMiB(p, 'VmRSS'));
    const fsyncs = o.fsyncS > 0 ? await Promise.all(c.pids.map((p) => countFsyncs(p, o.fsyncS, dir))) : c.pids.map(() => NaN);
    const hwmMiB = c.pids.map((p) => statusMiB(p, 'VmHWM'));
    return { cpuS, rssMiB, hwmMiB, fsyncs };
  } finally {
    await c.stop();
    unregister();
  }
}

function variant(name: string, start: () => Promise<BenchCluster>): Variant {
  return {
    name,
    async start() {
      const c = await start();
      return { pids: c.pids(), stop: () => c.stop() };
    },
  };
}

export async function run(args: string[]): Promise<void> {
  const o = parse(args);
  const machine = describeMachine(os.tmpdir());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-idle-'));
  const certs = o.tls ? await benchCerts() : undefined;
  const variants: Variant[] = [variant('etcd', () => startEtcd(certs)), variant(`Lifeboat ${commitOf('.')}`, () => startLifeboat(undefined, certs))];
  // The older build's own test support, so its members run its own bin/run.js.
  if (o.before) variants.push(variant(`Lifeboat ${commitOf(o.before)} (--before)`, () => startLifeboat(o.before, certs)));
  const samples = new Map<string, IdleSample[]>(variants.map((v) => [v.name, []]));
  const started = Date.now();
  try {
    for (let r = 0; r < o.runs; r++) {
      for (const v of variants) {
        const s = await measure(v, o, dir);
        samples.get(v.name)?.push(s);
        const f = (xs: number[], d = 2) => xs.map((x) => x.toFixed(d)).join(' ');
        console.log(
          `round ${r + 1}/${o.runs} ${v.name}: CPU s ${f(s.cpuS)}, RSS MiB ${f(s.rssMiB, 1)}, HWM MiB ${f(s.hwmMiB, 1)}, fsyncs ${f(s.fsyncs, 0)} (load ${os.loadavg()[0].toFixed(2)})`,
        );
      }
    }
  } finally {
    await cleanupAll();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  // Per run: CPU and fsyncs averaged over the three members, RSS the largest of three; then the median of the runs.
  const perRun = (name: string, pick: (s: IdleSample) => number) => median((samples.get(name) ?? []).map(pick));
  const rows = [
    { id: 'cpu', label: `CPU per idle member, ${o.cpuS} s (utime+stime, all threads)`, unit: 's', pick: (s: IdleSample) => mean(s.cpuS) },
    { id: 'rss', label: 'member RSS, idle (largest of 3)', unit: 'MiB', pick: (s: IdleSample) => Math.max(...s.rssMiB) },
    { id: 'hwm', label: 'member peak RSS (VmHWM, largest of 3)', unit: 'MiB', pick: (s: IdleSample) => Math.max(...s.hwmMiB) },
    { id: 'fsync', label: `fsync+fdatasync per idle member, ${o.fsyncS} s`, unit: '', pick: (s: IdleSample) => mean(s.fsyncs) },
  ];
  const figures = new FigureSet();
  for (const v of variants.slice(1)) {
    for (const row of rows) {
      const spec = { id: `${row.id}-${v.name}`, label: `${row.label}: ${v.name}`, unit: row.unit, better: 'lower' as const };
      figures.set('etcd', spec, perRun('etcd', row.pick));
      figures.set('lifeboat', spec, perRun(v.name, row.pick));
    }
  }
  const header = [
    `Machine: ${describeMachineLine(machine)}.`,
    `Idle 3-member clusters on 127.0.0.1${o.tls ? ' with TLS on both sides (clients and peers on https://, certificate auth)' : ''}: ${o.settleS} s settle, CPU over ${o.cpuS} s, then fsyncs over ${o.fsyncS} s (strace -c -f); ${o.runs} interleaved rounds of ${variants.map((v) => v.name).join(', ')}; medians. ${((Date.now() - started) / 60_000).toFixed(1)} min, load average at end ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}.`,
  ].join('\n');
  const table = markdownTable(figures.figures);
  console.log(`\n${header}\n\n${table}\n`);
  fs.mkdirSync(o.outDir, { recursive: true });
  const base = path.join(o.outDir, `${new Date().toISOString().slice(0, 10)}-idle${o.tls ? '-tls' : ''}${o.tag ? `-${o.tag}` : ''}`);
  fs.writeFileSync(`${base}.md`, `${header}\n\n${table}\n`);
  fs.writeFileSync(
    `${base}.json`,
    JSON.stringify({ date: new Date().toISOString(), machine, options: o, figures: figures.figures, raw: Object.fromEntries(samples) }, null, 2) + '\n',
  );
  console.log(`written ${base}.md and .json`);
}
