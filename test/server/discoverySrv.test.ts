// `lifeboat server --discovery-srv`: the initial cluster from DNS SRV records
// served by a real DNS server (Debian's dnsmasq on port 53 of a loopback address),
// reached by each member's resolver inside `unshare -m` with a bind-mounted
// resolv.conf (support/srvDns.ts). The cluster forms from the records alone; a
// member whose peer URL is not among them is refused. From _etcd-server-ssl
// records, with no --peer-trusted-ca-file, every peer's certificate must carry
// the SRV domain as a SAN (etcd 3.4's peer TLS server name).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { issueCert, makeCerts, type IssuedCert, type TestCerts } from '../support/certs.js';
import { BIN, LifeboatCluster, etcdctl, run, waitFor, type MemberProc } from '../support/lifeboatCluster.js';
import { SrvDns } from '../support/srvDns.js';

/** A loopback address of this test file's own for each DNS server (any 127.x.y.z answers on Linux). */
const dnsAddress = (n: number) => `127.0.${54 + n}.${20 + (process.pid % 200)}`;

describe('lifeboat server --discovery-srv', () => {
  let c: LifeboatCluster;
  let dns: SrvDns | undefined;
  let members: MemberProc[];
  let wrap: string[];
  before(async () => {
    c = await LifeboatCluster.create('discovery-srv', 4);
    members = ['m1', 'm2', 'm3'].map((n) => c.define(n));
    const records = members.flatMap((m) => [
      `--srv-host=_etcd-server._tcp.lb.test,${m.name}.lb.test,${new URL(m.peerUrl).port}`,
      `--srv-host=_etcd-client._tcp.lb.test,${m.name}.lb.test,${new URL(m.clientUrl).port}`,
      `--host-record=${m.name}.lb.test,127.0.0.1`,
    ]);
    dns = await SrvDns.start(c.dir, dnsAddress(0), records, 'm1.lb.test');
    wrap = dns.wrap;
  });
  after(async () => {
    await c?.stopAll();
    await dns?.stop();
  });
  const withDns = (cmd: string[]): [string, string[]] => dns!.withDns(cmd);

  test('three members given only the SRV domain form one cluster, with the records as peer URLs', async () => {
    for (const m of members) c.spawn(m, ['--discovery-srv', 'lb.test'], { wrap });
    await c.waitStarted(3);
    const list = await etcdctl(c.endpoints(), 'member', 'list');
    for (const m of members) assert.ok(list.stdout.includes(`, ${m.name}, http://${m.name}.lb.test:${new URL(m.peerUrl).port}, `), list.stdout);
  });

  test("the toolkit's --discovery-srv finds the client endpoints from _etcd-client._tcp records; a domain without them is refused", async () => {
    const r = await run(...withDns([process.execPath, BIN, 'member', 'list', '--discovery-srv', 'lb.test']), { timeoutMs: 30_000 });
    assert.equal(r.code, 0, r.stderr);
    for (const m of members) assert.ok(r.stdout.includes(`, ${m.name}, `), r.stdout);
    const none = await run(...withDns([process.execPath, BIN, 'member', 'list', '--discovery-srv', 'nothing.test']), { timeoutMs: 30_000 });
    assert.equal(none.code, 2, none.stderr);
    assert.match(none.stderr, /--discovery-srv nothing\.test: no SRV records .*give --endpoints/);
  });

  test('a member whose peer URL is not among the records is refused in one line, writing nothing', async () => {
    const m4 = c.define('m4');
    const r = await run(...withDns([process.execPath, BIN, 'server', ...c.memberFlags(m4), '--discovery-srv', 'lb.test']), { timeoutMs: 30_000 });
    assert.equal(r.code, 1, r.stderr);
    const lines = r.stderr
      .trim()
      .split('\n')
      .filter((l) => l && !l.startsWith('{'));
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], /couldn't find local name "m4" in the initial cluster configuration from DNS SRV records for lb\.test/);
    assert.ok(!fs.existsSync(`${m4.dataDir}/member`), 'the refused member wrote a data dir');
  });
});

describe('lifeboat server --discovery-srv with _etcd-server-ssl records', () => {
  let c: LifeboatCluster;
  let dns: SrvDns | undefined;
  let members: MemberProc[];
  let certs: TestCerts;
  before(async () => {
    c = await LifeboatCluster.create('discovery-srv-tls', 3);
    members = ['m1', 'm2', 'm3'].map((n) => {
      const m = c.define(n);
      m.peerUrl = m.peerUrl.replace('http://', 'https://');
      return m;
    });
    certs = await makeCerts(c.dir);
    const records = members.flatMap((m) => [
      `--srv-host=_etcd-server-ssl._tcp.tls.test,${m.name}.tls.test,${new URL(m.peerUrl).port}`,
      `--host-record=${m.name}.tls.test,127.0.0.1`,
    ]);
    dns = await SrvDns.start(c.dir, dnsAddress(1), records, 'm1.tls.test');
  });
  after(async () => {
    await c?.stopAll();
    await dns?.stop();
  });
  // No --peer-trusted-ca-file (the CA is trusted as a system root, SSL_CERT_FILE): etcd's rule applies only then.
  const start = (peer: IssuedCert, extra: string[] = []) => {
    for (const m of members) {
      c.spawn(m, ['--discovery-srv', 'tls.test', '--peer-cert-file', peer.cert, '--peer-key-file', peer.key, ...extra], {
        wrap: dns!.wrap,
        env: { SSL_CERT_FILE: certs.ca },
      });
    }
  };

  test("peer certificates that name each member's host but not the SRV domain are refused: no cluster forms", async () => {
    const hosts = members.map((m) => `DNS:${m.name}.tls.test`).join(',');
    start(await issueCert(certs, 'host-peer', { cn: 'lifeboat-peer', sans: `${hosts},IP:127.0.0.1,DNS:localhost` }));
    const refused = (m: MemberProc) => m.log.some((l) => l.includes('lost connection to peer') && l.includes("Host: tls.test. is not in the cert's altnames"));
    await waitFor('a member to refuse a peer certificate that lacks tls.test', () => members.some(refused), 20_000, 200);
    // The good certificates below form the cluster in about 2 s: none may form here in 4.
    for (const until = Date.now() + 4000; Date.now() < until; await new Promise((r) => setTimeout(r, 250))) {
      assert.equal(await c.leader(), undefined, 'a leader was elected over peer certificates without the SRV domain');
    }
    for (const m of members) {
      await c.kill(m);
      fs.rmSync(m.dataDir, { recursive: true, force: true });
    }
  });

  test('peer certificates carrying the SRV domain as a SAN form the cluster (with --peer-cert-allowed-cn), the records as https:// peer URLs', async () => {
    // --peer-cert-allowed-cn is still checked (at both ends), the client certificates against the system roots too.
    start(await issueCert(certs, 'srv-peer', { cn: 'lifeboat-peer', sans: 'DNS:tls.test' }), [
      '--peer-client-cert-auth',
      '--peer-cert-allowed-cn',
      'lifeboat-peer',
    ]);
    await c.waitStarted(3);
    for (const m of members)
      assert.ok(
        m.log.some((l) => l.includes('"peerServerName":"tls.test"')),
        m.log.join('\n'),
      );
    const list = await etcdctl(c.endpoints(), 'member', 'list');
    for (const m of members) assert.ok(list.stdout.includes(`, ${m.name}, https://${m.name}.tls.test:${new URL(m.peerUrl).port}, `), list.stdout);
    const put = await etcdctl(c.endpoints(), 'put', 'k', 'v');
    assert.equal(put.code, 0, put.stderr);
  });
});
