// `npm run demo [-- --runtime etcd]`: the main job end to end on this machine, in
// under a minute. A 3-member cluster on 127.0.0.1 (Lifeboat members, or real etcd)
// takes 10,000 keys, loses two members for good, and the survivor's data dir is
// recovered with the scripted recover-from-quorum-loss playbook into a new cluster
// of 3 healthy voters of the same runtime; the old data dirs are fenced, so the old
// members, restarted, stop at once; the run hands its members over (env files,
// systemd units); the audit timeline shows every step.
// Everything it starts is stopped and its directory removed.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { clientFor, type ConnectionOptions } from '../../src/client/etcdClient.js';
import { prefixEnd } from '../../src/client/keyRange.js';
import { etcdBinary, runtimeOfVersion } from '../../src/ops/runtime.js';
import { detachedMemberPids, killDetachedMembers } from './detachedMembers.js';
import { portIsFree } from '../../src/common/ports.js';
import { lifeboatServerArgv } from '../../src/common/memberCommand.js';
import { IndentedLines } from './indentedLines.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const BIN = path.join(ROOT, 'bin', 'run.js');
const KEYS = 10_000;
/** The lifeboat commands' own output sits under the demo's `[  6.0s] ` lines. */
const CHILD_INDENT = ' '.repeat(9);
const DEMO_CONNECTION: ConnectionOptions = { dialTimeoutMs: 5000, commandTimeoutMs: 10_000 };

/** --keep: the recovered cluster stays up (for `lifeboat drill`, `audit report`, a look around), its directory too. */
const KEEP = process.argv.includes('--keep');
let kept = '';
const runtimeArg = process.argv.indexOf('--runtime');
const RUNTIME = runtimeArg >= 0 ? process.argv[runtimeArg + 1] : 'lifeboat';
if (RUNTIME !== 'lifeboat' && RUNTIME !== 'etcd') {
  console.error(`--runtime ${RUNTIME}: expected lifeboat or etcd`);
  process.exit(2);
}
/** How an old member that comes back on a fenced data dir must stop: Lifeboat exits 78 (superseded), etcd 1 (its member/ beside a proxy/). */
const FENCED_EXIT = RUNTIME === 'etcd' ? 1 : 78;
const FENCED_LOG = RUNTIME === 'etcd' ? /Both member and proxy directories exist/ : /cluster superseded by [0-9a-f]+/;

const started = Date.now();
const say = (msg: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(1).padStart(5)}s] ${msg}`);

/** The first free loopback port from `from` on. */
async function freePort(from: number): Promise<number> {
  for (let p = from; p < from + 1000; p++) if (await portIsFree(p)) return p;
  throw new Error(`no free port in ${from}..${from + 999}`);
}

interface Proc {
  name: string;
  child: ChildProcess;
  exit: Promise<number | null>;
}

const procs: Proc[] = [];
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-demo-'));

function server(name: string, dataDir: string, peer: string, client: string, initialCluster: string, logName = name): Proc {
  const log = fs.openSync(path.join(dir, `${logName}.log`), 'a');
  const child = spawn(
    RUNTIME === 'etcd' ? etcdBinary() : process.execPath,
    [
      ...(RUNTIME === 'etcd' ? ['--initial-cluster-token', `demo-${path.basename(dir)}`] : lifeboatServerArgv(BIN, [])),
      '--name',
      name,
      '--data-dir',
      dataDir,
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--listen-client-urls',
      client,
      '--advertise-client-urls',
      client,
      '--initial-cluster',
      initialCluster,
      '--heartbeat-interval',
      '50',
      '--election-timeout',
      '500',
    ],
    { stdio: ['ignore', log, log] },
  );
  fs.closeSync(log);
  const p: Proc = { name: logName, child, exit: new Promise((r) => child.on('exit', (code) => r(code))) };
  procs.push(p);
  return p;
}

function lifeboat(args: string[], opts: { quiet?: boolean } = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const show = (text: string) => {
      if (!opts.quiet) process.stdout.write(text);
    };
    const shown = [new IndentedLines(CHILD_INDENT, show), new IndentedLines(CHILD_INDENT, show)];
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      shown[0].push(d);
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      shown[1].push(d);
    });
    child.on('close', (code) => {
      for (const s of shown) s.end();
      resolve({ code, out });
    });
  });
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main(): Promise<void> {
  const ports: number[] = [];
  for (let p = 20000 + Math.floor(Math.random() * 5000); ports.length < 12; p++) ports.push(await freePort(p + ports.length * 2));
  const url = (p: number) => `http://127.0.0.1:${p}`;
  const old = ['m1', 'm2', 'm3'].map((name, i) => ({ name, peer: url(ports[2 * i]), client: url(ports[2 * i + 1]), dataDir: path.join(dir, name) }));
  const ic = old.map((m) => `${m.name}=${m.peer}`).join(',');

  say(`starting a 3-member ${RUNTIME === 'etcd' ? 'etcd' : 'Lifeboat'} cluster on 127.0.0.1`);
  const running = old.map((m) => server(m.name, m.dataDir, m.peer, m.client, ic));
  const connect = () =>
    clientFor(
      old.map((m) => m.client),
      DEMO_CONNECTION,
    );
  // A fresh client each try: one whose first dial came before the members listened does not dial again.
  await until('a leader', async () => {
    const c = connect();
    try {
      return (await c.status()).leader !== 0n ? true : undefined;
    } finally {
      c.close();
    }
  });
  const client = connect();
  say(`writing ${KEYS} keys`);
  for (let i = 0; i < KEYS; i += 200) {
    await Promise.all(Array.from({ length: Math.min(200, KEYS - i) }, (_, j) => client.put(`demo/key-${String(i + j).padStart(5, '0')}`, `value-${i + j}`)));
  }
  const before = await client.range('demo/', { rangeEnd: prefixEnd(Buffer.from('demo/')), countOnly: true });
  const oldCluster = before.header.clusterId.toString(16);
  client.close();
  say(`${before.count} keys at revision ${before.header.revision} in cluster ${oldCluster}`);

  say('disaster: m2 and m3 are lost for good (kill -9); the cluster has no quorum');
  running[1].child.kill('SIGKILL');
  running[2].child.kill('SIGKILL');
  await Promise.all([running[1].exit, running[2].exit]);
  say('the survivor m1 is stopped so its data dir can be the recovery source');
  running[0].child.kill('SIGTERM');
  await running[0].exit;

  say('recover plan (read-only):');
  await lifeboat(['recover', 'plan', '--from-data-dir', old[0].dataDir]);

  const fresh = ['n2', 'n3'].map((name, i) => ({ name, peer: url(ports[6 + 2 * i]), client: url(ports[7 + 2 * i]), dataDir: path.join(dir, `${name}-data`) }));
  const recovered = { name: 'm1', peer: old[0].peer, client: url(ports[10]), dataDir: path.join(dir, 'm1-recovered') };
  const auditDb = path.join(dir, 'audit.db');
  say('running the scripted recover-from-quorum-loss playbook (no TTY, --yes):');
  const run = await lifeboat([
    'playbook',
    'run',
    'recover-from-quorum-loss',
    '--yes',
    '--reason',
    'demo: two members lost',
    '--audit-db',
    auditDb,
    '--set',
    `source=${old[0].dataDir}`,
    '--set',
    `data-dir=${recovered.dataDir}`,
    '--set',
    `name=${recovered.name}`,
    '--set',
    `peer-url=${recovered.peer}`,
    '--set',
    `client-url=${recovered.client}`,
    '--set',
    `members=${fresh.map((m) => `${m.name}=${m.peer},${m.client},${m.dataDir}`).join(';')}`,
    '--set',
    'stabilization=2s',
    // The hand-off (the default): per member its command line, an env file next to its data dir and the systemd unit.
    '--supervisor',
    'print',
    '--set',
    `old-data-dirs=${old
      .slice(1)
      .map((m) => m.dataDir)
      .join(',')}`,
  ]);
  if (run.code !== 0) throw new Error(`the playbook failed (exit ${run.code})`);

  // The demo's claims are checked, not only printed: any failed check fails the demo (exit 1).
  const failures: string[] = [];
  for (const m of [recovered, ...fresh]) {
    const envFile = `${m.dataDir}.env`;
    const prefix = RUNTIME === 'etcd' ? 'ETCD_NAME=' : 'LIFEBOAT_NAME=';
    if (!fs.existsSync(envFile) || !fs.readFileSync(envFile, 'utf8').includes(`${prefix}${m.name}`)) failures.push(`no hand-off env file ${envFile}`);
    if (!new RegExp(`--- ${RUNTIME}-${m.name}\\.service ---`).test(run.out)) failures.push(`no systemd unit printed for ${m.name}`);
  }
  const after = clientFor([recovered.client], DEMO_CONNECTION);
  console.log('');
  const got = await after.range('demo/', { rangeEnd: prefixEnd(Buffer.from('demo/')), keysOnly: true });
  const have = new Set(got.kvs.map((kv) => kv.key.toString()));
  const missing = Array.from({ length: KEYS }, (_, i) => `demo/key-${String(i).padStart(5, '0')}`).filter((k) => !have.has(k));
  const newCluster = got.header.clusterId.toString(16);
  say(`every key is there: ${KEYS - missing.length} of ${KEYS}; new cluster ${newCluster} (was ${oldCluster})`);
  if (missing.length > 0) failures.push(`${missing.length} keys missing (first: ${missing[0]})`);
  if (newCluster === oldCluster) failures.push('the cluster ID did not change');
  const members = await after.memberList();
  after.close();
  const voters = members.members.filter((m) => !m.isLearner);
  say(`voters: ${voters.map((m) => m.name).join(', ')}`);
  // Healthy: every voter answers its own status, names the same leader and is of the demo's runtime.
  const leaders = await Promise.all(
    voters.map(async (m) => {
      const c = clientFor(m.clientURLs, DEMO_CONNECTION);
      try {
        const s = await c.status();
        if (runtimeOfVersion(s.version) !== RUNTIME) failures.push(`${m.name} runs ${s.version}, not ${RUNTIME}`);
        return s.leader.toString(16);
      } catch (e) {
        return `unreachable (${(e as Error).message})`;
      } finally {
        c.close();
      }
    }),
  );
  if (voters.length !== 3 || members.members.length !== 3) failures.push(`${voters.length} voters of ${members.members.length} members, expected 3 voters`);
  if (new Set(leaders).size !== 1 || leaders[0] === '0' || leaders[0].startsWith('unreachable'))
    failures.push(`the voters do not agree on a leader: ${leaders.join(', ')}`);

  say('the old m2 and m3 come back on their old (fenced) data dirs, with their old command lines:');
  const back = [1, 2].map((i) => server(old[i].name, old[i].dataDir, old[i].peer, old[i].client, ic, `${old[i].name}-back`));
  const codes = await Promise.all(back.map((p) => Promise.race([p.exit, new Promise<string>((r) => setTimeout(() => r('still running'), 20_000))])));
  for (const [i, code] of codes.entries()) {
    const log = fs.readFileSync(path.join(dir, `${back[i].name}.log`), 'utf8');
    const why = FENCED_LOG.exec(log)?.[0] ?? 'no message';
    say(`  ${old[i + 1].name}: exit ${code} (${why})`);
    if (code !== FENCED_EXIT || why === 'no message')
      failures.push(`old ${old[i + 1].name} ended with ${code} (${why}), expected exit ${FENCED_EXIT} (fenced)`);
  }

  say('the audit timeline:');
  const runId = /\br-\d{8}-\d{6}-[0-9a-f]+\b/.exec(run.out)?.[0];
  await lifeboat(['audit', 'show', runId ?? '', '--audit-db', auditDb]);
  const verify = await lifeboat(['audit', 'verify', '--audit-db', auditDb]);
  if (verify.code !== 0) failures.push(`audit verify exited ${verify.code}`);
  if (failures.length > 0) throw new Error(`checks failed:\n  - ${failures.join('\n  - ')}`);
  if (KEEP) {
    const pids = detachedMemberPids(dir);
    kept = [
      `kept: the recovered cluster runs at ${[recovered.client, ...fresh.map((m) => m.client)].join(',')}`,
      `      audit log ${auditDb} (run ${runId ?? '?'}), files in ${dir}`,
      `      try: lifeboat drill --endpoints ${recovered.client}; lifeboat audit report ${runId ?? 'RUN_ID'} --audit-db ${auditDb} --html report.html`,
      `      stop it with: kill ${pids.join(' ')} && rm -rf ${dir}`,
    ].join('\n');
  }
  say('done');
}

async function cleanup(keepDir = false, keepRecovered = false): Promise<void> {
  for (const p of procs) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGKILL');
  // Members the playbook started run detached: stop them through their data dir locks (unless --keep).
  if (!keepRecovered) killDetachedMembers(dir);
  await new Promise((r) => setTimeout(r, 300));
  if (!keepDir) fs.rmSync(dir, { recursive: true, force: true });
}

main()
  .then(async () => {
    await cleanup(KEEP, KEEP);
    if (kept) console.log(kept);
  })
  .catch(async (e) => {
    console.error(`demo failed: ${(e as Error).message} (logs in ${dir})`);
    // Every member stopped, the playbook's detached ones too; the directory kept for its logs.
    await cleanup(true);
    process.exitCode = 1;
  });
