// `npm run demo -- backup`: continuous backup and point-in-time restore end to
// end on this machine, in about a minute. A 3-member Lifeboat cluster on
// 127.0.0.1 takes writes while `lifeboat backup run` keeps every revision in a
// file store; then `backup list` and `backup verify` show and prove the store; a
// prefix deleted "by accident" comes back with `backup restore-keys` at the
// revision before the delete; then every member is lost (stopped, data dirs
// removed) and the whole cluster is recovered from the store as it was at a
// time between two writes: `recover --from-backup STORE@TIME` replays the store
// to that time and brings up a new 3-member cluster from it. Every key
// is checked both times. Everything it starts is stopped, its directory removed.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { lastStoredRevision, readCatalog } from '../../src/backup/catalog.js';
import { FileStore } from '../../src/backup/fileStore.js';
import { clientFor } from '../../src/client/etcdClient.js';
import { lifeboatServerArgv } from '../../src/common/memberCommand.js';
import { portIsFree } from '../../src/common/ports.js';
import { ALL_KEYS } from '../../src/client/keyRange.js';
import { killDetachedMembers } from './detachedMembers.js';
import { IndentedLines } from './indentedLines.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const BIN = path.join(ROOT, 'bin', 'run.js');
const INDENT = ' '.repeat(9);
const started = Date.now();
const say = (msg: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${msg}`);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-backup-demo-'));
const storeDir = path.join(dir, 'store');
const store = `file://${storeDir}`;
const procs: ChildProcess[] = [];

/** `n` free ports from `from` on. */
async function freePorts(from: number, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let p = from; p < from + 1000 && out.length < n; p++) if (await portIsFree(p)) out.push(p);
  if (out.length < n) throw new Error(`no ${n} free ports in ${from}..${from + 999}`);
  return out;
}

interface Member {
  name: string;
  peer: string;
  client: string;
  dataDir: string;
}

function startMember(m: Member, cluster: Member[]): ChildProcess {
  return background(
    lifeboatServerArgv(BIN, [
      '--name',
      m.name,
      '--data-dir',
      m.dataDir,
      '--listen-peer-urls',
      m.peer,
      '--initial-advertise-peer-urls',
      m.peer,
      '--listen-client-urls',
      m.client,
      '--advertise-client-urls',
      m.client,
      '--initial-cluster',
      cluster.map((x) => `${x.name}=${x.peer}`).join(','),
    ]),
    `${m.name}.log`,
  );
}

/** Every key with its value, as the cluster served it at `revision` (or now). */
async function keyValues(c: ReturnType<typeof clientFor>, revision?: number): Promise<Map<string, string>> {
  const r = await c.range(ALL_KEYS.key, { rangeEnd: ALL_KEYS.rangeEnd, ...(revision ? { revision } : {}) });
  return new Map(r.kvs.map((kv) => [kv.key.toString(), kv.value.toString()]));
}

/** The keys of `want` that `got` lacks or holds with another value, and the keys `got` has beyond it. */
function differences(want: Map<string, string>, got: Map<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of want) if (got.get(k) !== v) out.push(got.has(k) ? `${k} differs` : `${k} missing`);
  for (const k of got.keys()) if (!want.has(k)) out.push(`${k} should not be there`);
  return out;
}

function background(args: string[], log: string): ChildProcess {
  const fd = fs.openSync(path.join(dir, log), 'a');
  const child = spawn(process.execPath, args, { stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  procs.push(child);
  return child;
}

function lifeboat(args: string[]): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const lines = [new IndentedLines(INDENT, (t) => process.stdout.write(t)), new IndentedLines(INDENT, (t) => process.stdout.write(t))];
    child.stdout.setEncoding('utf8').on('data', (d: string) => ((out += d), lines[0].push(d)));
    child.stderr.setEncoding('utf8').on('data', (d: string) => ((out += d), lines[1].push(d)));
    child.on('close', (code) => {
      for (const l of lines) l.end();
      resolve({ code, out });
    });
  });
}

async function must(args: string[]): Promise<string> {
  say(`$ lifeboat ${args.join(' ')}`);
  const r = await lifeboat(args);
  if (r.code !== 0) throw new Error(`lifeboat ${args[0]} ${args[1] ?? ''} exited ${r.code}`);
  return r.out;
}

async function until(what: string, fn: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await fn().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<void> {
  const ports = await freePorts(23900, 12);
  const url = (p: number) => `http://127.0.0.1:${p}`;
  const members: Member[] = ['m1', 'm2', 'm3'].map((name, i) => ({
    name,
    peer: url(ports[2 * i]),
    client: url(ports[2 * i + 1]),
    dataDir: path.join(dir, name),
  }));
  const endpoints = members.map((m) => m.client).join(',');
  say(`a 3-member Lifeboat cluster at ${endpoints}, in ${dir}`);
  const running = members.map((m) => startMember(m, members));
  const c = clientFor(endpoints.split(','), { dialTimeoutMs: 2000, commandTimeoutMs: 10_000 });
  try {
    await until('a leader', async () => (await c.status()).leader !== 0n);
    for (let i = 0; i < 200; i++) await c.put(`/app/config/${i}`, `setting ${i}`);
    say('200 keys under /app/config/; starting the backup agent (a segment every second)');
    const agent = background(
      [BIN, 'backup', 'run', '--store', store, '--spool-dir', path.join(dir, 'spool'), '--endpoints', endpoints, '--delta-interval', '1s'],
      'agent.log',
    );
    const fs_ = new FileStore(store, storeDir);
    fs.mkdirSync(storeDir, { recursive: true });
    const caughtUp = async () => {
      const head = (await c.status()).header.revision;
      const cat = await readCatalog(fs_);
      return cat.clusters.length > 0 && lastStoredRevision(cat.clusters[0]) >= head;
    };
    await until('the first full', caughtUp);
    const orders = Array.from({ length: 150 }, (_, i) => `/app/orders/${String(i).padStart(3, '0')}`);
    for (const k of orders) await c.put(k, `order ${k.slice(-3)}`);
    const before = (await c.status()).header.revision;
    await c.deleteRange('/app/orders/', { rangeEnd: '/app/orders0' });
    say(`150 orders written (revision ${before}), then deleted "by accident"`);
    for (let i = 0; i < 50; i++) await c.put(`/app/config/${i}`, `setting ${i}, changed`);
    await until('the agent to store every revision', caughtUp);

    await must(['backup', 'list', store]);
    await must(['backup', 'verify', store, '--audit-db', path.join(dir, 'audit.db')]);
    await must([
      'backup',
      'restore-keys',
      store,
      '--prefix',
      '/app/orders/',
      '--at',
      String(before),
      '--endpoints',
      endpoints,
      '--yes',
      '--audit-db',
      path.join(dir, 'audit.db'),
    ]);
    // Every key: the orders as they were before the delete, every other key as it is now.
    const expected = await keyValues(c, before);
    for (let i = 0; i < 50; i++) expected.set(`/app/config/${i}`, `setting ${i}, changed`);
    const wrongKeys = differences(expected, await keyValues(c));
    if (wrongKeys.length > 0) throw new Error(`after restore-keys: ${wrongKeys.slice(0, 5).join(', ')}`);
    say(`every one of the ${orders.length} orders is back; the 50 changed settings are untouched`);

    // Two writes, a time between them: the cluster is recovered as it was at that time.
    const release = await c.put('/app/release', 'v1');
    await new Promise((r) => setTimeout(r, 1000));
    const between = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 1000));
    await c.put('/app/release', 'v2');
    for (let i = 0; i < 20; i++) await c.put(`/app/late/${i}`, `written after ${between}`);
    const want = await keyValues(c, release.header.revision);
    say(`/app/release=v1 at revision ${release.header.revision}, ${between}, then /app/release=v2 and 20 more keys`);
    await until('the agent to store every revision', caughtUp);

    say('disaster: every member is lost (stopped, data dirs removed); the agent stopped too');
    for (const p of [agent, ...running]) p.kill('SIGKILL');
    await Promise.all([agent, ...running].map((p) => new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(null) : p.on('exit', r)))));
    for (const m of members) fs.rmSync(m.dataDir, { recursive: true, force: true });
    const fresh: Member[] = ['m1', 'm2', 'm3'].map((name, i) => ({
      name,
      peer: url(ports[6 + 2 * i]),
      client: url(ports[7 + 2 * i]),
      dataDir: path.join(dir, 'recovered', name),
    }));
    fs.mkdirSync(path.join(dir, 'recovered'));
    await must([
      'recover',
      '--from-backup',
      `${store}@${between}`,
      '--yes',
      '--reason',
      'demo: every member lost',
      '--audit-db',
      path.join(dir, 'audit.db'),
      '--supervisor',
      'none',
      '--set',
      `data-dir=${fresh[0].dataDir}`,
      '--set',
      `name=${fresh[0].name}`,
      '--set',
      `peer-url=${fresh[0].peer}`,
      '--set',
      `client-url=${fresh[0].client}`,
      '--set',
      `members=${fresh
        .slice(1)
        .map((m) => `${m.name}=${m.peer},${m.client},${m.dataDir}`)
        .join(';')}`,
      '--set',
      'stabilization=1s',
    ]);
    const r = clientFor(
      fresh.map((m) => m.client),
      { dialTimeoutMs: 2000, commandTimeoutMs: 10_000 },
    );
    try {
      const got = await keyValues(r);
      const wrong = differences(want, got);
      if (wrong.length > 0) throw new Error(`the recovered cluster is not the cluster at ${between}: ${wrong.slice(0, 5).join(', ')}`);
      const voters = (await r.memberList()).members.filter((m) => !m.isLearner).length;
      if (voters !== 3) throw new Error(`the recovered cluster has ${voters} voters, not 3`);
      say(`the recovered cluster (3 members) holds every one of the ${want.size} keys as they were at ${between}: /app/release=${got.get('/app/release')}`);
    } finally {
      r.close();
    }
  } finally {
    c.close();
  }
}

let failed = false;
try {
  await main();
  say('done');
} catch (e) {
  failed = true;
  console.error(`demo failed: ${(e as Error).message} (logs in ${dir})`);
} finally {
  for (const p of procs) p.kill('SIGTERM');
  await new Promise((r) => setTimeout(r, 1000));
  for (const p of procs) if (p.exitCode === null) p.kill('SIGKILL');
  // The recovered members run detached from the recover run: stopped through their data dirs.
  killDetachedMembers(path.join(dir, 'recovered'));
  if (!failed) fs.rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
