// `lifeboat drill` against clusters with mutual TLS and etcd's auth enabled, on both
// runtimes (a Lifeboat cluster, a real etcd 3.4 one): the restored scratch cluster
// keeps the snapshot's auth, so the drill logs in to it with the operator's
// credentials and passes; the kept scratch cluster still refuses a client without
// them. A user the snapshot does not know is refused by the restored cluster, and a
// wrong password by the source, each at once and by name (not a leader timeout);
// without --user the drill says to give one (the source's refusal, or before restoring
// a snapshot with auth). `snapshot status` says restore keeps auth. The password is
// in no output.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { clientFor } from '../../src/client/etcdClient.js';
import type { DrillResult } from '../../src/drill/drill.js';
import { makeCerts, type TestCerts } from '../support/certs.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { processesUnder, stopProcessesUnder } from '../support/processes.js';
import { etcdctl, run, ROOT, type RunResult } from '../support/tools.js';
import { TlsCluster } from '../tls/tlsCluster.js';

const PASSWORD = 'Kq4-drill-root-secret';
const LATE_PASSWORD = 'Late-user-pw-83';
const KEPT_LINE = 'authentication enabled (kept by restore: log in as a user of the snapshot)';

/** `lifeboat ARGS` with `password` in LIFEBOAT_PASSWORD (and no other password from the environment). */
function lifeboatWith(password: string | undefined, args: string[]): Promise<RunResult> {
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', ETCDCTL_PASSWORD: '' };
  for (const k of Object.keys(env)) if (k.startsWith('LIFEBOAT_')) delete env[k];
  if (password !== undefined) env.LIFEBOAT_PASSWORD = password;
  return run(process.execPath, [path.join(ROOT, 'bin', 'run.js'), ...args], { env, timeoutMs: 120_000 });
}

/** A source cluster, served over TLS with the test client certificate required. */
interface Source {
  endpoint: string;
  certs: TestCerts;
  /** its temp dir: snapshots, the audit log and scratch dirs go there */
  dir: string;
  /** etcdctl against the source over TLS */
  ctl: (...args: string[]) => Promise<Pick<RunResult, 'code' | 'stdout' | 'stderr'>>;
}

const authSetup = [
  ['user', 'add', `root:${PASSWORD}`],
  ['user', 'grant-role', 'root', 'root'],
  ['role', 'add', 'reader'],
  ['role', 'grant-permission', 'reader', 'read', '/app/', '--prefix=true'],
  ['user', 'add', 'reader:readerpw'],
  ['user', 'grant-role', 'reader', 'reader'],
  ['auth', 'enable'],
];

/** Auth with root and a reader, 120 keys, a snapshot saved by `save`, then a user the snapshot does not have. */
async function setUp(s: Source, save: (file: string) => ReturnType<Source['ctl']>): Promise<string> {
  for (const args of authSetup) {
    const r = await s.ctl(...args);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  }
  // One client, one login (an etcdctl per key would authenticate, bcrypt and all, 120 times).
  const c = clientFor(s.endpoint, {
    dialTimeoutMs: 2000,
    commandTimeoutMs: 10_000,
    tls: { caFile: s.certs.ca, certFile: s.certs.clientCert, keyFile: s.certs.clientKey },
    credentials: { user: 'root', password: PASSWORD },
  });
  try {
    for (let i = 0; i < 120; i += 40) await Promise.all(Array.from({ length: 40 }, (_, j) => c.put(`/app/key-${String(i + j).padStart(4, '0')}`, `v${i + j}`)));
  } finally {
    c.close();
  }
  const snap = path.join(s.dir, 'before-late.db');
  const saved = await save(snap);
  assert.equal(saved.code, 0, saved.stderr);
  for (const args of [
    ['user', 'add', `late:${LATE_PASSWORD}`],
    ['user', 'grant-role', 'late', 'root'],
  ]) {
    const r = await s.ctl('--user', `root:${PASSWORD}`, ...args);
    assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
  }
  return snap;
}

const tlsArgs = (s: Source) => ['--cacert', s.certs.ca, '--cert', s.certs.clientCert, '--key', s.certs.clientKey];

function drill(s: Source, password: string | undefined, ...args: string[]): Promise<RunResult> {
  return lifeboatWith(password, ['drill', '--endpoints', s.endpoint, ...tlsArgs(s), '--audit-db', path.join(s.dir, 'audit.db'), ...args]);
}

function assertNoSecret(r: RunResult, ...secrets: string[]): void {
  for (const secret of secrets) assert.ok(!(r.stdout + r.stderr).includes(secret), `the password is in the output:\n${r.stdout}\n${r.stderr}`);
}

/** The cases both runtimes must pass; `members`: the scratch cluster's size in the passing drill. */
function drillCases(runtime: 'lifeboat' | 'etcd', source: () => Source, snapshot: () => string, members: number): void {
  test(`a drill with --user root passes over mutual TLS, and the kept scratch cluster enforces the snapshot's auth`, async () => {
    const s = source();
    const scratch = path.join(s.dir, 'scratch-pass');
    const r = await drill(
      s,
      PASSWORD,
      '--user',
      'root',
      '--members',
      String(members),
      '--stabilization',
      '500ms',
      '--keep',
      '--scratch-dir',
      scratch,
      '-w',
      'json',
    );
    try {
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
      assertNoSecret(r, PASSWORD);
      const result = JSON.parse(r.stdout) as DrillResult;
      assert.equal(result.runtime, runtime);
      assert.equal(result.data?.method, 'hashkv');
      assert.equal(result.data?.keys.scratch, 120);
      assert.deepEqual(
        result.checks.map((c) => [c.name, c.ok]),
        [
          ['snapshot', true],
          ['write', true],
          ['keys', true],
          ['hash', true],
          ['members', true],
        ],
      );
      // The scratch cluster (plain http on loopback) kept the snapshot's users and auth.
      const scratchEndpoints = result.scratch.members.map((m) => m.clientUrl).join(',');
      assert.ok(scratchEndpoints.startsWith('http://127.0.0.1:'), scratchEndpoints);
      const anonymous = await etcdctl('--endpoints', scratchEndpoints, 'get', '/app/key-0001');
      assert.notEqual(anonymous.code, 0, anonymous.stdout);
      assert.match(anonymous.stderr, /user name is empty/);
      const reader = await etcdctl('--endpoints', scratchEndpoints, '--user', 'reader:readerpw', 'get', '/app/key-0001', '--print-value-only');
      assert.equal(reader.stdout, 'v1\n', reader.stderr);
    } finally {
      await stopProcessesUnder(scratch);
    }
    assert.deepEqual(processesUnder(scratch), []);
  });

  test('snapshot status says restore keeps auth', async () => {
    const text = await lifeboatWith(undefined, ['snapshot', 'status', snapshot()]);
    assert.equal(text.code, 0, text.stderr);
    assert.ok(text.stdout.split('\n').includes(KEPT_LINE), text.stdout);
    assert.doesNotMatch(text.stdout, /not carried over/);
    const json = await lifeboatWith(undefined, ['snapshot', 'status', snapshot(), '-w', 'json']);
    assert.equal((JSON.parse(json.stdout) as { authEnabled: boolean }).authEnabled, true);
  });

  test('a user the snapshot does not have is refused by the restored cluster at once, by name', async () => {
    const s = source();
    const scratch = path.join(s.dir, 'scratch-late');
    const r = await drill(s, LATE_PASSWORD, '--user', 'late', '--from-snapshot', snapshot(), '--scratch-dir', scratch);
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    assert.match(
      r.stdout + r.stderr,
      /the restored cluster has auth enabled and rejected user late \(etcdserver: authentication failed, invalid user ID or password\); it keeps the snapshot's users/,
    );
    assert.doesNotMatch(r.stdout + r.stderr, /timed out|waiting for a leader/);
    assert.ok(r.ms < 30_000, `took ${r.ms} ms`);
    assertNoSecret(r, LATE_PASSWORD);
    assert.deepEqual(processesUnder(scratch), []);
  });
}

describe('drills of clusters with mutual TLS and auth', () => {
  let certs: TestCerts;
  before(async () => {
    certs = await makeCerts(fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-drill-auth-certs-')));
  });
  after(() => {
    if (certs && !process.env.LIFEBOAT_KEEP_TEST_DIRS) fs.rmSync(certs.dir, { recursive: true, force: true });
  });

  describe('a Lifeboat cluster', () => {
    let tc: TlsCluster;
    let s: Source;
    let snap: string;
    before(async () => {
      tc = await TlsCluster.create('drillAuth.test', certs, 1);
      const [m1] = await tc.startFounders('m1');
      s = { endpoint: m1.client, certs, dir: tc.c.dir, ctl: (...args) => tc.ctl(m1.client, ...args) };
      snap = await setUp(s, (file) => lifeboatWith(PASSWORD, ['snapshot', 'save', file, '--endpoints', s.endpoint, ...tlsArgs(s), '--user', 'root']));
    });
    after(async () => {
      if (tc) await stopProcessesUnder(tc.c.dir);
      await tc?.c.stopAll();
    });

    drillCases(
      'lifeboat',
      () => s,
      () => snap,
      2,
    );

    test('a wrong password is refused by the source at once, by name', async () => {
      const wrong = 'Not-the-root-pw-5';
      const r = await drill(s, wrong, '--user', 'root', '--scratch-dir', path.join(s.dir, 'scratch-wrong'));
      assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
      assert.match(
        r.stdout + r.stderr,
        /the source cluster has auth enabled and rejected user root \(etcdserver: authentication failed, invalid user ID or password\)/,
      );
      assert.ok(r.ms < 20_000, `took ${r.ms} ms`);
      assertNoSecret(r, wrong);
    });

    test('without --user, a snapshot with auth is not restored: the drill says to give one', async () => {
      const r = await drill(s, undefined, '--from-snapshot', snap, '--scratch-dir', path.join(s.dir, 'scratch-nouser'), '-w', 'json');
      assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
      const result = JSON.parse(r.stdout) as DrillResult;
      assert.match(
        result.failures.join('\n'),
        /before-late\.db has auth enabled, and so will the restored cluster: it keeps the snapshot's users.*give --user/,
      );
      assert.deepEqual(result.phases, [], 'nothing restored');
    });
  });

  describe('a real etcd cluster', () => {
    let cluster: EtcdCluster;
    let s: Source;
    let snap: string;
    before(async () => {
      cluster = await EtcdCluster.start({ size: 1, portSeed: 'drillAuth.test-etcd', tls: certs, peerTls: true });
      const endpoint = cluster.endpoints;
      s = { endpoint, certs, dir: cluster.dir, ctl: (...args) => etcdctl('--endpoints', endpoint, ...cluster.tlsArgs(), ...args) };
      // etcdctl's snapshot: the drill restores it with etcd's own tools.
      snap = await setUp(s, (file) => s.ctl('--user', `root:${PASSWORD}`, 'snapshot', 'save', file));
    });
    after(async () => {
      if (cluster) await stopProcessesUnder(cluster.dir);
      await cluster?.stop();
    });

    drillCases(
      'etcd',
      () => s,
      () => snap,
      1,
    );

    test('without --user, the source refuses the snapshot and the drill says to give a user', async () => {
      const r = await drill(s, undefined, '--scratch-dir', path.join(s.dir, 'scratch-anonymous'));
      assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
      assert.match(r.stdout + r.stderr, /the source cluster has auth enabled and the drill gave no user \(etcdserver: permission denied\); give --user/);
      assert.ok(r.ms < 20_000, `took ${r.ms} ms`);
    });

    test("etcd's snapshot restored into Lifeboat (--runtime lifeboat) keeps its auth too: root passes, a user it lacks is refused", async () => {
      const asRoot = await drill(
        s,
        PASSWORD,
        '--user',
        'root',
        '--from-snapshot',
        snap,
        '--runtime',
        'lifeboat',
        '--scratch-dir',
        path.join(s.dir, 'scratch-lb'),
      );
      assert.equal(asRoot.code, 0, `${asRoot.stdout}\n${asRoot.stderr}`);
      assert.match(asRoot.stdout, /drill r-\S+ PASSED: lifeboat scratch cluster/);
      const late = await drill(
        s,
        LATE_PASSWORD,
        '--user',
        'late',
        '--from-snapshot',
        snap,
        '--runtime',
        'lifeboat',
        '--scratch-dir',
        path.join(s.dir, 'scratch-lb-late'),
      );
      assert.equal(late.code, 1, `${late.stdout}\n${late.stderr}`);
      assert.match(late.stdout + late.stderr, /the restored cluster has auth enabled and rejected user late \(etcdserver: authentication failed/);
    });
  });
});
