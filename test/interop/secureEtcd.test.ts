// Lifeboat against a real 3-member etcd 3.4 run as production runs it: mutual TLS
// on client and peer URLs and etcd's auth enabled. The read and maintenance
// commands work with --cacert/--cert/--key and --user root --password (or the
// ETCDCTL_* variables); no client certificate, a certificate from another CA, a
// server from another CA and a wrong password are each refused in one line with
// a non-zero exit; a real rolling-restart runs over it, its audit log and
// export holding neither the password nor the private key; and migrate-from-etcd
// moves its keys to a Lifeboat member secured the same way.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { issueCert, makeCerts, type IssuedCert, type TestCerts } from '../support/certs.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { TlsCluster } from '../tls/tlsCluster.js';
import { playbookRun } from '../support/playbookRun.js';
import { processesUnder, stopProcessesUnder } from '../support/processes.js';
import { etcdctl, failsWithOneLine, lifeboat, parseJsonIds, requireTool, ROOT, run, waitFor, type RunResult } from '../support/tools.js';

const ROOT_PW = 'Rt-pw-9f3c1a';

function ok(r: RunResult): string {
  assert.equal(r.code, 0, `exit ${r.code}; stdout: ${r.stdout} stderr: ${r.stderr}`);
  return r.stdout;
}

const lines = (s: string) => s.split('\n').filter((l) => l.trim() !== '');

describe('a real etcd 3.4 with mutual TLS and auth', () => {
  let certs: TestCerts;
  let foreign: IssuedCert;
  let cluster: EtcdCluster;
  let endpoints: string;
  let tls: string[];
  let creds: string[];

  before(
    async () => {
      requireTool('openssl');
      certs = await makeCerts(mkdtempSync(path.join(os.tmpdir(), 'lifeboat-secure-etcd-')));
      // CN root, but from another CA: the name must not be enough.
      foreign = await issueCert(certs, 'foreign', { cn: 'root', fromOtherCa: true, usage: 'client' });
      cluster = await EtcdCluster.start({ size: 3, portSeed: 'interop/secureEtcd.test', tls: certs, peerTls: true });
      endpoints = cluster.endpoints;
      tls = ['--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey];
      creds = ['--user', 'root', '--password', ROOT_PW];
      for (const args of [
        ['user', 'add', `root:${ROOT_PW}`],
        ['user', 'grant-role', 'root', 'root'],
        ['auth', 'enable'],
      ]) {
        const r = await etcdctl('--endpoints', endpoints, ...tls, ...args);
        assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
      }
      ok(await etcdctl('--endpoints', endpoints, ...tls, '--user', `root:${ROOT_PW}`, 'put', '/secure/k', 'v'));
    },
    { timeout: 60_000 },
  );

  let dest: TlsCluster | undefined;
  after(
    async () => {
      await dest?.c.stopAll();
      if (cluster) await stopProcessesUnder(cluster.dir);
      await cluster?.stop();
      if (certs) rmSync(certs.dir, { recursive: true, force: true });
    },
    { timeout: 30_000 },
  );

  test('member list, endpoint status/health/hashkv, alarm list, snapshot save and status with --cacert --cert --key --user --password', async () => {
    const ep = ['--endpoints', endpoints, ...tls, ...creds];
    const members = lines(ok(await lifeboat('member', 'list', ...ep)));
    assert.equal(members.length, 3, members.join('\n'));
    for (const m of cluster.members)
      assert.ok(
        members.some((l) => l.includes(`, started, ${m.name}, ${m.peerUrl}, ${m.clientUrl}, false`)),
        members.join('\n'),
      );
    assert.ok(cluster.members.every((m) => m.peerUrl.startsWith('https://')));

    const status = parseJsonIds(ok(await lifeboat('endpoint', 'status', ...ep, '-w', 'json'))) as Array<{ Endpoint: string; Status: { leader: string } }>;
    assert.equal(status.length, 3);
    assert.equal(new Set(status.map((s) => s.Status.leader)).size, 1, 'one leader');
    const health = lines(ok(await lifeboat('endpoint', 'health', ...ep)));
    assert.equal(health.filter((l) => / is healthy: /.test(l)).length, 3, health.join('\n'));
    const hashes = lines(ok(await lifeboat('endpoint', 'hashkv', ...ep)));
    assert.equal(hashes.length, 3, hashes.join('\n'));
    assert.equal(new Set(hashes.map((l) => l.split(', ')[1])).size, 1, `the members agree: ${hashes.join(' | ')}`);
    assert.equal(ok(await lifeboat('alarm', 'list', ...ep)), '');

    const snap = path.join(cluster.dir, 'secure.db');
    ok(await lifeboat('snapshot', 'save', snap, '--endpoints', cluster.members[0].clientUrl, ...tls, ...creds));
    const st = parseJsonIds(ok(await lifeboat('snapshot', 'status', snap, '-w', 'json'))) as { totalKey: number };
    const etc = JSON.parse((await etcdctl('snapshot', 'status', snap, '-w', 'json')).stdout) as { totalKey: number };
    assert.equal(st.totalKey, etc.totalKey);
    assert.ok(st.totalKey >= 1);
  });

  test('the ETCDCTL_* variables alone: endpoints, certificates, user and password', async () => {
    const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
    for (const k of Object.keys(env)) if (k.startsWith('LIFEBOAT_') || k.startsWith('ETCDCTL_')) delete env[k];
    Object.assign(env, {
      ETCDCTL_ENDPOINTS: endpoints,
      ETCDCTL_CACERT: certs.ca,
      ETCDCTL_CERT: certs.clientCert,
      ETCDCTL_KEY: certs.clientKey,
      ETCDCTL_USER: 'root',
      ETCDCTL_PASSWORD: ROOT_PW,
    });
    const r = await run(process.execPath, [path.join(ROOT, 'bin', 'run.js'), 'get', '/secure/k'], { env });
    assert.equal(ok(r), '/secure/k\nv\n');
  });

  test('refused in one line, non-zero: no client certificate, a certificate from another CA, a server from another CA, a wrong password, no user', async () => {
    const first = cluster.members[0].clientUrl;
    const refusals: Array<[string, string[], RegExp]> = [
      ['no client certificate', ['--cacert', certs.ca, ...creds], /TLS handshake with \S+ failed .*client certificate it trusts: check --cert and --key/],
      [
        'a client certificate from another CA (CN root)',
        ['--cacert', certs.ca, '--cert', foreign.cert, '--key', foreign.key, ...creds],
        /TLS handshake with \S+ failed .*client certificate it trusts: check --cert and --key/,
      ],
      [
        'a server certificate from another CA',
        ['--cacert', certs.otherCa, '--cert', certs.clientCert, '--key', certs.clientKey, ...creds],
        /TLS handshake with \S+ failed \(unable to verify the first certificate\); check --cacert/,
      ],
      ['a wrong password', [...tls, '--user', 'root', '--password', 'not-the-password'], /etcdserver: authentication failed, invalid user ID or password$/m],
      // With --client-cert-auth etcd takes the certificate's CN as the user: lifeboat-client has no permissions.
      ['no --user', [...tls], /etcdserver: permission denied$/m],
    ];
    for (const [what, flags, why] of refusals) {
      const r = await lifeboat('get', '/secure/k', '--endpoints', first, '--dial-timeout', '2s', '--command-timeout', '5s', ...flags);
      assert.notEqual(r.code, 0, `${what}: ${r.stdout}`);
      failsWithOneLine(r, r.code ?? -1);
      assert.match(r.stderr, why, what);
      assert.ok(!r.stderr.includes('not-the-password') && !r.stderr.includes(ROOT_PW), `${what}: the password is printed`);
    }
    // The same command with good input works (the refusals were not the cluster's state).
    assert.equal(ok(await lifeboat('get', '/secure/k', '--endpoints', first, ...tls, ...creds)), '/secure/k\nv\n');
  });

  test('rolling-restart over mutual TLS and auth: the member restarts with its TLS flags, the audit log and its export hold no password or key', async () => {
    const m = cluster.members[2];
    const pidsBefore = processesUnder(m.dataDir);
    assert.ok(pidsBefore.length > 0);
    const auditDb = path.join(cluster.dir, 'audit.db');
    const r = await playbookRun(
      'rolling-restart',
      {
        endpoints,
        members: `${m.name}=${m.peerUrl},${m.clientUrl},${m.dataDir}`,
        'cert-file': certs.serverCert,
        'key-file': certs.serverKey,
        'trusted-ca-file': certs.ca,
        'client-cert-auth': 'true',
        'peer-cert-file': certs.serverCert,
        'peer-key-file': certs.serverKey,
        'peer-trusted-ca-file': certs.ca,
        'peer-client-cert-auth': 'true',
      },
      auditDb,
      { extra: ['--endpoints', endpoints, ...tls, ...creds], timeoutMs: 90_000 },
    );
    assert.equal(r.code, 0, r.out);
    await waitFor(
      'the restarted member to be healthy',
      async () => (await lifeboat('endpoint', 'health', '--endpoints', m.clientUrl, ...tls, ...creds)).code === 0,
      {
        timeoutMs: 30_000,
      },
    );
    assert.notDeepEqual(processesUnder(m.dataDir), pidsBefore, `${m.name} was not restarted`);
    // It still refuses a client without a certificate: it came back with its TLS flags.
    assert.notEqual((await lifeboat('member', 'list', '--endpoints', m.clientUrl, '--cacert', certs.ca, '--dial-timeout', '2s', ...creds)).code, 0);

    const exported = ok(await lifeboat('audit', 'export', '--audit-db', auditDb));
    assert.match(exported, /"user": "root"/);
    const keyBody = (f: string) =>
      readFileSync(f, 'utf8')
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('-----'))
        .join('');
    const secrets = [ROOT_PW, ...[certs.serverKey, certs.clientKey].map(keyBody)];
    const dir = path.dirname(auditDb);
    const texts = [
      { where: 'export', text: exported },
      { where: 'output', text: r.out },
      ...readdirSync(dir)
        .filter((f) => f.startsWith('audit.db') && !f.endsWith('.secret-key') && statSync(path.join(dir, f)).isFile())
        .map((f) => ({ where: f, text: readFileSync(path.join(dir, f)).toString('latin1') })),
    ];
    for (const { where, text } of texts) for (const s of secrets) assert.ok(!text.includes(s.slice(0, 40)), `${where} holds a secret`);
  });

  test('migrate-from-etcd: from this etcd to a Lifeboat member with the same CA and root, both over mutual TLS and auth', async () => {
    dest = await TlsCluster.create('secure-etcd-dest', certs, 1);
    const d1 = dest.define('d1');
    dest.c.members.push(d1);
    dest.c.spawn(d1, [...dest.tlsArgs(d1), '--initial-cluster', `d1=${d1.peerUrl}`, '--initial-cluster-state', 'new']);
    await dest.waitStarted(1);
    for (const args of [
      ['user', 'add', `root:${ROOT_PW}`],
      ['user', 'grant-role', 'root', 'root'],
      ['auth', 'enable'],
    ]) {
      const r = await dest.ctl(d1.client, ...args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    }
    const src = (...args: string[]) => etcdctl('--endpoints', endpoints, ...tls, '--user', `root:${ROOT_PW}`, ...args);
    for (const args of [
      ['put', '/secure/migrated', 'yes'],
      ['role', 'add', 'app'],
      ['role', 'grant-permission', 'app', 'readwrite', '/secure/app/', '--prefix'],
      ['user', 'add', 'appuser', '--new-user-password', 'App-pw-src'],
      ['user', 'grant-role', 'appuser', 'app'],
    ])
      ok(await src(...args));
    const r = await playbookRun('migrate-from-etcd', { source: endpoints, destination: d1.clientUrl }, path.join(cluster.dir, 'migrate-audit.db'), {
      extra: [...tls, '--user', 'root'],
      // The migration's progress file goes under XDG_STATE_HOME: this cluster's, never the user's.
      env: { ...process.env, LIFEBOAT_PASSWORD: ROOT_PW, ETCDCTL_PASSWORD: '', XDG_STATE_HOME: path.join(cluster.dir, 'state') },
      timeoutMs: 60_000,
    });
    assert.equal(r.code, 0, r.out);
    for (const k of ['/secure/k', '/secure/migrated'])
      assert.equal((await dest.ctl(d1.client, '--user', `root:${ROOT_PW}`, 'get', k, '--print-value-only')).code, 0);
    assert.equal((await dest.ctl(d1.client, '--user', `root:${ROOT_PW}`, 'get', '/secure/migrated', '--print-value-only')).stdout, 'yes\n');
    assert.ok(!r.out.includes(ROOT_PW));
    // Users and roles came along (root, identical on both, was kept); the user's password did not.
    assert.match(r.out, /copied 1 roles and 1 users with their permissions and role grants \(0 roles and 1 users already there, identical\)/);
    for (const what of [
      ['role', 'get', 'app'],
      ['user', 'get', 'appuser'],
    ])
      assert.equal((await dest.ctl(d1.client, '--user', `root:${ROOT_PW}`, ...what)).stdout, ok(await src(...what)), what.join(' '));
    const appuser = await dest.ctl(d1.client, '--user', 'appuser:App-pw-src', 'get', '/secure/app/x');
    assert.match(appuser.stderr, /authentication failed, invalid user ID or password/);
    // The audit log names what the migrate step copied.
    const exported = ok(await lifeboat('audit', 'export', '--audit-db', path.join(cluster.dir, 'migrate-audit.db')));
    assert.match(exported, /"users-copied": \[\s*"appuser"\s*\]/);
    assert.match(exported, /"roles-copied": \[\s*"app"\s*\]/);
  });
});
