// `lifeboat server --discovery`: a cluster bootstrapped through a real private
// discovery service (Debian's etcd-discovery in front of etcd 3.4 --enable-v2):
// three members given only the token form a cluster, a fourth is refused as etcd
// refuses it, a member registered without a data dir is refused, and a restart
// with the data dir needs no discovery service at all.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { makeCerts, type TestCerts } from '../support/certs.js';
import { DiscoveryService } from '../support/discoveryService.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { BIN, LifeboatCluster, etcdctl, lifeboat, run, type MemberProc } from '../support/lifeboatCluster.js';

/** The lines a member wrote that are not JSON log lines (its one-line error). */
const plainLines = (stderr: string) =>
  stderr
    .trim()
    .split('\n')
    .filter((l) => l && !l.startsWith('{'));

describe('lifeboat server --discovery', () => {
  let d: DiscoveryService;
  let c: LifeboatCluster;
  let token: string;
  let members: MemberProc[];
  before(async () => {
    d = await DiscoveryService.start('discovery');
    c = await LifeboatCluster.create('discovery', 5);
    token = await d.newToken(3);
    members = ['m1', 'm2', 'm3'].map((n) => c.define(n));
  });
  after(async () => {
    await c?.stopAll();
    await d?.stop();
  });

  test('three members started at once with only the token form one cluster', async () => {
    for (const m of members) c.spawn(m, ['--discovery', token]);
    await c.waitStarted(3);
    const list = await etcdctl(c.endpoints(), 'member', 'list');
    for (const m of members) assert.ok(list.stdout.includes(`, ${m.name}, ${m.peerUrl}, ${m.clientUrl}`), list.stdout);
    // Each member said how many had registered while it waited, and wrote the token nowhere.
    const waited = members.flatMap((m) => m.log.filter((l) => / of 3 registered/.test(l)));
    assert.ok(
      waited.some((l) => l.includes('"3 of 3 registered"')),
      waited.join('\n'),
    );
    const secret = new URL(token).pathname.slice(1);
    for (const m of members) assert.ok(!m.log.some((l) => l.includes(secret)), `${m.name} logged the token`);
  });

  test('the discovery URL is the cluster token: the IDs are the ones etcd derives from it', async () => {
    // etcd's member ID: sha1 over the sorted peer URLs and the token (here the discovery URL), first 8 bytes.
    const { createHash } = await import('node:crypto');
    const id = (m: MemberProc) =>
      createHash('sha1')
        .update(m.peerUrl + token)
        .digest()
        .readBigUInt64BE(0)
        .toString(16);
    const list = await etcdctl(c.endpoints(), 'member', 'list');
    for (const m of members) assert.match(list.stdout, new RegExp(`^${id(m)}, started, ${m.name},`, 'm'));
  });

  test('a fourth member is refused as etcd refuses it: exit 1, cluster is full, nothing written', async () => {
    const m4 = c.define('m4');
    const r = await lifeboat('server', ...c.memberFlags(m4), '--discovery', token);
    assert.equal(r.code, 1, r.stderr);
    const lines = plainLines(r.stderr);
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], /failed to join discovery cluster \(discovery: cluster is full\); do not reuse discovery token/);
    assert.ok(!fs.existsSync(`${m4.dataDir}/member`), 'the refused member wrote a data dir');
  });

  test('--discovery-fallback proxy is refused (no proxy mode); --initial-cluster with --discovery too', async () => {
    const m5 = c.define('m5');
    const r = await lifeboat('server', ...c.memberFlags(m5), '--discovery', token, '--discovery-fallback', 'proxy');
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--discovery-fallback proxy: Lifeboat has no proxy mode; use --discovery-fallback exit/);
    const both = await lifeboat('server', ...c.memberFlags(m5), '--discovery', token, '--initial-cluster', `${m5.name}=${m5.peerUrl}`);
    assert.equal(both.code, 2, both.stderr);
    assert.match(both.stderr, /Choose one of "initial-cluster", "discovery" or "discovery-srv"/);
  });

  test('a member that registered but lost its data dir is refused and told to use a new token', async () => {
    const m3 = members[2];
    await c.kill(m3);
    fs.rmSync(m3.dataDir, { recursive: true, force: true });
    const r = await lifeboat('server', ...c.memberFlags(m3), '--discovery', token);
    assert.equal(r.code, 1, r.stderr);
    assert.match(plainLines(r.stderr)[0], /discovery: found duplicate id\).*use a new discovery token/);
  });

  test('a member alone on its token gives up after --discovery-timeout, withdrawing its registration so it may try again', async () => {
    const alone = await d.newToken(2);
    const lone = c.define('lone');
    for (let attempt = 0; attempt < 2; attempt++) {
      const r = await lifeboat('server', ...c.memberFlags(lone), '--discovery', alone, '--discovery-timeout', '1s');
      assert.equal(r.code, 1, r.stderr);
      // The second attempt is not refused as a duplicate: the first withdrew its registration.
      assert.match(
        plainLines(r.stderr)[0],
        /discovery: only 1 of 2 members registered at http:\/\/127\.0\.0\.1:\d+\/\*\*\* within 1s; start the other members/,
      );
      assert.ok(r.stderr.includes('"1 of 2 registered"'), r.stderr);
      assert.ok(!fs.existsSync(`${lone.dataDir}/member`), 'the member wrote a data dir');
    }
  });

  test('a restart with the data dir works with the discovery service stopped, and says once that discovery is ignored', async () => {
    await d.stopService();
    const m1 = members[0];
    await c.kill(m1);
    c.spawn(m1, ['--discovery', token]);
    await c.waitForLeader([m1, members[1]]);
    const put = await etcdctl(m1.client, 'put', 'after-restart', 'yes');
    assert.equal(put.code, 0, put.stderr);
    assert.equal(m1.log.filter((l) => l.includes('discovery is ignored')).length, 1, m1.log.join('\n'));
  });
});

describe('lifeboat server --discovery through --discovery-proxy', () => {
  let d: DiscoveryService;
  let c: LifeboatCluster;
  before(async () => {
    d = await DiscoveryService.start('discovery-proxy');
    await d.startProxy('discovery-proxy');
    c = await LifeboatCluster.create('discovery-proxy', 1);
  });
  after(async () => {
    await c?.stopAll();
    await d?.stop();
  });

  test('the member registers through the proxy and starts', async () => {
    const token = await d.newToken(1);
    const m = c.define('p1');
    c.spawn(m, ['--discovery', token, '--discovery-proxy', d.proxyUrl]);
    await c.waitStarted(1);
    const tokenPath = new URL(token).pathname;
    assert.match(d.proxied(), new RegExp(`${tokenPath}/_config/size`), 'tinyproxy forwarded no discovery request');
  });
});

describe("lifeboat server --discovery against an https:// discovery endpoint (a TLS etcd's own /v2/keys)", () => {
  let etcd: EtcdCluster;
  let certs: TestCerts;
  let c: LifeboatCluster;
  let url: string;
  before(async () => {
    certs = await makeCerts(fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-discovery-tls-')));
    // Clients need no certificate: etcd 3.4's discovery client presents none.
    etcd = await EtcdCluster.start({ size: 1, portSeed: 'discovery-tls', tls: certs, clientCertAuth: false, extraArgs: ['--enable-v2'] });
    c = await LifeboatCluster.create('discovery-tls', 1);
    url = `${etcd.members[0].clientUrl}/v2/keys/_etcd/registry/tls-${process.pid}`;
    // The size, as an operator sets it on a private discovery etcd.
    const ca = fs.readFileSync(certs.ca);
    await new Promise<void>((resolve, reject) => {
      const req = https.request(`${url}/_config/size`, { method: 'PUT', ca, headers: { 'content-type': 'application/x-www-form-urlencoded' } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 201 || res.statusCode === 200 ? resolve() : reject(new Error(`PUT size: HTTP ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end('value=1');
    });
  });
  after(async () => {
    await c?.stopAll();
    await etcd?.stop();
    if (certs) fs.rmSync(certs.dir, { recursive: true, force: true });
  });

  test('a CA the system roots do not hold is refused; with it in SSL_CERT_FILE the member starts', async () => {
    const m = c.define('t1');
    const untrusted = await run(process.execPath, [BIN, 'server', ...c.memberFlags(m), '--discovery', url], {
      env: { SSL_CERT_FILE: certs.otherCa },
      timeoutMs: 30_000,
    });
    assert.equal(untrusted.code, 1, untrusted.stderr);
    assert.match(
      plainLines(untrusted.stderr)[0],
      /cannot reach the discovery service https:\/\/127\.0\.0\.1:\d+\/v2\/keys\/_etcd\/registry\/\*\*\*: .*certificate/,
    );
    assert.ok(!fs.existsSync(`${m.dataDir}/member`), 'the refused member wrote a data dir');
    c.spawn(m, ['--discovery', url], { env: { SSL_CERT_FILE: certs.ca } });
    await c.waitStarted(1);
  });
});
