// The quorum-loss recovery playbook over mutual TLS: a Lifeboat cluster with
// https:// client and peer URLs and certificates required on both loses two
// members; the playbook, given the TLS variables for the members it starts and the
// client certificate for its own calls, rebuilds 3 voters over TLS. A client
// without a certificate is refused by the recovered members.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { makeCerts, type TestCerts } from '../support/certs.js';
import { BIN, etcdctl, parseEtcdJson, run, type MemberProc } from '../support/lifeboatCluster.js';
import { stopProcessesUnder } from '../support/processes.js';
import { TlsCluster } from './tlsCluster.js';

describe('recovery over mutual TLS', () => {
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
    const old = ['m1', 'm2', 'm3'].map((n) => tc.define(n)) as [MemberProc, MemberProc, MemberProc];
    tc.c.members.push(...old);
    const initial = old.map((m) => `${m.name}=${m.peerUrl}`).join(',');
    for (const m of old) tc.c.spawn(m, [...tc.tlsArgs(m), '--initial-cluster', initial, '--initial-cluster-state', 'new']);
    await tc.waitStarted(3);
    assert.equal((await tc.ctl(old[0].client, 'put', 'over-tls', 'kept')).code, 0);
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
      'cert-file': certs.serverCert,
      'key-file': certs.serverKey,
      'trusted-ca-file': certs.ca,
      'client-cert-auth': 'true',
      'peer-cert-file': tc.peer.cert,
      'peer-key-file': tc.peer.key,
      'peer-trusted-ca-file': certs.ca,
      'peer-client-cert-auth': 'true',
    };
    const args = [
      BIN,
      'playbook',
      'run',
      'recover-from-quorum-loss',
      '--yes',
      '--reason',
      'test: recovery over TLS',
      '--audit-db',
      path.join(tc.c.dir, 'audit.db'),
    ];
    for (const [k, v] of Object.entries(sets)) args.push('--set', `${k}=${v}`);
    args.push('--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey);
    const r = await run(process.execPath, args, { timeoutMs: 180_000 });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);

    const endpoints = [recovered.client, ...fresh.map((m) => m.client)];
    type MemberList = { members: Array<{ isLearner?: boolean; peerURLs: string[] }> };
    const list = parseEtcdJson<MemberList>((await tc.ctl(endpoints, 'member', 'list', '-w', 'json')).stdout);
    assert.equal(list.members.filter((m) => !m.isLearner).length, 3);
    for (const m of list.members)
      assert.ok(
        m.peerURLs.every((u) => u.startsWith('https://')),
        JSON.stringify(m),
      );
    for (const ep of endpoints) assert.equal((await tc.ctl(ep, 'get', 'over-tls', '--print-value-only', '--consistency=s')).stdout, 'kept\n');
    // No client certificate: refused, on a member the playbook started.
    const bare = await etcdctl(fresh[0].client, '--cacert', certs.ca, '--dial-timeout', '2s', '--command-timeout', '3s', 'get', 'over-tls');
    assert.notEqual(bare.code, 0, 'a client without a certificate was served');
  });
});
