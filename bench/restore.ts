// `npm run bench -- restore [--short] [--keys N] [--revisions M] [--put-seconds S] [--replay-dir DIR] [--note TEXT] [--out DIR]`:
// point-in-time restore, side by side on etcd 3.4 and Lifeboat. For each: a
// fresh 3-member cluster (data on disk); N keys; after a warm-up of puts, its
// 1-client put rate for S seconds; `lifeboat backup run` into a file store takes the full; M revisions
// of single-put Txns (segments); the agent stopped once it stored them all.
// Then `backup restore --at latest` materializes the snapshot (the replay's
// scratch member in --replay-dir, tmpfs by default), `recover --from-snapshot`
// brings up a new 3-member cluster from it, and the full alone is restored with
// the runtime's own `snapshot restore` (etcdctl's, or Lifeboat's). Targets: the
// embedded member's replay ≥ 20,000 revisions/s; etcd's replay (on tmpfs) ≥ 2 ×
// etcd's own 1-client put rate on disk. Full form: 1,000,000 keys and 100,000
// revisions; --short: 20,000 keys and 5,000 revisions.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { lastStoredRevision, readCatalog } from '../src/backup/catalog.js';
import { FileStore } from '../src/backup/fileStore.js';
import { decodeObject } from '../src/backup/objectCodec.js';
import { EtcdClient } from '../src/client/etcdClient.js';
import { killDetachedMembers } from '../scripts/demo/detachedMembers.js';
import { BIN } from '../test/support/lifeboatCluster.js';
import { freePorts } from '../test/support/ports.js';
import { failWithUsage, lifeboat } from './lifeboatCli.js';
import { cleanupAll } from './cleanup.js';
import { FILL_PREFIX, fillKeys } from './fill.js';
import { runLoad } from './loadGenerator.js';
import { describeMachine, describeMachineLine } from './machine.js';
import { commitOf } from './runStats.js';
import { warmUp, WARMUP_SECONDS } from './warmUp.js';
import { startEtcd, startLifeboat, type BenchCluster } from './systems.js';

const USAGE = 'usage: npm run bench -- restore [--short] [--keys N] [--revisions M] [--put-seconds S] [--replay-dir DIR] [--note TEXT] [--out DIR]';
const REPLAY_TARGET = 20_000;

interface Options {
  short: boolean;
  keys: number;
  revisions: number;
  putSeconds: number;
  replayDir: string;
  note: string;
  outDir: string;
}

function parse(args: string[]): Options {
  const o: Options = {
    short: false,
    keys: 1_000_000,
    revisions: 100_000,
    putSeconds: 10,
    replayDir: fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir(),
    note: '',
    outDir: path.join('bench', 'results'),
  };
  const given = new Set<string>();
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === '--short') {
      o.short = true;
      continue;
    }
    const v = args[++i];
    if (v === undefined) fail(`${a} needs a value`);
    given.add(a);
    if (a === '--keys') o.keys = Number(v);
    else if (a === '--revisions') o.revisions = Number(v);
    else if (a === '--put-seconds') o.putSeconds = Number(v);
    else if (a === '--replay-dir') o.replayDir = v;
    else if (a === '--note') o.note = v;
    else if (a === '--out') o.outDir = v;
    else fail(`unknown option ${a}`);
  }
  if (o.short) {
    if (!given.has('--keys')) o.keys = 20_000;
    if (!given.has('--revisions')) o.revisions = 5_000;
    if (!given.has('--put-seconds')) o.putSeconds = 3;
  }
  if (![o.keys, o.revisions, o.putSeconds].every((n) => Number.isInteger(n) && n > 0)) fail('--keys, --revisions and --put-seconds take positive integers');
  if (o.revisions > o.keys) fail('--revisions must not exceed --keys (each revision rewrites one of the keys)');
  return o;
}

function fail(message: string): never {
  return failWithUsage(message, USAGE);
}

interface Figures {
  /** the runtime's 1-client put rate on disk (3 members) */
  onePutsPerSecond: number;
  /** revisions the replay applied, and how long that took (from the restore's own line) */
  replayedRevisions: number;
  replaySeconds: number;
  replayPerSecond: number;
  /** of replaySeconds: compacting and computing HashKV at the agent's hash points, and how many */
  hashSeconds: number;
  hashChecks: number;
  /** the replay's rate leaving out the hash checks (the applies alone) */
  applyPerSecond: number;
  /** `backup restore --at latest`, wall time */
  restoreSeconds: number;
  /** `recover --from-snapshot` into 3 members, wall time */
  recoverSeconds: number;
  /** the full alone through the runtime's `snapshot restore` */
  fullRestoreSeconds: number;
  snapshotBytes: number;
}

async function until(what: string, fn: () => Promise<boolean>, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await fn().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function measure(sys: BenchCluster, o: Options, dir: string): Promise<Figures> {
  const endpoints = await sys.endpoints();
  const say = (s: string) => console.log(`${sys.name}: ${s}`);
  await fillKeys({ endpoints, from: 0, to: o.keys, workers: 2, valueSize: 256 });
  say(`${o.keys} keys written`);
  // Past the JIT's tier-up (bench/warmUp.ts) before the 1-client figure.
  const put = { kind: 'put', keyPrefix: 'bench/one/', keySpace: 1000 } as const;
  await warmUp({ endpoints, workers: 2, op: put, valueSize: 256 }, o.short ? 5 : WARMUP_SECONDS);
  const one = await runLoad({ endpoints, clients: 1, workers: 1, op: put, valueSize: 256, durationMs: o.putSeconds * 1000 });
  say(`1-client puts: ${one.perSecond.toFixed(0)}/s`);
  const storeDir = path.join(dir, `store-${sys.name}`);
  fs.mkdirSync(storeDir);
  const store = new FileStore(`file://${storeDir}`, storeDir);
  const client = new EtcdClient({ endpoints, dialTimeoutMs: 3000, commandTimeoutMs: 60_000 });
  const log = fs.openSync(path.join(dir, `agent-${sys.name}.log`), 'a');
  const agent = spawn(
    process.execPath,
    [
      BIN,
      'backup',
      'run',
      '--store',
      store.url,
      '--spool-dir',
      path.join(dir, `spool-${sys.name}`),
      '--endpoints',
      endpoints.join(','),
      '--delta-interval',
      '2s',
    ],
    { stdio: ['ignore', log, log] },
  );
  fs.closeSync(log);
  const stored = async () => {
    const head = (await client.status()).header.revision;
    const cat = await readCatalog(store);
    return cat.clusters.length === 1 && lastStoredRevision(cat.clusters[0]) >= head;
  };
  try {
    await until('the first full', stored, 600_000);
    // M revisions: single-put Txns rewriting the first M keys.
    const revs = await runLoad({
      endpoints,
      clients: 32,
      workers: 2,
      op: { kind: 'fill', keyPrefix: FILL_PREFIX, from: 0, to: o.revisions, batch: 1 },
      valueSize: 256,
      durationMs: 20 * 60_000,
    });
    if (revs.errors > 0) throw new Error(`${revs.errors} of the ${o.revisions} revisions failed: ${revs.firstError}`);
    await until('the agent to store every revision', stored, 600_000);
    say(`${o.revisions} revisions written and stored`);
  } finally {
    agent.kill('SIGTERM');
    await new Promise((r) => agent.once('exit', r));
    client.close();
  }

  const snap = path.join(dir, `latest-${sys.name}.db`);
  // The replay's scratch member works under TMPDIR.
  const restored = await lifeboat(['backup', 'restore', store.url, '--at', 'latest', '--output', snap], { ...process.env, TMPDIR: o.replayDir });
  if (restored.code !== 0) throw new Error(`backup restore failed: ${restored.out}`);
  const replay = /replayed (\d+) revisions \(\d+ events\) to revision \d+ in ([\d.]+)s(?:, ([\d.]+)s of it on (\d+) HashKV)?/.exec(restored.out);
  if (!replay) throw new Error(`no replay line in: ${restored.out}`);
  say(`backup restore: ${restored.seconds.toFixed(1)} s (${replay[0]})`);
  // Every member lost, as in the recovery this measures: the snapshot carries the
  // source's members, and the recovery refuses while they still answer (fencing).
  await sys.stop();

  const ports = await freePorts(6, `bench-restore-${sys.name}-${process.pid}`);
  const url = (p: number) => `http://127.0.0.1:${p}`;
  const recoveredDir = path.join(dir, `recovered-${sys.name}`);
  fs.mkdirSync(recoveredDir);
  const fresh = ['r1', 'r2', 'r3'].map((name, i) => ({ name, peer: url(ports[2 * i]), client: url(ports[2 * i + 1]), dataDir: path.join(recoveredDir, name) }));
  const sets = [
    `data-dir=${fresh[0].dataDir}`,
    `name=${fresh[0].name}`,
    `peer-url=${fresh[0].peer}`,
    `client-url=${fresh[0].client}`,
    `members=${fresh
      .slice(1)
      .map((m) => `${m.name}=${m.peer},${m.client},${m.dataDir}`)
      .join(';')}`,
    'stabilization=1s',
  ];
  let recovered;
  try {
    recovered = await lifeboat([
      'recover',
      '--from-snapshot',
      snap,
      '--yes',
      '--reason',
      'bench: restore',
      '--audit-db',
      path.join(dir, `audit-${sys.name}.db`),
      '--supervisor',
      'none',
      ...sets.flatMap((s) => ['--set', s]),
    ]);
  } finally {
    killDetachedMembers(recoveredDir);
  }
  if (recovered.code !== 0) throw new Error(`recover failed: ${recovered.out.slice(-3000)}`);
  say(`recover --from-snapshot, 3 members: ${recovered.seconds.toFixed(1)} s`);

  // The full alone, decoded from the store, through the runtime's own snapshot restore.
  const cat = await readCatalog(store);
  const full = cat.clusters[0].fulls[0];
  const plain = path.join(dir, `full-${sys.name}.db`);
  await decodeObject(path.join(storeDir, full.object), plain, full);
  const t0 = performance.now();
  const own = await sys.snapshotRestore(plain, path.join(dir, `own-restore-${sys.name}`));
  if (own.code !== 0) throw new Error(`snapshot restore failed: ${own.stderr}`);
  const fullRestoreSeconds = (performance.now() - t0) / 1000;
  say(`snapshot restore of the full (${full.keyCount} keys): ${fullRestoreSeconds.toFixed(2)} s`);
  store.close();
  const replaySeconds = Number(replay[2]);
  const hashSeconds = Number(replay[3] ?? 0);
  return {
    onePutsPerSecond: one.perSecond,
    replayedRevisions: Number(replay[1]),
    replaySeconds,
    replayPerSecond: Number(replay[1]) / Math.max(replaySeconds, 0.001),
    hashSeconds,
    hashChecks: Number(replay[4] ?? 0),
    applyPerSecond: Number(replay[1]) / Math.max(replaySeconds - hashSeconds, 0.001),
    restoreSeconds: restored.seconds,
    recoverSeconds: recovered.seconds,
    fullRestoreSeconds,
    snapshotBytes: fs.statSync(snap).size,
  };
}

export async function run(args: string[]): Promise<void> {
  const o = parse(args);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-bench-restore-'));
  const systems = [
    { name: 'etcd', start: () => startEtcd() },
    { name: 'Lifeboat', start: () => startLifeboat() },
  ];
  const results = new Map<string, Figures>();
  try {
    for (const s of systems) {
      const sys = await s.start();
      try {
        results.set(s.name, await measure(sys, o, dir));
      } finally {
        await sys.stop();
      }
    }
  } finally {
    await cleanupAll();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const rows: Array<[string, (f: Figures) => number, number]> = [
    [`1-client puts/s on disk (3 members)`, (f) => f.onePutsPerSecond, 0],
    [`backup restore --at latest (${o.keys} keys + ${o.revisions} revisions), s`, (f) => f.restoreSeconds, 1],
    ['of which the replay of the segments, s', (f) => f.replaySeconds, 2],
    ['of which HashKV checks at the hash points, s', (f) => f.hashSeconds, 2],
    ['HashKV checks', (f) => f.hashChecks, 0],
    ['replay revisions/s', (f) => f.replayPerSecond, 0],
    ['replay revisions/s without the HashKV checks', (f) => f.applyPerSecond, 0],
    ['recover --from-snapshot into 3 members (stabilization 1s), s', (f) => f.recoverSeconds, 1],
    ['snapshot restore of the full alone, s', (f) => f.fullRestoreSeconds, 2],
    ['snapshot size, MiB', (f) => f.snapshotBytes / 1024 / 1024, 1],
  ];
  const cell = (name: string, f: (x: Figures) => number, d: number) => {
    const r = results.get(name);
    return r ? f(r).toFixed(d) : '-';
  };
  const table = [
    '| figure | etcd 3.4 | Lifeboat |',
    '|---|---:|---:|',
    ...rows.map(([label, f, d]) => `| ${label} | ${cell('etcd', f, d)} | ${cell('Lifeboat', f, d)} |`),
  ].join('\n');
  const etcd = results.get('etcd');
  const lb = results.get('Lifeboat');
  const verdicts = [
    etcd
      ? `etcd's replay (scratch member in ${o.replayDir}) ${etcd.replayPerSecond.toFixed(0)} revisions/s against 2 × its 1-client put rate on disk ${(2 * etcd.onePutsPerSecond).toFixed(0)}/s: ${etcd.replayPerSecond >= 2 * etcd.onePutsPerSecond ? 'met' : 'NOT met'}`
      : '',
    lb
      ? `the embedded member's replay ${lb.replayPerSecond.toFixed(0)} revisions/s against ${REPLAY_TARGET}: ${lb.replayPerSecond >= REPLAY_TARGET ? 'met' : 'NOT met'} (${lb.applyPerSecond.toFixed(0)} revisions/s leaving out its ${lb.hashChecks} HashKV checks, ${lb.hashSeconds.toFixed(2)} s)`
      : '',
  ].filter(Boolean);
  const header = `point-in-time restore${o.short ? ' (--short)' : ''}: ${o.keys} keys, ${o.revisions} revisions of segments; Lifeboat ${commitOf('.')}; ${describeMachineLine(describeMachine(os.tmpdir()))}`;
  const body = `${header}\n\n${o.note ? `${o.note}\n\n` : ''}${table}\n\n${verdicts.map((v) => `- ${v}`).join('\n')}`;
  console.log(`\n${body}`);
  fs.mkdirSync(o.outDir, { recursive: true });
  const stem = path.join(o.outDir, `${new Date().toISOString().slice(0, 10)}-restore${o.short ? '-short' : ''}`);
  fs.writeFileSync(`${stem}.json`, `${JSON.stringify({ options: o, results: Object.fromEntries(results) }, null, 2)}\n`);
  fs.writeFileSync(`${stem}.md`, `# ${body}\n`);
  console.log(`wrote ${stem}.json and ${stem}.md`);
}
