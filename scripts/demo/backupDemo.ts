// `npm run demo -- backup`: continuous backup and point-in-time restore end to
// end on this machine, in about a minute. A Lifeboat member on 127.0.0.1 takes
// writes while `lifeboat backup run` keeps every revision in a file store; then
// `backup list` and `backup verify` show and prove the store; a prefix deleted
// "by accident" comes back with `backup restore-keys` at the revision before the
// delete; and `backup restore` makes a snapshot of the cluster as it was at a
// time. Every key is checked. Everything it starts is stopped, its directory
// removed.
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

async function freePort(from: number): Promise<number> {
  for (let p = from; p < from + 1000; p++) if (await portIsFree(p)) return p;
  throw new Error(`no free port in ${from}..${from + 999}`);
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
  const [peerPort, clientPort] = [await freePort(23900), await freePort(23950)];
  const peer = `http://127.0.0.1:${peerPort}`;
  const endpoint = `http://127.0.0.1:${clientPort}`;
  say(`a Lifeboat member at ${endpoint}, in ${dir}`);
  background(
    lifeboatServerArgv(BIN, [
      '--name',
      'demo',
      '--data-dir',
      path.join(dir, 'member'),
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--listen-client-urls',
      endpoint,
      '--advertise-client-urls',
      endpoint,
      '--initial-cluster',
      `demo=${peer}`,
    ]),
    'member.log',
  );
  const c = clientFor([endpoint], { dialTimeoutMs: 2000, commandTimeoutMs: 10_000 });
  try {
    await until('the member', async () => (await c.status()).leader !== 0n);
    for (let i = 0; i < 200; i++) await c.put(`/app/config/${i}`, `setting ${i}`);
    say('200 keys under /app/config/; starting the backup agent (a segment every second)');
    background(
      [BIN, 'backup', 'run', '--store', store, '--spool-dir', path.join(dir, 'spool'), '--endpoints', endpoint, '--delta-interval', '1s'],
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
    const beforeTime = new Date().toISOString();
    await new Promise((r) => setTimeout(r, 1500));
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
      endpoint,
      '--yes',
      '--audit-db',
      path.join(dir, 'audit.db'),
    ]);
    const back = (await c.range('/app/orders/', { rangeEnd: '/app/orders0' })).kvs;
    if (back.length !== orders.length || back.some((kv) => kv.value.toString() !== `order ${kv.key.toString().slice(-3)}`))
      throw new Error(`${back.length} of ${orders.length} orders came back as they were`);
    say(`every one of the ${orders.length} orders is back; the 50 changed settings are untouched`);

    const snap = path.join(dir, 'before-the-delete.db');
    await must(['backup', 'restore', store, '--at', beforeTime, '--accept-uncertain-time', '--output', snap]);
    await must(['snapshot', 'status', snap]);
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
  if (!failed) fs.rmSync(dir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
