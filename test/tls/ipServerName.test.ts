// TLS to an IP endpoint sets no ServerName (RFC 6066 forbids an IP there), so Node
// prints no DEP0123 deprecation warning in the middle of a command's output (a
// drill printed one between its lines); the server certificate is still checked
// against the IP: a certificate that does not name 127.0.0.1 is refused.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { issueCert, makeCerts, type TestCerts } from '../support/certs.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { freePorts } from '../support/ports.js';
import { lifeboat } from '../support/lifeboatCluster.js';
import { etcdctl, stopProcess, waitFor } from '../support/tools.js';

describe('TLS to an IP endpoint: no DEP0123 warning, the IP SAN still checked', () => {
  let certs: TestCerts;
  let cluster: EtcdCluster;
  let dir = '';
  let elsewhere: ChildProcess | undefined;

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-ipsni-'));
    certs = await makeCerts(dir);
    cluster = await EtcdCluster.start({ size: 1, portSeed: 'ipServerName.test', tls: certs });
    const ep = cluster.members[0].clientUrl;
    for (let i = 0; i < 10; i++) assert.equal((await etcdctl('--endpoints', ep, ...cluster.tlsArgs(), 'put', `/registry/k${i}`, `v${i}`)).code, 0);
  });
  after(async () => {
    if (elsewhere) await stopProcess(elsewhere);
    await cluster?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a drill and member list over TLS to 127.0.0.1 print no deprecation warning', async () => {
    const ep = cluster.members[0].clientUrl;
    assert.match(ep, /^https:\/\/127\.0\.0\.1:/);
    const list = await lifeboat('member', 'list', '--endpoints', ep, ...cluster.tlsArgs());
    assert.equal(list.code, 0, list.stderr);
    assert.equal(list.stderr, '');
    const drill = await lifeboat('drill', '--endpoints', ep, ...cluster.tlsArgs(), '--audit-db', path.join(dir, 'audit.db'));
    assert.equal(drill.code, 0, `${drill.stdout}\n${drill.stderr}`);
    assert.doesNotMatch(drill.stderr, /DEP0123|DeprecationWarning|Warning:/);
  });

  test('a server certificate that does not name 127.0.0.1 is refused (the IP is what is checked)', async () => {
    const wrong = await issueCert(certs, 'elsewhere', { cn: 'elsewhere', sans: 'IP:10.9.9.9,DNS:elsewhere.example' });
    const [client, peer] = await freePorts(2, 'ipServerName.test.elsewhere');
    const url = `https://127.0.0.1:${client}`;
    elsewhere = spawn(
      'etcd',
      [
        '--name',
        'elsewhere',
        '--data-dir',
        path.join(dir, 'elsewhere.etcd'),
        '--listen-client-urls',
        url,
        '--advertise-client-urls',
        url,
        '--listen-peer-urls',
        `http://127.0.0.1:${peer}`,
        '--initial-advertise-peer-urls',
        `http://127.0.0.1:${peer}`,
        '--initial-cluster',
        `elsewhere=http://127.0.0.1:${peer}`,
        '--cert-file',
        wrong.cert,
        '--key-file',
        wrong.key,
      ],
      { stdio: 'ignore' },
    );
    // Up, as seen without verification; then the same call verified is refused on the name.
    await waitFor(
      'etcd with the elsewhere certificate',
      async () => (await lifeboat('endpoint', 'health', '--endpoints', url, '--insecure-skip-tls-verify')).code === 0,
      {
        timeoutMs: 30_000,
        intervalMs: 300,
      },
    );
    const r = await lifeboat('member', 'list', '--endpoints', url, '--cacert', certs.ca);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /IP: 127\.0\.0\.1 is not in the cert's list: 10\.9\.9\.9/);
    assert.match(r.stderr, /the server certificate does not name this host/);
  });
});
