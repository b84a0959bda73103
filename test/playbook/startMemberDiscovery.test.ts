// start-member with a discovery URL starts real etcd 3.4 members that bootstrap
// from a private discovery service (Debian's etcd-discovery): three form a
// cluster, a fourth exits (--discovery-fallback exit, never etcd's silent proxy),
// and a member restarted with its data dir needs no discovery service. One
// runtime per token: a Lifeboat member on a token an etcd member registered with
// is refused, and start-member refuses an etcd member on a token a Lifeboat
// member registered with.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startMember } from '../../src/playbook/steps/startStopSteps.js';
import { SafetyCheckError } from '../../src/playbook/stepTypes.js';
import type { StepContext } from '../../src/playbook/stepTypes.js';
import { DiscoveryService } from '../support/discoveryService.js';
import { LifeboatCluster, lifeboat, waitFor } from '../support/lifeboatCluster.js';
import { readEnvFile } from '../support/envFile.js';
import { freePorts } from '../support/ports.js';
import { etcdctl, stopProcess } from '../support/tools.js';

/** What a playbook run gives a step, with nothing asked and the run's files under `dir`/run. */
const stepContext = (dir: string): StepContext => ({
  progress: () => undefined,
  event: () => undefined,
  confirm: () => Promise.resolve(true),
  runDir: path.join(dir, 'run'),
  signal: new AbortController().signal,
  connection: { dialTimeoutMs: 1000, commandTimeoutMs: 5000 },
});

describe('start-member bootstraps etcd members from a discovery URL', () => {
  let d: DiscoveryService;
  let dir: string;
  let token: string;
  const pids: number[] = [];
  const ctx = () => stepContext(dir);
  let ports: number[];
  const params = (i: number) => ({
    name: `e${i + 1}`,
    'data-dir': path.join(dir, `e${i + 1}`),
    'peer-url': `http://127.0.0.1:${ports[2 * i]}`,
    'client-url': `http://127.0.0.1:${ports[2 * i + 1]}`,
    'initial-cluster': '',
    discovery: token,
    state: 'new',
    runtime: 'etcd',
    timeout: 8_000,
  });
  const stop = (pid: number) => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };

  before(async () => {
    d = await DiscoveryService.start('start-member-discovery');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-start-discovery-'));
    ports = await freePorts(8, 'start-member-discovery-members');
    token = await d.newToken(3);
  });
  after(async () => {
    for (const pid of pids) stop(pid);
    await d?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('three etcd members started at once with only the token form one cluster', async () => {
    const outs = await Promise.all([0, 1, 2].map((i) => startMember.run(params(i), ctx())));
    for (const o of outs) pids.push(Number(o.pid));
    const endpoints = [0, 1, 2].map((i) => params(i)['client-url']);
    const list = await etcdctl('--endpoints', endpoints.join(','), 'member', 'list');
    assert.equal(list.code, 0, list.stderr);
    assert.equal(list.stdout.trim().split('\n').length, 3, list.stdout);
    for (const i of [0, 1, 2]) assert.ok(list.stdout.includes(`, e${i + 1}, ${params(i)['peer-url']}`), list.stdout);
    // The settings it records for the hand-off carry the discovery URL with fallback exit, not an initial cluster.
    const settings = new Map(outs[0].settings as Array<[string, string]>);
    assert.equal(settings.get('discovery-fallback'), 'exit');
    assert.ok(!settings.has('initial-cluster'));
  });

  test('a fourth etcd member exits at once (cluster is full) instead of becoming a proxy', async () => {
    await assert.rejects(startMember.run(params(3), ctx()), /e4 \(etcd\) stopped at once \(exit 1\)[\s\S]*cluster is full/);
  });

  test('the hand-off and member add carry no discovery: env file, unit and command, and the printed ETCD_* settings', async () => {
    // A size-1 token: one etcd member bootstraps from it through a playbook's start-member, then is handed over.
    const one = await d.newToken(1);
    const [peer, client, added] = await freePorts(3, 'start-member-discovery-handoff');
    const dataDir = path.join(dir, 'h1');
    const file = path.join(dir, 'start-h1.yaml');
    fs.writeFileSync(
      file,
      `name: start-h1
description: bootstraps one etcd member from a discovery URL
steps:
  - id: start
    type: start-member
    with: {name: h1, data-dir: ${dataDir}, peer-url: "http://127.0.0.1:${peer}", client-url: "http://127.0.0.1:${client}", initial-cluster: "", discovery: "${one}", runtime: etcd}
`,
    );
    const r = await lifeboat('playbook', 'run', file, '--yes', '--reason', 'discovery hand-off', '--audit-db', path.join(dir, 'handoff-audit.db'));
    const pid = Number(/h1 \(etcd, pid (\d+)/.exec(r.stdout)?.[1] ?? 0);
    if (pid > 0) pids.push(pid);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    // The run started it from the token; what the supervisor gets is the membership instead.
    assert.match(fs.readFileSync(path.join(dir, 'handoff-audit.db')).toString('latin1'), /discovery-fallback/);
    const env = readEnvFile(`${dataDir}.env`);
    assert.equal(env.ETCD_INITIAL_CLUSTER, `h1=http://127.0.0.1:${peer}`);
    assert.equal(env.ETCD_INITIAL_CLUSTER_STATE, 'existing');
    const leaked = (text: string) => /(ETCD|LIFEBOAT)_DISCOVERY|--discovery/.test(text);
    assert.ok(!Object.keys(env).some((k) => k.includes('DISCOVERY')), JSON.stringify(env));
    assert.ok(!leaked(r.stdout), r.stdout);
    assert.match(r.stdout, /--- etcd-h1\.service ---/);
    const add = await lifeboat('member', 'add', 'h2', '--peer-urls', `http://127.0.0.1:${added}`, '--learner', '--endpoints', `127.0.0.1:${client}`);
    assert.equal(add.code, 0, add.stderr);
    assert.match(add.stdout, /ETCD_INITIAL_CLUSTER_STATE="existing"/);
    assert.ok(!leaked(add.stdout), add.stdout);
  });

  test('an etcd member restarted with its data dir starts with the discovery service stopped', async () => {
    await d.stopService();
    stop(pids[0]);
    const client = params(0)['client-url'];
    // Bounded: the killed member's port is free again within a few seconds.
    for (let i = 0; i < 50 && (await etcdctl('--endpoints', client, '--dial-timeout', '200ms', 'endpoint', 'health')).code === 0; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const out = await startMember.run(params(0), ctx());
    pids.push(Number(out.pid));
    const put = await etcdctl('--endpoints', client, 'put', 'k', 'v');
    assert.equal(put.code, 0, put.stderr);
  });
});

describe('one runtime per discovery token', () => {
  let d: DiscoveryService;
  let c: LifeboatCluster;
  let dir: string;
  let etcd: ChildProcess | undefined;
  before(async () => {
    d = await DiscoveryService.start('discovery-mixed');
    c = await LifeboatCluster.create('discovery-mixed', 2);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-discovery-mixed-'));
  });
  after(async () => {
    if (etcd) await stopProcess(etcd);
    await c?.stopAll();
    await d?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a Lifeboat member whose token holds an etcd member is refused in one line, writing nothing', async () => {
    const token = await d.newToken(2);
    const [e, l] = [c.define('e1'), c.define('l1')];
    // A real etcd 3.4 member on the same token: it waits for the second registration.
    const log = fs.openSync(path.join(dir, 'e1.log'), 'a');
    etcd = spawn(
      'etcd',
      [
        '--name',
        e.name,
        '--data-dir',
        e.dataDir,
        '--listen-peer-urls',
        e.peerUrl,
        '--initial-advertise-peer-urls',
        e.peerUrl,
        '--listen-client-urls',
        e.clientUrl,
        '--advertise-client-urls',
        e.clientUrl,
        '--discovery',
        token,
        '--discovery-fallback',
        'exit',
      ],
      { stdio: ['ignore', log, log] },
    );
    fs.closeSync(log);
    const r = await lifeboat('server', ...c.memberFlags(l), '--discovery', token);
    assert.equal(r.code, 1, r.stderr);
    const lines = r.stderr
      .trim()
      .split('\n')
      .filter((x) => x && !x.startsWith('{'));
    assert.equal(lines.length, 1, r.stderr);
    assert.match(
      lines[0],
      new RegExp(`registered member e1 \\(${e.peerUrl}\\) is an etcd 3\\.4\\.\\d+ member; Lifeboat and etcd members cannot form one cluster`),
    );
    assert.ok(!fs.existsSync(`${l.dataDir}/member`), 'the refused member wrote a data dir');
  });

  test('start-member refuses an etcd member in one line when a Lifeboat member registered on the token, registering nothing', async () => {
    const token = await d.newToken(2);
    const [l, e] = [c.define('l2'), c.define('e2')];
    // A Lifeboat member registers and waits for the second registration, answering Lifeboat's Identity meanwhile.
    c.spawn(l, ['--discovery', token]);
    await waitFor('l2 to register', () => l.log.some((x) => x.includes('1 of 2 registered')), 15_000);
    const step = startMember.run(
      {
        name: e.name,
        'data-dir': e.dataDir,
        'peer-url': e.peerUrl,
        'client-url': e.clientUrl,
        'initial-cluster': '',
        discovery: token,
        state: 'new',
        runtime: 'etcd',
        timeout: 8_000,
      },
      stepContext(dir),
    );
    const err = await step.then(
      () => assert.fail('start-member started an etcd member on a token a Lifeboat member registered with'),
      (x: Error) => x,
    );
    assert.ok(err instanceof SafetyCheckError, String(err));
    assert.equal(err.message.split('\n').length, 1, err.message);
    assert.match(err.message, new RegExp(`registered member l2 \\(${l.peerUrl}\\) is a Lifeboat member; Lifeboat and etcd members cannot form one cluster`));
    assert.ok(!fs.existsSync(e.dataDir), 'the refused etcd member wrote a data dir');
    // Nothing registered for e2: the token still waits for a second member.
    const registry = (await (await fetch(token)).json()) as { node: { nodes?: unknown[] } };
    assert.equal(registry.node.nodes?.length, 1, JSON.stringify(registry));
  });
});
