// The shipped playbooks on one secure Lifeboat cluster (mutual TLS on https://
// client and peer URLs, etcd's auth enabled), run in sequence as an operator
// would, each with the client certificate, --user root (its password from
// LIFEBOAT_PASSWORD) and, for the members it starts, the TLS variables:
// scale-out, rolling-restart, scale-in, replace-failed-member, move-member and
// recover-from-nospace (recover-from-quorum-loss: tlsRecovery.test.ts). The
// members they start serve TLS and auth; no file the runs or the members wrote
// (audit log, its export, member logs, raft logs, kv.db) holds the password or a
// private key.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { clientFor } from '../../src/client/etcdClient.js';
import { makeCerts, type TestCerts } from '../support/certs.js';
import { BIN, etcdctl, parseEtcdJson, pidByLock, run, type MemberProc } from '../support/lifeboatCluster.js';
import { playbookRun } from '../support/playbookRun.js';
import { stopProcessesUnder } from '../support/processes.js';
import { TlsCluster } from './tlsCluster.js';

const PASSWORD = 'Pb-root-7c2e-secret';

interface Listed {
  ID: string;
  name: string;
  peerURLs: string[];
  clientURLs?: string[];
  isLearner?: boolean;
}

describe('the shipped playbooks on a secure cluster (mutual TLS and auth)', () => {
  let certs: TestCerts;
  let tc: TlsCluster;
  let auditDb: string;
  let tlsVars: Record<string, string>;
  const asRoot = ['--user', `root:${PASSWORD}`];

  before(async () => {
    certs = await makeCerts(mkdtempSync(path.join(os.tmpdir(), 'lifeboat-tls-playbooks-')));
    tc = await TlsCluster.create('tls-playbooks', certs, 6);
    auditDb = path.join(tc.c.dir, 'audit.db');
    tlsVars = tc.playbookTlsVars();
    const founders = await tc.startFounders('m1', 'm2', 'm3');
    await tc.ctlAll(founders[0].client, [
      ['user', 'add', `root:${PASSWORD}`],
      ['user', 'grant-role', 'root', 'root'],
      ['auth', 'enable'],
    ]);
    assert.equal((await tc.ctl(founders[0].client, ...asRoot, 'put', 'kept', 'v')).code, 0);
  });
  after(async () => {
    if (tc) await stopProcessesUnder(tc.c.dir);
    await tc?.c.stopAll();
    if (certs) rmSync(certs.dir, { recursive: true, force: true });
  });

  const outputs: string[] = [];
  const playbook = async (name: string, sets: Record<string, string>) => {
    const r = await playbookRun(name, sets, auditDb, {
      extra: ['--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey, '--user', 'root'],
      env: { ...process.env, LIFEBOAT_PASSWORD: PASSWORD, ETCDCTL_PASSWORD: '' },
      timeoutMs: 90_000,
    });
    assert.equal(r.code, 0, `${name}: ${r.out}`);
    outputs.push(r.out);
    return r;
  };
  const members = async (endpoints: string[]): Promise<Listed[]> => {
    const r = await tc.ctl(endpoints, ...asRoot, 'member', 'list', '-w', 'json');
    assert.equal(r.code, 0, r.stderr);
    return parseEtcdJson<{ members: Listed[] }>(r.stdout).members;
  };
  const voters = async (endpoints: string[]) => (await members(endpoints)).filter((m) => !m.isLearner).map((m) => m.name);
  const spec = (m: MemberProc) => `${m.name}=${m.peerUrl},${m.clientUrl},${m.dataDir}`;
  /** A member the playbook started serves TLS with client certificates and auth: refused without a certificate or password. */
  const servesSecurely = async (m: MemberProc) => {
    assert.equal((await tc.ctl(m.client, ...asRoot, 'get', 'kept', '--print-value-only', '--consistency=s')).stdout, 'v\n');
    const bare = await etcdctl(m.client, '--cacert', certs.ca, ...asRoot, '--dial-timeout', '2s', '--command-timeout', '3s', 'get', 'kept');
    assert.notEqual(bare.code, 0, `${m.name} served a client without a certificate`);
    assert.notEqual((await tc.ctl(m.client, '--user', 'root:wrong', 'get', 'kept')).code, 0, `${m.name} took a wrong password`);
  };

  test('scale-out, rolling-restart, scale-in, replace-failed-member, move-member and recover-from-nospace, in sequence', async () => {
    const [m1, m2, m3] = ['m1', 'm2', 'm3'].map((n) => tc.c.member(n)) as [MemberProc, MemberProc, MemberProc];
    let endpoints = [m1, m2, m3].map((m) => m.clientUrl);

    // scale-out: m4 added as a learner, started with the TLS variables, caught up and promoted.
    const m4 = tc.define('m4');
    await playbook('scale-out', { endpoints: endpoints.join(','), members: spec(m4), stabilization: '1s', ...tlsVars });
    assert.deepEqual((await voters(endpoints)).sort(), ['m1', 'm2', 'm3', 'm4']);
    await servesSecurely(m4);

    // rolling-restart of m4: stopped (found by its data dir's lock) and started again with the same TLS flags.
    const before4 = pidByLock(m4.dataDir);
    await playbook('rolling-restart', { endpoints: [...endpoints, m4.clientUrl].join(','), members: spec(m4), ...tlsVars });
    assert.notEqual(pidByLock(m4.dataDir), before4, 'm4 was not restarted');
    await servesSecurely(m4);

    // scale-in: m4 removed again, by name.
    await playbook('scale-in', { endpoints: endpoints.join(','), remove: 'm4' });
    assert.deepEqual((await voters(endpoints)).sort(), ['m1', 'm2', 'm3']);

    // replace-failed-member: m3 dies for good; m5 replaces it.
    await tc.c.kill(m3);
    endpoints = [m1, m2].map((m) => m.clientUrl);
    const m5 = tc.define('m5');
    await playbook('replace-failed-member', {
      endpoints: endpoints.join(','),
      failed: 'm3',
      name: m5.name,
      'peer-url': m5.peerUrl,
      'client-url': m5.clientUrl,
      'data-dir': m5.dataDir,
      stabilization: '1s',
      ...tlsVars,
    });
    assert.deepEqual((await voters(endpoints)).sort(), ['m1', 'm2', 'm5']);
    await servesSecurely(m5);

    // move-member: m2 to a new data dir and new URLs, packed with checksums and unpacked there.
    const moved = tc.define('m2');
    moved.dataDir = path.join(tc.c.dir, 'm2-moved');
    await playbook('move-member', {
      endpoints: [m1, m5].map((m) => m.clientUrl).join(','),
      name: 'm2',
      'data-dir': m2.dataDir,
      'client-url': m2.clientUrl,
      archive: path.join(tc.c.dir, 'm2.tar.gz'),
      'new-data-dir': moved.dataDir,
      'new-peer-url': moved.peerUrl,
      'new-client-url': moved.clientUrl,
      ...tlsVars,
    });
    endpoints = [m1, m5, moved].map((m) => m.clientUrl);
    const afterMove = (await members(endpoints)).find((m) => m.name === 'm2');
    assert.deepEqual(afterMove?.peerURLs, [moved.peerUrl]);
    await servesSecurely(moved);

    // recover-from-nospace: a NOSPACE alarm (raised through the Maintenance API, as root) refuses writes until the playbook has run.
    const c = clientFor(endpoints, {
      dialTimeoutMs: 2000,
      commandTimeoutMs: 5000,
      tls: { caFile: certs.ca, certFile: certs.clientCert, keyFile: certs.clientKey },
      credentials: { user: 'root', password: PASSWORD },
    });
    try {
      // etcdctl's JSON IDs are decimal (read as text by parseEtcdJson).
      const id = (await members(endpoints)).find((m) => m.name === 'm1')?.ID;
      assert.ok(id !== undefined);
      await c.alarm('ACTIVATE', BigInt(String(id)), 'NOSPACE');
    } finally {
      c.close();
    }
    assert.notEqual((await tc.ctl(endpoints, ...asRoot, 'put', 'after-nospace', 'v')).code, 0, 'writes are refused under the NOSPACE alarm');
    await playbook('recover-from-nospace', { endpoints: endpoints.join(',') });
    assert.equal((await tc.ctl(endpoints, ...asRoot, 'put', 'after-nospace', 'v')).code, 0);

    // Neither the password nor a private key anywhere it could leak to: the audit log, its WAL and export, the
    // members' logs (ours and those the playbooks started), raft logs and kv.db files — every file but the certificates.
    const exported = await run(process.execPath, [BIN, 'audit', 'export', '--audit-db', auditDb]);
    assert.equal(exported.code, 0, exported.stderr);
    assert.match(exported.stdout, /"user": "root"/);
    const secrets = tc.secrets(PASSWORD);
    const haystacks: Array<[string, Buffer]> = [
      ['audit export', Buffer.from(exported.stdout)],
      ['playbook output', Buffer.from(outputs.join('\n'))],
    ];
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) {
          if (!e.name.endsWith('-tls')) walk(p);
        } else if (e.isFile() && !e.name.endsWith('.secret-key')) haystacks.push([p, readFileSync(p)]);
      }
    };
    walk(tc.c.dir);
    assert.ok(
      ['audit.db', 'kv.db', '.wal', 'm1.log'].every((f) => haystacks.some(([w]) => w.endsWith(f))),
      haystacks.map(([w]) => w).join(', '),
    );
    for (const [where, bytes] of haystacks) for (const secret of secrets) assert.ok(!bytes.includes(secret), `a secret is in ${where}`);
  });
});
