// A secure cluster's quorum-loss recovery: a Lifeboat cluster with mutual TLS on
// https:// client and peer URLs and etcd's auth enabled loses two members; the
// playbook, given the TLS variables for the members it starts, the client
// certificate and root's credentials for its own calls, rebuilds 3 voters. The
// recovered members refuse a client without a certificate, a wrong password and
// a user without permission; and neither the password nor a private key is in any
// member log, raft log, kv.db, the audit log or its export.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { makeCerts, type TestCerts } from '../support/certs.js';
import { BIN, etcdctl, parseEtcdJson, run } from '../support/lifeboatCluster.js';
import { playbookRun } from '../support/playbookRun.js';
import { stopProcessesUnder } from '../support/processes.js';
import { TlsCluster } from './tlsCluster.js';

const PASSWORD = 'Zq7-root-secret-91';

describe('recovery of a secure cluster (mutual TLS and auth)', () => {
  let certs: TestCerts;
  let tc: TlsCluster;
  before(async () => {
    certs = await makeCerts(mkdtempSync(path.join(os.tmpdir(), 'lifeboat-tls-recovery-')));
    tc = await TlsCluster.create('tls-recovery', certs, 6);
  });
  after(async () => {
    if (tc) await stopProcessesUnder(tc.c.dir);
    await tc?.c.stopAll();
  });

  test('recover-from-quorum-loss with TLS variables rebuilds 3 voters on https:// URLs; a client without a certificate is refused', async () => {
    const old = await tc.startFounders('m1', 'm2', 'm3');
    await tc.ctlAll(old[0].client, [
      ['user', 'add', `root:${PASSWORD}`],
      ['user', 'grant-role', 'root', 'root'],
      ['user', 'add', 'reader:readerpw'],
      ['auth', 'enable'],
    ]);
    assert.equal((await tc.ctl(old[0].client, '--user', `root:${PASSWORD}`, 'put', 'over-tls', 'kept')).code, 0);
    await Promise.all([tc.c.kill(old[1]), tc.c.kill(old[2])]);
    await tc.c.kill(old[0], 'SIGTERM');

    const fresh = [tc.define('n2'), tc.define('n3')];
    const recovered = tc.define('r1');
    recovered.dataDir = path.join(tc.c.dir, 'r1-data');
    const sets: Record<string, string> = {
      source: old[0].dataDir,
      'data-dir': recovered.dataDir,
      name: 'm1',
      'peer-url': old[0].peerUrl,
      'client-url': recovered.clientUrl,
      members: fresh.map((m) => `${m.name}=${m.peerUrl},${m.clientUrl},${m.dataDir}`).join(';'),
      stabilization: '1s',
      ...tc.playbookTlsVars(),
    };
    // The password from the environment, as the README advises (a --user name:password stays visible in ps).
    const r = await playbookRun('recover-from-quorum-loss', sets, path.join(tc.c.dir, 'audit.db'), {
      extra: ['--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey, '--user', 'root'],
      env: { ...process.env, LIFEBOAT_PASSWORD: PASSWORD },
      timeoutMs: 180_000,
    });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);

    const endpoints = [recovered.client, ...fresh.map((m) => m.client)];
    type MemberList = { members: Array<{ isLearner?: boolean; peerURLs: string[] }> };
    const asRoot = ['--user', `root:${PASSWORD}`];
    const list = parseEtcdJson<MemberList>((await tc.ctl(endpoints, ...asRoot, 'member', 'list', '-w', 'json')).stdout);
    assert.equal(list.members.filter((m) => !m.isLearner).length, 3);
    for (const m of list.members)
      assert.ok(
        m.peerURLs.every((u) => u.startsWith('https://')),
        JSON.stringify(m),
      );
    for (const ep of endpoints) assert.equal((await tc.ctl(ep, ...asRoot, 'get', 'over-tls', '--print-value-only', '--consistency=s')).stdout, 'kept\n');
    // A wrong password, and a user without permission: refused where root is served.
    assert.notEqual((await tc.ctl(endpoints[0], '--user', 'root:wrong', 'get', 'over-tls')).code, 0);
    assert.notEqual((await tc.ctl(endpoints[0], '--user', 'reader:readerpw', 'get', 'over-tls')).code, 0);
    // No client certificate: refused, on a member the playbook started.
    const bare = await etcdctl(fresh[0].client, '--cacert', certs.ca, ...asRoot, '--dial-timeout', '2s', '--command-timeout', '3s', 'get', 'over-tls');
    assert.notEqual(bare.code, 0, 'a client without a certificate was served');

    // No secret anywhere it could leak to: member logs (ours and the playbook's), raft logs, kv.db, the audit log and its export.
    const exported = await run(process.execPath, [BIN, 'audit', 'export', '--audit-db', path.join(tc.c.dir, 'audit.db')]);
    assert.equal(exported.code, 0, exported.stderr);
    const secrets = tc.secrets(PASSWORD);
    const haystacks: Array<[string, Buffer]> = [
      ['audit export', Buffer.from(exported.stdout)],
      ['playbook output', Buffer.from(r.stdout + r.stderr)],
    ];
    for (const m of [...old, ...fresh, recovered]) haystacks.push([`${m.name}'s log`, Buffer.from(m.log.join('\n'))]);
    // Every file under the cluster's directory but the certificates themselves (member data dirs, run logs, the audit db).
    const walk = (dir: string) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) {
          if (!e.name.endsWith('-tls')) walk(p);
        } else if (e.isFile()) haystacks.push([p, readFileSync(p)]);
      }
    };
    walk(tc.c.dir);
    assert.ok(haystacks.some(([w]) => w.endsWith('kv.db')) && haystacks.some(([w]) => w.endsWith('.wal')) && haystacks.some(([w]) => w.endsWith('audit.db')));
    for (const [where, bytes] of haystacks) for (const secret of secrets) assert.ok(!bytes.includes(secret), `a secret is in ${where}`);
  });
});
