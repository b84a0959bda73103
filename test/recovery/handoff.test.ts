// The hand-off at the end of a run that started or re-created members: they run
// as processes the CLI started, so the run ends with, per member, its command
// line, an environment file next to its data dir (LIFEBOAT_* or ETCD_*), the
// systemd unit that uses it and the old data dir that unit must no longer start;
// data dir and env file belong to the service user (0700/0600). This machine has
// no systemd: the tests read the files, and start a member the way its unit would.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BIN, LifeboatCluster, ROOT, etcdctl, killByLock, lifeboat, waitFor } from '../support/lifeboatCluster.js';
import { readEnvFile } from '../support/envFile.js';
import { freePorts } from '../support/ports.js';
import { requireTool } from '../support/tools.js';

function uidOf(user: string): number {
  const line = fs
    .readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith(`${user}:`));
  assert.ok(line, `no user ${user} on this host`);
  return Number(line.split(':')[2]);
}

describe('the hand-off to the supervisor', () => {
  let c: LifeboatCluster;
  const pids: number[] = [];
  const dirs: string[] = [];
  before(async () => {
    c = await LifeboatCluster.start('handoff', 1);
    assert.equal((await etcdctl(c.members[0].client, 'put', 'kept', 'yes')).code, 0);
    await c.kill(c.members[0], 'SIGTERM');
  });
  after(async () => {
    for (const d of dirs) killByLock(d);
    for (const p of pids) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await c?.stopAll();
  });

  test('a recovery with --supervisor systemd: env file, unit file, ownership and modes; the unit settings start the member', async () => {
    const m1 = c.members[0];
    const newDir = path.join(c.dir, 'm1-new');
    dirs.push(newDir);
    const unitDir = path.join(c.dir, 'units');
    fs.mkdirSync(unitDir);
    const auditDb = path.join(c.dir, 'audit.db');
    const [clientPort] = await freePorts(1, 'handoff-client');
    const clientUrl = `http://127.0.0.1:${clientPort}`;
    const args = [
      'playbook',
      'run',
      'recover-from-quorum-loss',
      '--yes',
      '--reason',
      'hand-off test',
      '--audit-db',
      auditDb,
      '--set',
      `source=${m1.dataDir}`,
      '--set',
      `data-dir=${newDir}`,
      '--set',
      'name=m1',
      '--set',
      `peer-url=${m1.peerUrl}`,
      '--set',
      `client-url=${clientUrl}`,
    ];

    // Bad supervisor flags: one line, exit 2, nothing run or written.
    const noDir = await lifeboat(...args, '--supervisor', 'systemd');
    assert.equal(noDir.code, 2, noDir.stderr);
    assert.equal(noDir.stderr.trim(), 'Error: --supervisor systemd needs --unit-dir DIR: where to write the unit files (e.g. /etc/systemd/system)');
    const noUser = await lifeboat(...args, '--service-user', 'no-such-user-4711');
    assert.equal(noUser.code, 2);
    assert.match(noUser.stderr, /^Error: --service-user no-such-user-4711: no such user on this host/);
    assert.ok(!fs.existsSync(auditDb) && !fs.existsSync(newDir), 'nothing was written');

    const r = await lifeboat(...args, '--supervisor', 'systemd', '--unit-dir', unitDir, '--service-user', 'nobody');
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const out = r.stdout;
    const envFile = `${newDir}.env`;
    const unitFile = path.join(unitDir, 'lifeboat-m1.service');
    assert.match(out, /^Hand-off: this member runs as a process this run started \(logs in .*\/runs\/r-[0-9a-f-]+\)/m);
    assert.match(out, new RegExp(`^ {4}command {7}lifeboat server --name m1 --data-dir ${newDir} --listen-peer-urls ${m1.peerUrl} `, 'm'));
    assert.match(out, new RegExp(`^ {4}env file {6}${envFile} \\(LIFEBOAT_\\*, mode 0600, owner nobody\\)$`, 'm'));
    assert.match(out, new RegExp(`^ {4}data dir {6}${newDir} \\(mode 0700, owner nobody\\)$`, 'm'));
    assert.match(out, new RegExp(`^ {4}unit {10}${unitFile}$`, 'm'));
    assert.match(out, new RegExp(`^ {4}old data dir {2}${path.resolve(m1.dataDir)}: superseded; no unit may start it again`, 'm'));
    assert.match(out, /^Switch over: systemctl daemon-reload; then one member at a time: kill -TERM \d+ && systemctl enable --now lifeboat-m1.service$/m);

    const nobody = uidOf('nobody');
    const envStat = fs.statSync(envFile);
    assert.equal(envStat.mode & 0o777, 0o600);
    assert.equal(envStat.uid, nobody);
    const dirStat = fs.statSync(newDir);
    assert.equal(dirStat.mode & 0o777, 0o700);
    assert.equal(dirStat.uid, nobody);
    assert.equal(fs.statSync(path.join(newDir, 'member')).uid, nobody, 'every file of the data dir is handed over');
    const env = readEnvFile(envFile);
    assert.equal(env.LIFEBOAT_NAME, 'm1');
    assert.equal(env.LIFEBOAT_DATA_DIR, newDir);
    assert.equal(env.LIFEBOAT_LISTEN_CLIENT_URLS, clientUrl);
    assert.equal(env.LIFEBOAT_INITIAL_ADVERTISE_PEER_URLS, m1.peerUrl);
    // The cluster exists: the hand-off never says `new` (the whole membership here is m1).
    assert.equal(env.LIFEBOAT_INITIAL_CLUSTER_STATE, 'existing');
    assert.equal(env.LIFEBOAT_INITIAL_CLUSTER, `m1=${m1.peerUrl}`);
    assert.match(out, new RegExp(`^ {4}command {7}lifeboat server .* --initial-cluster m1=${m1.peerUrl} --initial-cluster-state existing`, 'm'));
    const unit = fs.readFileSync(unitFile, 'utf8');
    assert.equal(fs.statSync(unitFile).mode & 0o777, 0o644);
    assert.match(unit, /^User=nobody$/m);
    assert.match(unit, new RegExp(`^EnvironmentFile=${envFile}$`, 'm'));
    assert.match(
      unit,
      new RegExp(
        `^ExecStart=${process.execPath} --max-semi-space-size=4 --heap-growing-percent=50 --v8-pool-size=1 ${path.join(ROOT, 'bin', 'run.js')} server$`,
        'm',
      ),
    );
    assert.match(unit, /^RestartPreventExitStatus=78$/m);
    assert.deepEqual(
      fs.readdirSync(unitDir).filter((f) => f.endsWith('.tmp')),
      [],
    );

    // What the unit does after a reboot: the member from the env file alone, no flags.
    killByLock(newDir);
    await waitFor('the run-started member to stop', async () => (await etcdctl(clientUrl, 'endpoint', 'health')).code !== 0, 15_000, 200);
    const fromUnit = spawn(process.execPath, [BIN, 'server'], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'ignore' });
    pids.push(fromUnit.pid ?? 0);
    const got = await waitFor(
      'the member started from the env file to serve',
      async () => {
        const g = await etcdctl(clientUrl, 'get', 'kept', '--print-value-only');
        return g.code === 0 && g.stdout.trim() !== '' ? g.stdout.trim() : undefined;
      },
      20_000,
      300,
    );
    assert.equal(got, 'yes');
    fromUnit.kill('SIGKILL');
    await new Promise((r) => fromUnit.once('exit', r));

    // Its data dir wiped, the unit's settings bootstrap no new cluster: the member tries to join, finds no peer and exits.
    const aside = `${newDir}.aside`;
    fs.renameSync(newDir, aside);
    const wiped = spawn(process.execPath, [BIN, 'server'], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
    pids.push(wiped.pid ?? 0);
    let stderr = '';
    wiped.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const code = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => {
        wiped.kill('SIGKILL');
        resolve(null);
      }, 20_000);
      wiped.once('exit', (c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
    assert.ok(code !== null && code !== 0, `the member on a wiped data dir kept running or exited 0 (${code}): ${stderr}`);
    assert.match(stderr, /cannot fetch the cluster's membership from any peer in --initial-cluster/);
    assert.notEqual((await etcdctl(clientUrl, 'endpoint', 'health')).code, 0, 'a new cluster serves on the member URL');
    fs.rmSync(newDir, { recursive: true, force: true });
    fs.renameSync(aside, newDir);
  });

  test('an etcd member: ETCD_* env file and a unit running etcd with EnvironmentFile (--supervisor print)', async () => {
    const etcd = requireTool('etcd');
    const [peer, client] = await freePorts(2, 'handoff-etcd');
    const dataDir = path.join(c.dir, 'e1');
    dirs.push(dataDir);
    const file = path.join(c.dir, 'start-etcd.yaml');
    fs.writeFileSync(
      file,
      `name: start-etcd
description: starts one etcd member
steps:
  - id: start
    type: start-member
    with: {name: e1, data-dir: ${dataDir}, peer-url: "http://127.0.0.1:${peer}", client-url: "http://127.0.0.1:${client}", initial-cluster: "e1=http://127.0.0.1:${peer}", runtime: etcd}
`,
    );
    const r = await lifeboat('playbook', 'run', file, '--yes', '--reason', 'etcd hand-off', '--audit-db', path.join(c.dir, 'etcd-audit.db'));
    const pid = Number(/e1 \(etcd, pid (\d+)/.exec(r.stdout)?.[1] ?? 0);
    if (pid > 0) pids.push(pid);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, new RegExp(`^ {4}command {7}etcd --name e1 --data-dir ${dataDir} `, 'm'));
    assert.match(r.stdout, new RegExp(`^ {4}env file {6}${dataDir}.env \\(ETCD_\\*, mode 0600\\)$`, 'm'));
    assert.match(r.stdout, /^ {4}old data dir {2}the one e1's old unit used, on its host: superseded/m);
    assert.match(r.stdout, /^ {2}--- etcd-e1.service ---$/m);
    assert.match(r.stdout, new RegExp(`^ {2}ExecStart=${path.resolve(etcd)}$`, 'm'));
    assert.match(r.stdout, /^ {2}Type=notify$/m);
    assert.match(r.stdout, new RegExp(`^ {2}EnvironmentFile=${dataDir}.env$`, 'm'));
    const env = readEnvFile(`${dataDir}.env`);
    assert.equal(env.ETCD_NAME, 'e1');
    assert.equal(env.ETCD_DATA_DIR, dataDir);
    assert.equal(env.ETCD_INITIAL_CLUSTER, `e1=http://127.0.0.1:${peer}`);
    assert.equal(env.ETCD_INITIAL_CLUSTER_STATE, 'existing');
    assert.ok(!Object.keys(env).some((k) => k.startsWith('LIFEBOAT_')));
    assert.equal(fs.statSync(`${dataDir}.env`).mode & 0o777, 0o600);
    assert.equal(fs.statSync(dataDir).mode & 0o777, 0o700);
  });
});
