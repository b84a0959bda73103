// `npm run bench -- startup [--runs N] [--node PATH]... [--out DIR] [--tag T]`:
// how long the everyday commands take from start to exit, each beside etcdctl's
// equivalent against the same 3-member etcd cluster: wall clock, and CPU time
// (user + sys of the child, GNU time's), medians of N interleaved rounds (one
// run of each command and tool per round, after one warm-up run of each that
// fills Node's compile cache where it has one). Lifeboat runs on the Node that
// runs the bench, and on each --node given (another Node's binary).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cleanupAll } from './cleanup.js';
import { FigureSet } from './figures.js';
import { describeMachine, describeMachineLine } from './machine.js';
import { markdownTable } from './markdownTable.js';
import { commitOf, median } from './runStats.js';
import { startEtcd } from './systems.js';

const USAGE = 'usage: npm run bench -- startup [--runs N] [--node PATH]... [--out DIR] [--tag T]';
const BIN = path.join('bin', 'run.js');
const KEY = '/bench/startup';

interface Options {
  runs: number;
  nodes: string[];
  outDir: string;
  tag?: string;
}

function parse(args: string[]): Options {
  const o: Options = { runs: 15, nodes: [process.execPath], outDir: path.join('bench', 'results') };
  for (let i = 0; i < args.length; i += 2) {
    const v = args[i + 1];
    if (v === undefined) o.runs = NaN;
    else if (args[i] === '--runs') o.runs = Number(v);
    else if (args[i] === '--node') o.nodes.push(path.resolve(v));
    else if (args[i] === '--out') o.outDir = v;
    else if (args[i] === '--tag') o.tag = v;
    else o.runs = NaN;
  }
  if (!Number.isInteger(o.runs) || o.runs < 1) {
    console.error(USAGE);
    process.exit(2);
  }
  return o;
}

/** Each command: its words for both tools, and whether it takes the endpoint. */
const COMMANDS = [
  { name: 'version', args: ['version'], connects: false },
  { name: 'get', args: ['get', KEY], connects: true },
  { name: 'put', args: ['put', KEY, 'value'], connects: true },
  { name: 'endpoint health', args: ['endpoint', 'health'], connects: true },
  { name: 'endpoint status', args: ['endpoint', 'status'], connects: true },
  { name: 'member list', args: ['member', 'list'], connects: true },
  { name: 'snapshot status', args: ['snapshot', 'status'], connects: false },
];

interface Sample {
  wallS: number;
  cpuS: number;
}

/** One run of `argv` under GNU time: its wall clock and CPU time, or undefined when it failed. */
function timed(argv: string[], timeFile: string): Sample | undefined {
  const t0 = process.hrtime.bigint();
  const r = spawnSync('/usr/bin/time', ['-f', '%U %S', '-o', timeFile, ...argv], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', timeout: 60_000 });
  const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) return undefined;
  const [user, sys] = fs.readFileSync(timeFile, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
  return { wallS, cpuS: user + sys };
}

const nodeVersion = (node: string) => spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();

export async function run(args: string[]): Promise<void> {
  const o = parse(args);
  const machine = describeMachine(os.tmpdir());
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-startup-'));
  const timeFile = path.join(dir, 'time.txt');
  const snapshot = path.join(dir, 'snap.db');
  const started = Date.now();
  const tools = [
    { name: 'etcdctl', argv: (a: string[]) => ['etcdctl', ...a] },
    ...o.nodes.map((node) => ({ name: `lifeboat (node ${nodeVersion(node)})`, argv: (a: string[]) => [node, BIN, ...a] })),
  ];
  const samples = new Map<string, Sample[]>();
  const failed = new Set<string>();
  try {
    const etcd = await startEtcd();
    const [endpoint] = await etcd.endpoints();
    const argsOf = (c: (typeof COMMANDS)[number]) => [
      ...c.args,
      ...(c.name === 'snapshot status' ? [snapshot] : []),
      ...(c.connects ? ['--endpoints', endpoint] : []),
    ];
    if (spawnSync('etcdctl', ['put', KEY, 'value', '--endpoints', endpoint]).status !== 0) throw new Error('etcdctl put failed');
    if (spawnSync('etcdctl', ['snapshot', 'save', snapshot, '--endpoints', endpoint], { stdio: 'ignore' }).status !== 0)
      throw new Error('etcdctl snapshot save failed');
    // The warm-up: a first run fills the compile cache (Node 22+) and the page cache.
    for (const c of COMMANDS) for (const t of tools) if (!timed(t.argv(argsOf(c)), timeFile)) failed.add(`${c.name}|${t.name}`);
    for (let r = 0; r < o.runs; r++) {
      for (const c of COMMANDS) {
        for (const t of tools) {
          const key = `${c.name}|${t.name}`;
          if (failed.has(key)) continue;
          const s = timed(t.argv(argsOf(c)), timeFile);
          if (s) samples.set(key, [...(samples.get(key) ?? []), s]);
          else failed.add(key);
        }
      }
      console.log(`round ${r + 1}/${o.runs} (load ${os.loadavg()[0].toFixed(2)})`);
    }
  } finally {
    await cleanupAll();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const figures = new FigureSet();
  const medianOf = (key: string, pick: (s: Sample) => number) => (samples.has(key) ? median(samples.get(key)!.map(pick)) : NaN);
  for (const t of tools.slice(1)) {
    for (const c of COMMANDS) {
      for (const [id, label, pick] of [
        ['wall', 'wall clock', (s: Sample) => s.wallS],
        ['cpu', 'CPU time (user+sys)', (s: Sample) => s.cpuS],
      ] as const) {
        const spec = { id: `${c.name}-${id}-${t.name}`, label: `${c.name}, ${label}: ${t.name}`, unit: 's', better: 'lower' as const };
        figures.set('etcd', spec, medianOf(`${c.name}|etcdctl`, pick));
        figures.set('lifeboat', spec, medianOf(`${c.name}|${t.name}`, pick));
      }
    }
  }
  const header = [
    `Machine: ${describeMachineLine(machine)}.`,
    `Start-up of the everyday commands, Lifeboat ${commitOf('.')} beside etcdctl (etcd column), both against one member of a 3-member etcd cluster on 127.0.0.1: ${o.runs} interleaved rounds after one warm-up run each; medians. CPU time is GNU time's user+sys (10 ms ticks). ${((Date.now() - started) / 60_000).toFixed(1)} min, load average at end ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}.`,
    ...(failed.size > 0 ? [`Failed, not measured: ${[...failed].join(', ')}.`] : []),
  ].join('\n');
  const table = markdownTable(figures.figures);
  console.log(`\n${header}\n\n${table}\n`);
  fs.mkdirSync(o.outDir, { recursive: true });
  const base = path.join(o.outDir, `${new Date().toISOString().slice(0, 10)}-startup${o.tag ? `-${o.tag}` : ''}`);
  fs.writeFileSync(`${base}.md`, `${header}\n\n${table}\n`);
  fs.writeFileSync(
    `${base}.json`,
    JSON.stringify(
      { date: new Date().toISOString(), machine, options: o, failed: [...failed], figures: figures.figures, raw: Object.fromEntries(samples) },
      null,
      2,
    ) + '\n',
  );
  console.log(`written ${base}.md and .json`);
}
