// `npm run bench -- backup [--runs N] [--seconds S] [--clients N] [--delta-interval D] [--full-keys N] [--out DIR]`:
// the backup agent under load, side by side on etcd 3.4 and Lifeboat, in N
// interleaved rounds (medians). Each round: a fresh 3-member cluster, an S3
// server (s3rver, on 127.0.0.1), `lifeboat backup run` into it; then puts from
// N clients for S seconds while a probe writes one key every 100 ms and records
// when its put was acknowledged, and the store is listed every 50 ms for the
// time each segment's manifest (its commit) appears. Lag = commit − ack, per
// probe: p50, p99, max. Agent CPU per stored revision and its peak RSS. Then,
// with --full-keys N (default 1,000,000; 0: skip), the cluster is filled and a
// full to the S3 server (`backup full`) is timed against the runtime's own
// snapshot save to local disk (etcdctl's, or Lifeboat's). Targets: lag p99 ≤ 2 ×
// --delta-interval; agent RSS ≤ 100 MiB.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isManifestKey } from '../src/backup/layout.js';
import { parseManifest } from '../src/backup/manifest.js';
import { openStore } from '../src/backup/openStore.js';
import { EtcdClient } from '../src/client/etcdClient.js';
import { startS3Server, type S3Server } from '../test/support/s3Server.js';
import { BIN } from '../test/support/lifeboatCluster.js';
import { AGENT_NODE_FLAGS } from '../src/cli/backupHandoff.js';
import { failWithUsage, lifeboat } from './lifeboatCli.js';
import { cleanupAll, onCleanup } from './cleanup.js';
import { fillKeys } from './fill.js';
import { runLoad } from './loadGenerator.js';
import { describeMachine, describeMachineLine } from './machine.js';
import { cpuSeconds, sampleRss } from './memberRss.js';
import { commitOf, median } from './runStats.js';
import { startEtcd, startLifeboat, type BenchCluster } from './systems.js';

const USAGE =
  'usage: npm run bench -- backup [--runs N] [--seconds S] [--clients N] [--delta-interval MS] [--full-keys N] [--agent-node-flags "FLAGS"] [--out DIR]';

interface Options {
  runs: number;
  seconds: number;
  clients: number;
  deltaMs: number;
  fullKeys: number;
  /** node's flags before bin/run.js for the agent: those of its systemd unit unless given */
  agentNodeFlags: readonly string[];
  outDir: string;
}

function parse(args: string[]): Options {
  const o: Options = {
    runs: 3,
    seconds: 30,
    clients: 100,
    deltaMs: 5000,
    fullKeys: 1_000_000,
    agentNodeFlags: AGENT_NODE_FLAGS,
    outDir: path.join('bench', 'results'),
  };
  for (let i = 0; i < args.length; i += 2) {
    const v = args[i + 1];
    if (v === undefined) fail(`${args[i]} needs a value`);
    if (args[i] === '--runs') o.runs = Number(v);
    else if (args[i] === '--seconds') o.seconds = Number(v);
    else if (args[i] === '--clients') o.clients = Number(v);
    else if (args[i] === '--delta-interval') o.deltaMs = Number(v);
    else if (args[i] === '--full-keys') o.fullKeys = Number(v);
    else if (args[i] === '--agent-node-flags') o.agentNodeFlags = v.split(/\s+/).filter(Boolean);
    else if (args[i] === '--out') o.outDir = v;
    else fail(`unknown option ${args[i]}`);
  }
  if (![o.runs, o.seconds, o.clients, o.deltaMs].every((n) => Number.isInteger(n) && n > 0) || !(Number.isInteger(o.fullKeys) && o.fullKeys >= 0))
    fail('--runs, --seconds, --clients and --delta-interval (ms) take positive integers, --full-keys 0 or more');
  return o;
}

function fail(message: string): never {
  return failWithUsage(message, USAGE);
}

interface Round {
  lagP50Ms: number;
  lagP99Ms: number;
  lagMaxMs: number;
  probes: number;
  putsPerSecond: number;
  cpuMsPerRevision: number;
  agentRssMiB: number;
  fullSeconds?: number;
  ownSaveSeconds?: number;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
};

async function round(sys: BenchCluster, o: Options, dir: string): Promise<Round> {
  const s3: S3Server = await startS3Server(fs.mkdtempSync(path.join(dir, `s3-${sys.name}-`)), `bench.backup.${sys.name}.${process.pid}`);
  const unS3 = onCleanup(() => s3.stop());
  const env = { ...process.env, ...s3.env };
  let agent: ChildProcess | undefined;
  try {
    const endpoints = await sys.endpoints();
    const url = s3.url('bench');
    Object.assign(process.env, s3.env); // the bench's own reads of the store
    const store = await openStore(url, { endpoint: s3.endpoint });
    const commits = new Map<string, { toRevision: number; at: number }>();
    const poll = async () => {
      for (const obj of await store.list('')) {
        if (!isManifestKey(obj.key) || commits.has(obj.key)) continue;
        const m = parseManifest(obj.key, await store.get(obj.key));
        commits.set(obj.key, { toRevision: m.toRevision, at: Date.now() });
      }
    };
    const log = fs.openSync(path.join(dir, `agent-${sys.name}.log`), 'a');
    agent = spawn(
      process.execPath,
      [
        ...o.agentNodeFlags,
        BIN,
        'backup',
        'run',
        '--store',
        url,
        '--s3-endpoint',
        s3.endpoint,
        '--spool-dir',
        path.join(dir, `spool-${sys.name}`),
        '--endpoints',
        endpoints.join(','),
        '--delta-interval',
        `${o.deltaMs}ms`,
      ],
      { env, stdio: ['ignore', log, log] },
    );
    fs.closeSync(log);
    const client = new EtcdClient({ endpoints, dialTimeoutMs: 3000, commandTimeoutMs: 10_000 });
    try {
      const startRev = (await client.status()).header.revision;
      const deadline = Date.now() + 60_000;
      while (commits.size === 0) {
        if (Date.now() > deadline)
          throw new Error(
            `${sys.name}: no full within 60 s; the agent said:\n${fs.readFileSync(path.join(dir, `agent-${sys.name}.log`), 'utf8').slice(-2000)}`,
          );
        await poll();
        await new Promise((r) => setTimeout(r, 200));
      }
      const rss = sampleRss([agent.pid!]);
      const cpu0 = cpuSeconds(agent.pid!);
      const probes: Array<{ revision: number; ackAt: number }> = [];
      let running = true;
      const prober = (async () => {
        for (let i = 0; running; i++) {
          const r = await client.put(`bench/backup-probe/${i % 100}`, String(Date.now()));
          probes.push({ revision: r.header.revision, ackAt: Date.now() });
          await new Promise((res) => setTimeout(res, 100));
        }
      })();
      const poller = (async () => {
        while (running) {
          await poll();
          await new Promise((res) => setTimeout(res, 50));
        }
      })();
      const load = await runLoad({
        endpoints,
        clients: o.clients,
        workers: 4,
        op: { kind: 'put', keyPrefix: 'bench/backup/', keySpace: 10_000 },
        valueSize: 256,
        durationMs: o.seconds * 1000,
      });
      running = false;
      await prober;
      await poller;
      const endRev = (await client.status()).header.revision;
      const settle = Date.now() + 60_000;
      while (![...commits.values()].some((c) => c.toRevision >= probes[probes.length - 1].revision) && Date.now() < settle) {
        await poll();
        await new Promise((res) => setTimeout(res, 50));
      }
      const cpu = cpuSeconds(agent.pid!) - cpu0;
      const lags = probes.map((p) => {
        const at = Math.min(...[...commits.values()].filter((c) => c.toRevision >= p.revision).map((c) => c.at));
        return at - p.ackAt;
      });
      const r: Round = {
        lagP50Ms: pct(lags, 50),
        lagP99Ms: pct(lags, 99),
        lagMaxMs: Math.max(...lags),
        probes: probes.length,
        putsPerSecond: load.perSecond,
        cpuMsPerRevision: (cpu * 1000) / Math.max(1, endRev - startRev),
        agentRssMiB: rss.stop(),
      };
      if (o.fullKeys > 0) {
        await fillKeys({ endpoints, from: 0, to: o.fullKeys, workers: 4, valueSize: 256 });
        const full = await lifeboat(['backup', 'full', '--store', url, '--s3-endpoint', s3.endpoint, '--endpoints', endpoints[0]], env);
        if (full.code !== 0) throw new Error(`${sys.name}: backup full failed: ${full.out}`);
        const t0 = performance.now();
        const ownFile = path.join(dir, `own-${sys.name}.db`);
        const own = await sys.snapshotSave(endpoints[0], ownFile);
        // Each round saves afresh (a save refuses to replace a file).
        fs.rmSync(ownFile, { force: true });
        if (own.code !== 0) throw new Error(`${sys.name}: snapshot save failed: ${own.stderr}`);
        r.fullSeconds = full.seconds;
        r.ownSaveSeconds = (performance.now() - t0) / 1000;
      }
      store.close();
      return r;
    } finally {
      client.close();
    }
  } finally {
    agent?.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    if (agent && agent.exitCode === null) agent.kill('SIGKILL');
    await s3.stop();
    unS3();
  }
}

export async function run(args: string[]): Promise<void> {
  const o = parse(args);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-bench-backup-'));
  const systems = [
    { name: 'etcd', start: () => startEtcd() },
    { name: 'Lifeboat', start: () => startLifeboat() },
  ];
  const results = new Map<string, Round[]>(systems.map((s) => [s.name, []]));
  try {
    for (let i = 0; i < o.runs; i++) {
      for (const s of systems) {
        const sys = await s.start();
        try {
          const r = await round(sys, o, dir);
          results.get(s.name)!.push(r);
          console.log(
            `round ${i + 1}/${o.runs} ${s.name}: lag p50 ${r.lagP50Ms} p99 ${r.lagP99Ms} max ${r.lagMaxMs} ms over ${r.probes} probes, ${r.putsPerSecond.toFixed(0)} puts/s, agent ${r.cpuMsPerRevision.toFixed(3)} ms CPU per revision, RSS ${r.agentRssMiB.toFixed(1)} MiB${r.fullSeconds !== undefined ? `, full of ${o.fullKeys} keys to S3 ${r.fullSeconds.toFixed(2)} s, snapshot save ${r.ownSaveSeconds!.toFixed(2)} s` : ''}`,
          );
        } finally {
          await sys.stop();
        }
      }
    }
  } finally {
    await cleanupAll();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const rows: Array<[string, (r: Round) => number | undefined, number]> = [
    ['lag p50 ms (put acknowledged → segment committed)', (r) => r.lagP50Ms, 0],
    ['lag p99 ms', (r) => r.lagP99Ms, 0],
    ['lag max ms', (r) => r.lagMaxMs, 0],
    [`puts/s (${o.clients} clients)`, (r) => r.putsPerSecond, 0],
    ['agent CPU ms per revision', (r) => r.cpuMsPerRevision, 3],
    ['agent RSS MiB (peak)', (r) => r.agentRssMiB, 1],
    [`backup full of ${o.fullKeys} keys to S3, s`, (r) => r.fullSeconds, 2],
    ['snapshot save to local disk, s', (r) => r.ownSaveSeconds, 2],
  ];
  const cell = (name: string, f: (r: Round) => number | undefined, d: number) => {
    const xs = (results.get(name) ?? []).map(f).filter((x): x is number => x !== undefined);
    return xs.length ? median(xs).toFixed(d) : '-';
  };
  const table = [
    `| figure (median of ${o.runs}) | agent on etcd 3.4 | agent on Lifeboat |`,
    '|---|---:|---:|',
    ...rows.map(([label, f, d]) => `| ${label} | ${cell('etcd', f, d)} | ${cell('Lifeboat', f, d)} |`),
  ].join('\n');
  const header = `backup agent, --delta-interval ${o.deltaMs} ms, ${o.seconds} s of puts from ${o.clients} clients per round; agent node flags "${o.agentNodeFlags.join(' ')}"; Lifeboat ${commitOf('.')}; ${describeMachineLine(describeMachine(os.tmpdir()))}`;
  console.log(`\n${header}\n\n${table}\n\ntargets: lag p99 ≤ ${2 * o.deltaMs} ms (2 × --delta-interval); agent RSS ≤ 100 MiB`);
  fs.mkdirSync(o.outDir, { recursive: true });
  const stem = path.join(o.outDir, `${new Date().toISOString().slice(0, 10)}-backup`);
  fs.writeFileSync(`${stem}.json`, `${JSON.stringify({ options: o, results: Object.fromEntries(results) }, null, 2)}\n`);
  fs.writeFileSync(`${stem}.md`, `# ${header}\n\n${table}\n`);
  console.log(`wrote ${stem}.json and ${stem}.md`);
}
