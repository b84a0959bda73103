// A member's peer port given as a client endpoint: the error says it is a peer
// port, of which runtime, and the client URLs to use instead; not a certificate
// problem (real etcd 3.4 with client and peer TLS closes such a connection) nor
// "is this an etcd v3 endpoint?" (Lifeboat's peer port serves its own service).
// The same commands with the client URL succeed.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { makeCerts } from '../support/certs.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { LifeboatCluster, lifeboat } from '../support/lifeboatCluster.js';

describe('a peer port given as a client endpoint is named as one', () => {
  let etcd: EtcdCluster;
  let lb: LifeboatCluster;
  let certDir = '';

  before(async () => {
    certDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-peerport-'));
    const certs = await makeCerts(certDir);
    etcd = await EtcdCluster.start({ size: 1, portSeed: 'peerPortEndpoint.test', tls: certs, peerTls: true });
    lb = await LifeboatCluster.start('peerport', 1);
  });
  after(async () => {
    await etcd?.stop();
    await lb?.stopAll();
    fs.rmSync(certDir, { recursive: true, force: true });
  });

  test('etcd with client and peer TLS: member list and snapshot save at the peer port say "etcd peer port" and the client URL', async () => {
    const m = etcd.members[0];
    const ok = await lifeboat('member', 'list', '--endpoints', m.clientUrl, ...etcd.tlsArgs());
    assert.equal(ok.code, 0, ok.stderr);
    const want = `${m.peerUrl} is an etcd member's peer port, not a client endpoint; give a client URL in --endpoints (its members' client URLs: ${m.clientUrl})`;
    const list = await lifeboat('member', 'list', '--endpoints', m.peerUrl, ...etcd.tlsArgs());
    assert.equal(list.code, 1, list.stderr);
    assert.equal(list.stderr, `Error: ${want}\n`);
    const file = path.join(certDir, 'never.db');
    const save = await lifeboat('snapshot', 'save', file, '--endpoints', m.peerUrl, ...etcd.tlsArgs());
    assert.equal(save.code, 1, save.stderr);
    assert.equal(save.stderr, `Error: ${want}\n`);
    assert.ok(!fs.existsSync(file) && !fs.existsSync(`${file}.part`));
  });

  test('Lifeboat: member list at the peer port says "Lifeboat peer port" and the client URL', async () => {
    const m = lb.members[0];
    const ok = await lifeboat('member', 'list', '--endpoints', m.client);
    assert.equal(ok.code, 0, ok.stderr);
    const list = await lifeboat('member', 'list', '--endpoints', m.peerUrl);
    assert.equal(list.code, 1, list.stderr);
    assert.match(
      list.stderr,
      new RegExp(
        `^Error: ${m.peerUrl} is a Lifeboat member's peer port, not a client endpoint; give a client URL in --endpoints \\(its members' client URLs: \\S*${m.client}\\)\\n$`,
      ),
    );
  });
});
