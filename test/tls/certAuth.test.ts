// etcd's certificate logins on a Lifeboat member that terminates TLS itself: with
// --client-cert-auth and auth enabled, a client certificate's CN is the user (etcd
// 3.4's rule), so a client with no --user is allowed what its CN's roles allow and
// refused the rest; a certificate whose CN is no user gets nothing.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { issueCert, makeCerts, type TestCerts } from '../support/certs.js';
import { etcdctl } from '../support/lifeboatCluster.js';
import { TlsCluster } from './tlsCluster.js';

describe('client certificate logins', () => {
  let certs: TestCerts;
  let tc: TlsCluster;
  before(async () => {
    certs = await makeCerts(mkdtempSync(path.join(os.tmpdir(), 'lifeboat-cert-auth-')));
    tc = await TlsCluster.create('tls-cert-auth', certs, 1);
  });
  after(async () => tc?.c.stopAll());

  test("a certificate's CN is the user: allowed within its role, refused outside it; an unknown CN gets nothing", async () => {
    const m = tc.define('m1');
    tc.c.members.push(m);
    tc.c.spawn(m, [...tc.tlsArgs(m), '--initial-cluster', `m1=${m.peerUrl}`, '--initial-cluster-state', 'new']);
    await tc.waitStarted(1);
    const asRoot = (...args: string[]) => tc.ctl(m.client, '--user', 'root:rootpw', ...args);
    for (const args of [
      ['user', 'add', 'root:rootpw'],
      ['user', 'grant-role', 'root', 'root'],
      ['role', 'add', 'app'],
      ['role', 'grant-permission', 'app', 'readwrite', '/app/', '--prefix'],
      ['user', 'add', 'alice', '--no-password'],
      ['user', 'grant-role', 'alice', 'app'],
    ]) {
      const r = await tc.ctl(m.client, ...args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    }
    assert.equal((await tc.ctl(m.client, 'auth', 'enable')).code, 0);
    assert.equal((await asRoot('put', '/other/x', 'root-only')).code, 0);

    const alice = await issueCert(certs, 'alice', { cn: 'alice', usage: 'client' });
    const bob = await issueCert(certs, 'bob', { cn: 'bob', usage: 'client' });
    const as = (c: { cert: string; key: string }, ...args: string[]) => etcdctl(m.client, '--cacert', certs.ca, '--cert', c.cert, '--key', c.key, ...args);

    const put = await as(alice, 'put', '/app/k', 'v');
    assert.equal(put.code, 0, put.stderr);
    assert.equal((await as(alice, 'get', '/app/k', '--print-value-only')).stdout, 'v\n');
    const outside = await as(alice, 'get', '/other/x');
    assert.notEqual(outside.code, 0);
    assert.match(outside.stderr, /permission denied/);
    const unknown = await as(bob, 'get', '/app/k');
    assert.notEqual(unknown.code, 0, 'a CN that is no user was served');
    // The same request with the root password is served: the refusals are auth's, not TLS's.
    assert.equal((await asRoot('get', '/other/x', '--print-value-only')).stdout, 'root-only\n');
  });
});
