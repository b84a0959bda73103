// `npm run bench -- puts [--runs N] [--clients 1,16,100] [--seconds S] [--before DIR]... [--tls]`:
// put throughput and latency of a fresh 3-member cluster, etcd 3.4 and Lifeboat
// (and older Lifeboat builds, one per --before) started one after the other in N
// interleaved rounds, so a busy machine weighs on every system alike; the table
// holds medians. The before/after figure a performance change lands with.
// --tls: every system serves clients and peers over TLS with certificate auth,
// certificates made for the run (test/support/certs.ts) and removed at its end.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TestCerts } from '../test/support/certs.js';
import { commitOf, median } from './runStats.js';
import { cleanupAll } from './cleanup.js';
import { runLoad, type LoadResult } from './loadGenerator.js';
import { observed } from './loadObserver.js';
import { describeMachine, describeMachineLine } from './machine.js';
import { cpuTotal, maxRss, sampleRss } from './memberRss.js';
import { benchCerts, startEtcd, startLifeboat, TLS_CLUSTER_JS, type BenchCluster } from './systems.js';
import { warmUp, WARMUP_SECONDS } from './warmUp.js';

const USAGE =
  'usage: npm run bench -- puts [--runs N] [--clients 1,16,100] [--seconds S] [--warmup S] [--workers N] [--idle-after S] [--before DIR]... [--tls] [--out DIR] [--tag T]';
const PUT = { kind: 'put', keyPrefix: 'bench/put/', keySpace: 10_000 } as const;

interface PutsOptions {
  runs: number;
  clients: number[];
  seconds: number;
  /** 16-client puts on each cluster before its first measured load (bench/warmUp.ts) */
  warmupSeconds: number;
  workers: number;
  /** after the last client count: seconds of no load, then the members' RSS (0: not measured) */
  idleAfterS: number;
  /** older builds, each run in every round after this one */
  before: string[];
  outDir: string;
  tag?: string;
  /** client and peer TLS on every system (absent without --tls) */
  tls?: true;
}

function parse(args: string[]): PutsOptions {
  const o: PutsOptions = {
    before: [],
    runs: 3,
    clients: [1, 16, 100],
    seconds: 10,
    warmupSeconds: WARMUP_SECONDS,
    workers: 4,
    idleAfterS: 0,
    outDir: path.join('bench', 'results'),
  };
  for (let i = 0; i < args.length; i += 2) {
    if (args[i] === '--tls') {
      o.tls = true;
      i--;
      continue;
    }
    const v = args[i + 1];
    if (v === undefined) fail(`${args[i]} needs a value`);
    if (args[i] === '--runs') o.runs = Number(v);
    else if (args[i] === '--clients') o.clients = v.split(',').filter(Boolean).map(Number);
    else if (args[i] === '--seconds') o.seconds = Number(v);
    else if (args[i] === '--workers') o.workers = Number(v);
    else if (args[i] === '--warmup') o.warmupSeconds = Number(v);
    else if (args[i] === '--idle-after') o.idleAfterS = Number(v);
    else if (args[i] === '--before') o.before.push(path.resolve(v));
    else if (args[i] === '--out') o.outDir = v;
    else if (args[i] === '--tag') o.tag = v;
    else fail(`unknown option ${args[i]}`);
  }
  const positive = [o.runs, o.seconds, o.workers, ...o.clients].every((n) => Number.isInteger(n) && n > 0);
  if (!positive || o.clients.length === 0) fail('--runs, --clients, --seconds and --workers take positive integers');
  if (!(o.warmupSeconds >= 0) || !(o.idleAfterS >= 0)) fail('--warmup and --idle-after take seconds, 0 or more');
  for (const dir of o.before) {
    if (!fs.existsSync(path.join(dir, 'dist', 'test', 'support', 'lifeboatCluster.js'))) {
      fail(`--before ${dir}: no built tree there (git worktree add DIR <commit>, link node_modules, npx tsc -p . in it)`);
    }
    // A build with test/tls/tlsCluster.js has member TLS: that module starts its members with it.
    if (o.tls && !fs.existsSync(path.join(dir, TLS_CLUSTER_JS))) {
      console.error(`--before ${dir} cannot run with --tls: that build has no ${TLS_CLUSTER_JS} (member TLS)`);
      process.exit(2);
    }
  }
  return o;
}

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

interface Variant {
  name: string;
  start(certs?: TestCerts): Promise<BenchCluster>;
}

/** One round of one system: a fresh cluster, a warm-up, then each client count. */
type Sample = LoadResult & {
  rssMiB: number;
  cpuMsPerPut: number;
  leaderChanges: number;
  /** Lifeboat's (NaN for etcd): the worst member's event-loop delay max, its stalls over 50 ms, the longest on CPU */
  loopMaxMs: number;
  stalls: number;
  stallOnCpuMaxMs: number;
  /** stalls by cause (Lifeboat) */
  stallCauses: Record<string, number>;
  /** the largest member RSS --idle-after seconds after the last load (on the last client count's sample; NaN elsewhere) */
  rssIdleAfterMiB: number;
};

async function measure(v: Variant, o: PutsOptions, certs?: TestCerts): Promise<Map<number, Sample>> {
  const sys = await v.start(certs);
  try {
    const endpoints = await sys.endpoints();
    const tls = sys.tls;
    await warmUp({ endpoints, tls, workers: o.workers, op: PUT, valueSize: 256 }, o.warmupSeconds);
    const out = new Map<number, Sample>();
    for (const clients of o.clients) {
      const rss = sampleRss(sys.pids());
      // CPU time of the members (every thread) per put: what a busy machine distorts least.
      const cpu0 = cpuTotal(sys.pids());
      const { r, seen } = await observed(sys, () =>
        runLoad({ endpoints, tls, clients, workers: o.workers, op: PUT, valueSize: 256, durationMs: o.seconds * 1000 }),
      );
      const cpuMsPerPut = ((cpuTotal(sys.pids()) - cpu0) * 1000) / Math.max(1, r.ops);
      if (r.errors > 0) throw new Error(`${v.name}: ${r.errors} of ${r.ops + r.errors} puts failed at ${clients} clients: ${r.firstError ?? ''}`);
      const loops = seen.loop.flatMap((d) => (d ? [d.maxMs] : []));
      const lifeboat = loops.length > 0;
      out.set(clients, {
        ...r,
        rssMiB: rss.stop(),
        cpuMsPerPut,
        leaderChanges: seen.leaderChanges,
        loopMaxMs: lifeboat ? Math.max(...loops) : NaN,
        stalls: lifeboat ? seen.stalls.count : NaN,
        stallOnCpuMaxMs: lifeboat ? seen.stalls.longestOnCpuMs : NaN,
        stallCauses: seen.stalls.byCause,
        rssIdleAfterMiB: NaN,
      });
    }
    const last = out.get(o.clients[o.clients.length - 1]);
    if (o.idleAfterS > 0 && last) {
      await sleep(o.idleAfterS * 1000);
      last.rssIdleAfterMiB = maxRss(sys.pids());
    }
    return out;
  } finally {
    await sys.stop();
  }
}

export async function run(args: string[]): Promise<void> {
  const o = parse(args);
  const machine = describeMachine(os.tmpdir());
  const variants: Variant[] = [
    { name: 'etcd', start: startEtcd },
    { name: `Lifeboat ${commitOf('.')}`, start: (certs) => startLifeboat(undefined, certs) },
  ];
  for (const dir of o.before) variants.push({ name: `Lifeboat ${commitOf(dir)} (before: ${path.basename(dir)})`, start: (certs) => startLifeboat(dir, certs) });
  const results = new Map<string, Map<number, Sample>[]>(variants.map((v) => [v.name, []]));
  const started = Date.now();
  const loadStart = os.loadavg()[0];
  try {
    let certs: TestCerts | undefined;
    if (o.tls) certs = await benchCerts();
    for (let r = 0; r < o.runs; r++) {
      for (const v of variants) {
        const m = await measure(v, o, certs);
        results.get(v.name)?.push(m);
        const line = [...m]
          .map(
            ([c, x]) =>
              `${c}c ${x.perSecond.toFixed(0)}/s p50 ${x.p50Ms.toFixed(2)} p99 ${x.p99Ms.toFixed(2)} ms CPU/put ${x.cpuMsPerPut.toFixed(3)} ms max ${x.maxMs.toFixed(0)} ms stalls ${JSON.stringify(x.stallCauses)}`,
          )
          .join(', ');
        console.log(`round ${r + 1}/${o.runs} ${v.name}${o.tls ? ' with TLS' : ''}: ${line} (load ${os.loadavg()[0].toFixed(2)})`);
      }
    }
  } finally {
    await cleanupAll();
  }
  const pick = (name: string, clients: number, f: (x: Sample) => number) => median((results.get(name) ?? []).map((m) => f(m.get(clients) as Sample)));
  const rows: { label: string; f: (x: Sample) => number; digits: number }[] = [
    { label: 'puts/s', f: (x) => x.perSecond, digits: 0 },
    { label: 'p50 ms', f: (x) => x.p50Ms, digits: 2 },
    { label: 'p99 ms', f: (x) => x.p99Ms, digits: 2 },
    { label: 'p99.9 ms', f: (x) => x.p999Ms, digits: 1 },
    { label: 'max ms', f: (x) => x.maxMs, digits: 1 },
    { label: 'leader changes', f: (x) => x.leaderChanges, digits: 0 },
    { label: 'event-loop delay max ms (worst member)', f: (x) => x.loopMaxMs, digits: 0 },
    { label: 'stalls over 50 ms (3 members)', f: (x) => x.stalls, digits: 0 },
    { label: 'fsync stalls (3 members)', f: (x) => (Number.isNaN(x.stalls) ? NaN : (x.stallCauses.fsync ?? 0)), digits: 0 },
    { label: 'longest stall on CPU ms', f: (x) => x.stallOnCpuMaxMs, digits: 0 },
    { label: 'member CPU ms per put (3 members)', f: (x) => x.cpuMsPerPut, digits: 3 },
    { label: 'peak RSS MiB', f: (x) => x.rssMiB, digits: 1 },
    ...(o.idleAfterS > 0 ? [{ label: `member RSS MiB ${o.idleAfterS} s after the last load`, f: (x: Sample) => x.rssIdleAfterMiB, digits: 1 }] : []),
  ];
  const names = variants.map((v) => v.name);
  const lines = [
    `| figure | ${names.join(' | ')} | ${names
      .slice(1)
      .map((n) => `${n} ÷ etcd`)
      .join(' | ')} |`,
    `|---|${'---:|'.repeat(2 * names.length - 1)}`,
  ];
  for (const clients of o.clients) {
    for (const row of rows) {
      const values = names.map((n) => pick(n, clients, row.f));
      const ratios = values.slice(1).map((v) => `${(v / values[0]).toFixed(2)}×`);
      lines.push(`| ${row.label}, ${clients} clients | ${values.map((v) => v.toFixed(row.digits)).join(' | ')} | ${ratios.join(' | ')} |`);
    }
  }
  const header = [
    `Machine: ${describeMachineLine(machine)}.`,
    `Puts of 256-byte values over ${o.seconds} s per client count, 3-member clusters on 127.0.0.1${o.tls ? ' with TLS on both sides (clients and peers on https://, certificate auth on both)' : ''}, ${o.workers} generator processes, ${o.warmupSeconds} s of 16-client puts first on each cluster (warm-up); ${o.runs} interleaved rounds of ${names.join(', ')}; medians. ${((Date.now() - started) / 60_000).toFixed(1)} min, load average ${loadStart.toFixed(2)} at start, ${os.loadavg()[0].toFixed(2)} at end.`,
  ].join('\n');
  const table = lines.join('\n');
  console.log(`\n${header}\n\n${table}\n`);
  fs.mkdirSync(o.outDir, { recursive: true });
  const base = path.join(o.outDir, `${new Date().toISOString().slice(0, 10)}-puts${o.tls ? '-tls' : ''}${o.tag ? `-${o.tag}` : ''}`);
  fs.writeFileSync(`${base}.md`, `${header}\n\n${table}\n`);
  const raw = Object.fromEntries([...results].map(([n, ms]) => [n, ms.map((m) => Object.fromEntries(m))]));
  fs.writeFileSync(`${base}.json`, JSON.stringify({ date: new Date().toISOString(), machine, options: o, raw }, null, 2) + '\n');
  console.log(`written ${base}.md and .json`);
}
