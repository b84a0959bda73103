// A 3-member Lifeboat cluster with mutual TLS on its client and peer URLs
// (--client-cert-auth, --peer-client-cert-auth, --peer-cert-allowed-cn), one
// member configured through LIFEBOAT_* variables, one with etcd's `=true`: real etcdctl 3.4 and the
// lifeboat commands over TLS; metrics over https; a learner that joins over
// TLS and gets a snapshot over TLS; clients and peers without a valid
// certificate refused and logged once; the key pairs rotated under load.
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { after, before, test } from 'node:test';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { PeerCredentials, PeerTransport } from '../../src/transport/peerTransport.js';
import { issueCert, makeCerts, type IssuedCert, type TestCerts } from '../support/certs.js';
import { freePorts } from '../support/ports.js';
import { etcdctl, parseEtcdJson, waitFor, type MemberProc } from '../support/lifeboatCluster.js';
import { lifeboat, requireTool } from '../support/tools.js';
import { PEER_CN, TlsCluster } from './tlsCluster.js';

let certs: TestCerts;
let tc: TlsCluster;
let m1: MemberProc;
let m2: MemberProc;
let m3: MemberProc;
let metricsUrl: string;
let expired: IssuedCert;
let foreign: IssuedCert;
let roguePeer: IssuedCert;

const SEED = 'tls-memberTls';

/** `--flag value` pairs (and `--flag` alone for a boolean) as LIFEBOAT_* variables. */
function asEnv(args: string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (let i = 0; i < args.length; i++) {
    const name = `LIFEBOAT_${args[i].slice(2).toUpperCase().replace(/-/g, '_')}`;
    if (i + 1 < args.length && !args[i + 1].startsWith('--')) env[name] = args[++i];
    else env[name] = 'true';
  }
  return env;
}

before(
  async () => {
    requireTool('openssl');
    certs = await makeCerts(mkdtempSync(path.join(os.tmpdir(), 'lifeboat-member-tls-')));
    expired = await issueCert(certs, 'expired', { cn: 'expired-client', days: -1, usage: 'client' });
    foreign = await issueCert(certs, 'foreign', { cn: 'foreign-client', fromOtherCa: true, usage: 'client' });
    roguePeer = await issueCert(certs, 'rogue-peer', { cn: 'rogue-peer' });
    tc = await TlsCluster.create(SEED, certs, 4);
    [m1, m2, m3] = ['m1', 'm2', 'm3'].map((n) => tc.define(n));
    const [metricsPort] = await freePorts(1, `${SEED}/metrics`);
    metricsUrl = `https://127.0.0.1:${metricsPort}`;
    const initial = ['--initial-cluster', tc.c.initialCluster([m1, m2, m3]), '--initial-cluster-state', 'new', '--snapshot-count', '20'];
    tc.c.spawn(m1, [...initial, ...tc.tlsArgs(m1), '--listen-metrics-urls', metricsUrl]);
    // m2 writes its booleans as etcd's command lines do: --client-cert-auth=true.
    tc.c.spawn(m2, [...initial, ...tc.tlsArgs(m2).map((a) => (a.endsWith('-cert-auth') ? `${a}=true` : a))]);
    // m3 takes its TLS settings from LIFEBOAT_* variables.
    tc.c.spawn(m3, initial, { env: asEnv(tc.tlsArgs(m3)) });
    await tc.waitStarted(3);
  },
  { timeout: 90_000 },
);

after(
  async () => {
    await tc?.c.stopAll();
    if (certs) rmSync(certs.dir, { recursive: true, force: true });
  },
  { timeout: 30_000 },
);

const ok = (r: { code: number | null; stdout: string; stderr: string }) => {
  assert.equal(r.code, 0, `exit ${r.code}; stderr: ${r.stderr}`);
  return r.stdout;
};

test('etcdctl 3.4 with --cacert --cert --key: put, get, member list and endpoint status on https endpoints', async () => {
  const all = [m1.client, m2.client, m3.client];
  assert.equal(ok(await tc.ctl(all, 'put', '/tls/greeting', 'hello')), 'OK\n');
  for (const m of [m1, m2, m3]) assert.equal(ok(await tc.ctl(m.client, 'get', '/tls/greeting', '--print-value-only')), 'hello\n');
  const list = ok(await tc.ctl(all, 'member', 'list'));
  for (const m of [m1, m2, m3]) assert.ok(list.includes(`, started, ${m.name}, ${m.peerUrl}, ${m.clientUrl}, false`), list);
  // endpoint status dials each endpoint string: ":authority: https://..." reaches the shim after TLS.
  const status = parseEtcdJson<Array<{ Endpoint: string; Status: { leader: string } }>>(ok(await tc.ctl(all, 'endpoint', 'status', '-w', 'json')));
  assert.deepEqual(
    status.map((s) => s.Endpoint),
    all,
  );
  assert.equal(new Set(status.map((s) => String(s.Status.leader))).size, 1);
  assert.match(ok(await tc.ctl(all, 'endpoint', 'hashkv')), /https:\/\/127\.0\.0\.1:\d+, \d+/);
});

test('lifeboat commands work with --cacert --cert --key against the TLS members', async () => {
  const all = [m1.client, m2.client, m3.client];
  assert.equal(ok(await tc.lifeboat(all, 'put', '/tls/lb', 'v1')), 'OK\n');
  assert.equal(ok(await tc.lifeboat(m3.client, 'get', '/tls/lb')), '/tls/lb\nv1\n');
  const list = ok(await tc.lifeboat(all, 'member', 'list'));
  assert.equal(list.trim().split('\n').length, 3, list);
  const status = JSON.parse(ok(await tc.lifeboat(all, 'endpoint', 'status', '-w', 'json'))) as Array<{ Endpoint: string }>;
  assert.deepEqual(status.map((s) => s.Endpoint).sort(), [...all].sort());
  assert.match(ok(await tc.lifeboat(m1.client, 'endpoint', 'health', '--cluster')), /is healthy/);
  const file = path.join(tc.c.dir, 'tls-snap.db');
  assert.match(ok(await tc.lifeboat(m1.client, 'snapshot', 'save', file)), /^Snapshot saved at /);
  assert.equal(readFileSync(file).length % 512, 32);
  // Without a client certificate the member hangs up after the handshake (no alert): one line that says what to pass.
  const refused = await lifeboat('snapshot', 'save', path.join(tc.c.dir, 'refused.db'), '--endpoints', m1.client, '--cacert', certs.ca);
  assert.equal(refused.code, 1, refused.stderr);
  assert.match(
    refused.stderr,
    /^Error: TLS handshake with \S+ failed \(.*client certificate\); the server wants a client certificate it trusts: check --cert and --key\n$/,
  );
  assert.equal(existsSync(path.join(tc.c.dir, 'refused.db')) || existsSync(path.join(tc.c.dir, 'refused.db.part')), false);
});

function httpsGet(url: string, cert?: IssuedCert): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(
      url,
      { ca: readFileSync(certs.ca), cert: cert && readFileSync(cert.cert), key: cert && readFileSync(cert.key), timeout: 5000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

test('--listen-metrics-urls https:// serves /metrics and /health with the client certificate, and refuses a client without one', async () => {
  const client = { cert: certs.clientCert, key: certs.clientKey };
  const metrics = await httpsGet(`${metricsUrl}/metrics`, client);
  assert.equal(metrics.status, 200);
  assert.match(metrics.body, /^etcd_server_has_leader 1$/m);
  assert.deepEqual(JSON.parse((await httpsGet(`${metricsUrl}/health`, client)).body), { health: 'true' });
  await assert.rejects(httpsGet(`${metricsUrl}/metrics`));
  await waitFor('the metrics refusal in the log', () =>
    tc.refusals(m1).some((r) => r.listener === 'metrics' && r.cn === '' && /no client certificate/.test(r.error)),
  );
});

test('a learner joins over TLS (member add, start, promote) and receives a snapshot from the leader over TLS', { timeout: 90_000 }, async () => {
  // --snapshot-count 20: with 40 more entries the leader's log is compacted past what the learner needs.
  for (let i = 0; i < 40; i++) ok(await tc.ctl(m1.client, 'put', `/tls/bulk/${i}`, `v${i}`));
  const leader = await waitFor('a leader', () => tc.leader(), 10_000, 200);
  await waitFor('the leader to compact its log', () => leader.log.some((l) => l.includes('"msg":"compacted raft log"')), 10_000);
  const m4 = tc.define('m4');
  // The strict reconfiguration check wants every voter connected for 5 s: retry until it is.
  const added = await waitFor(
    'member add to pass the strict reconfiguration check',
    async () => {
      const r = await tc.lifeboat(m1.client, 'member', 'add', 'm4', '--peer-urls', m4.peerUrl, '--learner');
      if (r.code === 0) return r.stdout;
      if (/unhealthy cluster/.test(r.stderr)) return false;
      throw new Error(`member add failed: ${r.stderr}`);
    },
    30_000,
    500,
  );
  const id = /Member ([0-9a-f]+) added as learner/.exec(added)?.[1];
  assert.ok(id, added);
  tc.c.spawn(m4, ['--initial-cluster', tc.c.initialCluster([m1, m2, m3, m4]), '--initial-cluster-state', 'existing', ...tc.tlsArgs(m4)]);
  await waitFor('the learner to apply the snapshot', () => tc.c.logHas(m4, 'applying snapshot from leader'), 30_000);
  assert.ok(tc.c.logHas(leader, 'sent snapshot to peer'), 'the leader sent a snapshot');
  assert.equal(ok(await tc.ctl(m4.client, 'get', '/tls/bulk/39', '--print-value-only', '--consistency=s')), 'v39\n');
  const promoted = await waitFor(
    'the learner to be promotable',
    async () => {
      const r = await tc.lifeboat(m1.client, 'member', 'promote', id);
      if (r.code === 0) return r.stdout;
      if (/in sync with leader|unhealthy cluster/.test(r.stderr)) return false;
      throw new Error(`member promote failed: ${r.stderr}`);
    },
    30_000,
    500,
  );
  assert.match(promoted, new RegExp(`Member ${id} promoted`));
  await waitFor('m4 to be listed as a started voter', async () =>
    ok(await tc.ctl(m1.client, 'member', 'list')).includes(`${id}, started, m4, ${m4.peerUrl}, ${m4.clientUrl}, false`),
  );
  assert.equal(ok(await tc.ctl(m4.client, 'get', '/tls/greeting', '--print-value-only')), 'hello\n');
});

/** Opens TLS connections to `url` with `cert` (or none) `times` times; each must end without serving anything. */
async function refusedConnections(url: string, cert: IssuedCert | undefined, times: number): Promise<void> {
  const u = new URL(url);
  for (let i = 0; i < times; i++) {
    await new Promise<void>((resolve, reject) => {
      const s = tls.connect({
        host: u.hostname,
        port: Number(u.port),
        ca: readFileSync(certs.ca),
        cert: cert && readFileSync(cert.cert),
        key: cert && readFileSync(cert.key),
        ALPNProtocols: ['h2'],
      });
      const timer = setTimeout(() => {
        s.destroy();
        reject(new Error(`connection ${i} to ${url} was not closed by the member`));
      }, 5000);
      s.on('error', () => undefined);
      s.on('close', () => {
        clearTimeout(timer);
        resolve();
      });
      // Served, it would wait for our HTTP/2 preface; refused, it is closed at once.
      s.resume();
    });
  }
}

test('clients without a certificate, with an expired one or one from another CA are refused, each logged once with its CN', { timeout: 60_000 }, async () => {
  const bad: Array<[string, IssuedCert | undefined, string, RegExp]> = [
    ['no certificate', undefined, '', /no client certificate/],
    ['expired', expired, 'expired-client', /expired/],
    ['foreign CA', foreign, 'foreign-client', /unknown authority/],
  ];
  for (const [what, cert, cn, error] of bad) {
    const flags = ['--cacert', certs.ca, '--dial-timeout=1s', '--command-timeout=2s'];
    if (cert) flags.push('--cert', cert.cert, '--key', cert.key);
    const r = await etcdctl(m2.client, ...flags, 'get', '/tls/greeting');
    assert.notEqual(r.code, 0, `${what}: etcdctl should fail: ${r.stdout}`);
    await refusedConnections(m2.client, cert, 20);
    const lines = tc.refusals(m2).filter((l) => l.listener === 'client' && l.cn === cn && error.test(l.error));
    assert.equal(lines.length, 1, `${what}: one log line for 20+ refusals: ${JSON.stringify(tc.refusals(m2))}`);
    assert.match(lines[0].remoteAddr, /^127\.0\.0\.1:\d+$/);
  }
  assert.equal(ok(await tc.ctl(m2.client, 'get', '/tls/greeting', '--print-value-only')), 'hello\n');
});

test('peers: no certificate, another CN (--peer-cert-allowed-cn) or another CA are refused; the identity probe works with the peer certificate', async () => {
  const probe = (creds: PeerCredentials) => PeerTransport.identity(m1.peerUrl, { clusterId: 0n, from: 0n }, 3000, creds);
  const good = await probe(new PeerCredentials({ certFile: tc.peer.cert, keyFile: tc.peer.key, trustedCaFile: certs.ca }, PEER_CN));
  assert.notEqual(good.cluster_id, '0');
  await assert.rejects(probe(new PeerCredentials({ certFile: roguePeer.cert, keyFile: roguePeer.key, trustedCaFile: certs.ca })));
  await assert.rejects(probe(new PeerCredentials({ trustedCaFile: certs.ca })));
  await refusedConnections(m1.peerUrl, foreign, 3);
  const peerLines = tc.refusals(m1).filter((l) => l.listener === 'peer');
  const find = (cn: string, error: RegExp) => peerLines.filter((l) => l.cn === cn && error.test(l.error));
  assert.equal(find('rogue-peer', /CommonName authentication failed/).length, 1, JSON.stringify(peerLines));
  assert.equal(find('', /no client certificate/).length, 1, JSON.stringify(peerLines));
  assert.equal(find('foreign-client', /unknown authority/).length, 1, JSON.stringify(peerLines));
  // Our side checks the CN of the member it dials as well (as etcd 3.4 does with --peer-cert-allowed-cn).
  await assert.rejects(
    PeerTransport.identity(
      m1.peerUrl,
      { clusterId: 0n, from: 0n },
      3000,
      new PeerCredentials({ certFile: tc.peer.cert, keyFile: tc.peer.key, trustedCaFile: certs.ca }, 'someone-else'),
    ),
  );
});

/** The certificate a new TLS connection to `url` is served (with the client certificate). */
function servedCert(url: string, client: IssuedCert, alpn = ['h2']): Promise<tls.PeerCertificate> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = tls.connect(
      {
        host: u.hostname,
        port: Number(u.port),
        ca: readFileSync(certs.ca),
        cert: readFileSync(client.cert),
        key: readFileSync(client.key),
        ALPNProtocols: alpn,
      },
      () => {
        resolve(s.getPeerCertificate());
        s.destroy();
      },
    );
    s.on('error', reject);
  });
}

test(
  'certificates rotate without a restart: a client writing all along loses no write, new connections get the new certificate',
  { timeout: 60_000 },
  async () => {
    const f = tc.files(m1);
    const client = { cert: certs.clientCert, key: certs.clientKey };
    const before = await servedCert(m1.client, client);
    const beforePeer = await servedCert(m1.peerUrl, tc.peer);
    const rotated = await issueCert(certs, 'server-rotated', { cn: 'etcd-server-rotated' });
    const rotatedPeer = await issueCert(certs, 'peer-rotated', { cn: PEER_CN });
    const tlsOpts = { caFile: certs.ca, certFile: certs.clientCert, keyFile: certs.clientKey };

    // One long-lived client, and a fresh connection every few writes (each a new handshake).
    let stop = false;
    const failures: string[] = [];
    let writes = 0;
    const steady = new EtcdClient({ endpoints: [m1.client], tls: tlsOpts, commandTimeoutMs: 5000 });
    const put = async (c: EtcdClient, key: string) => {
      try {
        await c.put(key, String(writes));
        writes++;
      } catch (e) {
        // A write may be retried once over a new connection; a second failure counts.
        const again = new EtcdClient({ endpoints: [m1.client], tls: tlsOpts });
        try {
          await again.put(key, String(writes));
          writes++;
        } catch (e2) {
          failures.push(`${key}: ${(e as Error).message} / ${(e2 as Error).message}`);
        } finally {
          again.close();
        }
      }
    };
    const steadyLoop = (async () => {
      for (let i = 0; i < 2000 && !stop; i++) await put(steady, `/tls/rotate/steady/${i}`);
    })();
    const freshLoop = (async () => {
      for (let i = 0; i < 500 && !stop; i++) {
        const c = new EtcdClient({ endpoints: [m1.client], tls: tlsOpts });
        try {
          for (let j = 0; j < 3; j++) await put(c, `/tls/rotate/fresh/${i}/${j}`);
        } finally {
          c.close();
        }
      }
    })();
    try {
      await new Promise((r) => setTimeout(r, 1000));
      // Not atomic, as an operator copying files would do it: for a moment the
      // certificate and the key do not match, and the member keeps the old pair.
      copyFileSync(rotated.cert, f.serverCert);
      await new Promise((r) => setTimeout(r, 300));
      copyFileSync(rotated.key, `${f.serverKey}.new`);
      renameSync(`${f.serverKey}.new`, f.serverKey);
      copyFileSync(rotatedPeer.cert, `${f.peerCert}.new`);
      copyFileSync(rotatedPeer.key, `${f.peerKey}.new`);
      renameSync(`${f.peerKey}.new`, f.peerKey);
      renameSync(`${f.peerCert}.new`, f.peerCert);
      await new Promise((r) => setTimeout(r, 1500));
    } finally {
      stop = true;
      await Promise.all([steadyLoop, freshLoop]);
      steady.close();
    }
    assert.deepEqual(failures, []);
    assert.ok(writes > 20, `only ${writes} writes`);
    const after = await servedCert(m1.client, client);
    assert.equal(before.subject.CN, 'etcd-server');
    assert.equal(after.subject.CN, 'etcd-server-rotated');
    // The metrics URL is served from the same files.
    assert.equal((await servedCert(metricsUrl, client, ['http/1.1'])).subject.CN, 'etcd-server-rotated');
    const afterPeer = await servedCert(m1.peerUrl, tc.peer);
    assert.notEqual(afterPeer.fingerprint256, beforePeer.fingerprint256, 'the peer listener serves the new peer certificate');
    assert.equal(afterPeer.fingerprint256, new X509Certificate(readFileSync(rotatedPeer.cert)).fingerprint256);
    // The cluster still works through every member.
    for (const m of [m1, m2, m3]) assert.equal(ok(await tc.ctl(m.client, 'put', `/tls/after-rotation/${m.name}`, 'ok')), 'OK\n');
  },
);

test('every line the members wrote to stderr is one JSON object (no Node warning about https://<IP> peers in between)', () => {
  for (const m of tc.c.members) {
    for (const line of m.log.filter((l) => l.trim() !== '')) assert.doesNotThrow(() => JSON.parse(line), `${m.name}: ${line}`);
  }
});

test(
  'after a recovery (--force-new-cluster), an old member restarting asks its peers over TLS who they are and stops for good (78)',
  { timeout: 60_000 },
  async () => {
    assert.equal(await tc.c.kill(m1, 'SIGTERM'), 0);
    assert.equal(await tc.c.kill(m2, 'SIGTERM'), 0);
    tc.c.spawn(m1, ['--force-new-cluster', ...tc.tlsArgs(m1)]);
    await waitFor('m1 to lead its new cluster', async () => (await tc.leader([m1])) === m1, 30_000, 200);
    tc.c.spawn(m2, tc.tlsArgs(m2));
    assert.equal(await tc.c.exitOf(m2, 30_000), 78, m2.log.join('\n'));
    assert.ok(
      m2.log.some((l) => l.includes('cluster superseded by')),
      m2.log.join('\n'),
    );
  },
);
