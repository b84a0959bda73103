// `lifeboat backup restore-keys` into a live Lifeboat cluster, from a store
// written from it (test/support/backupFixture.ts): a Kubernetes-shaped keyspace
// whose namespace "shop" is deleted by accident. The namespace comes back as it
// was at the point, namespace "other" (changed since) is left as it is, a key
// created since is left alone; ten keys a concurrent writer changes between the
// plan and the apply are refused and counted, the rest restored; without a
// terminal, an apply without --yes or --plan is refused and changes nothing.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { clientFor, type EtcdClient } from '../../src/client/etcdClient.js';
import type { RestoreKeysPlan } from '../../src/backup/restoreKeysPlan.js';
import { BackupFixture } from '../support/backupFixture.js';
import { LifeboatCluster } from '../support/lifeboatCluster.js';
import { lifeboat } from '../support/tools.js';

const conn = { dialTimeoutMs: 2000, commandTimeoutMs: 10_000 };
const PODS = 200;
const pod = (i: number) => `/registry/pods/shop/p${String(i).padStart(3, '0')}`;

describe('backup restore-keys', () => {
  let cluster: LifeboatCluster;
  let c: EtcdClient;
  let dir: string;
  let storeDir: string;
  let point: number;
  let atPoint: Map<string, string>;
  let endpoint: string;

  before(async () => {
    cluster = await LifeboatCluster.start('backupRestoreKeys', 1);
    endpoint = cluster.endpoints()[0];
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-restore-keys-'));
    storeDir = path.join(dir, 'store');
    c = clientFor(cluster.endpoints(), conn);
    const fx = new BackupFixture({ endpoints: cluster.endpoints(), runtime: 'lifeboat', storeDir });
    try {
      await c.put('/registry/namespaces/shop', 'ns shop');
      await c.put('/registry/namespaces/other', 'ns other');
      for (let i = 0; i < 5; i++) await c.put(`/registry/pods/other/q${i}`, `other ${i}`);
      await fx.full();
      await Promise.all(Array.from({ length: PODS }, (_, i) => c.put(pod(i), `pod ${i}`)));
      const lease = await c.leaseGrant(900);
      await c.put('/registry/configmaps/shop/settings', 'leased', { lease: lease.id });
      point = (await c.put('/registry/pods/shop/p000', 'pod 0, second version')).header.revision;
      atPoint = new Map((await c.range('/registry/', { rangeEnd: '/registry0' })).kvs.map((kv) => [kv.key.toString(), kv.value.toString()]));
      // The accident, and life going on.
      await c.deleteRange('/registry/pods/shop/', { rangeEnd: '/registry/pods/shop0' });
      await c.deleteRange('/registry/configmaps/shop/', { rangeEnd: '/registry/configmaps/shop0' });
      await c.deleteRange('/registry/namespaces/shop');
      await c.put('/registry/pods/other/q0', 'changed since');
      await c.put('/registry/pods/shop/new', 'created since');
      await fx.segment();
    } finally {
      fx.close();
    }
  });

  after(async () => {
    c?.close();
    await cluster?.stopAll();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('without a terminal, no --yes and no --plan: refused, nothing changed', async () => {
    const r = await lifeboat('backup', 'restore-keys', `file://${storeDir}`, '--k8s-namespace', 'shop', '--at', String(point), '--endpoints', endpoint);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /pass --yes, or review a plan with --dry-run/);
    assert.equal((await c.range('/registry/pods/shop/', { rangeEnd: '/registry/pods/shop0', countOnly: true })).count, 1);
  });

  test('a plan, a concurrent writer, the apply: ten refused, the rest as they were at the point', async () => {
    const dry = await lifeboat(
      'backup',
      'restore-keys',
      `file://${storeDir}`,
      '--k8s-namespace',
      'shop',
      '--at',
      String(point),
      '--endpoints',
      endpoint,
      '--dry-run',
      '-w',
      'json',
    );
    assert.equal(dry.code, 0, dry.stderr);
    const plan = JSON.parse(dry.stdout) as RestoreKeysPlan;
    assert.deepEqual(plan.prefixes, ['/registry/configmaps/shop/', '/registry/namespaces/shop', '/registry/pods/shop/']);
    const actions = (a: string) => plan.keys.filter((k) => k.action === a).length;
    assert.equal(actions('restore'), PODS + 2);
    assert.equal(actions('keep-newer'), 1);
    const planFile = path.join(dir, 'plan.json');
    fs.writeFileSync(planFile, dry.stdout);
    assert.equal((await c.range('/registry/pods/shop/', { rangeEnd: '/registry/pods/shop0', countOnly: true })).count, 1, 'a dry run changed something');

    for (let i = 10; i < 20; i++) await c.put(pod(i), 'written by someone else');
    const apply = await lifeboat('backup', 'restore-keys', '--plan', planFile, '--endpoints', endpoint, '--audit-db', path.join(dir, 'audit.db'));
    assert.equal(apply.code, 0, apply.stderr);
    assert.match(
      apply.stdout,
      new RegExp(`^restored ${PODS + 2 - 10} keys \\(${PODS + 2 - 10} came back, 0 overwritten\\), deleted 0, skipped 1, refused 10; 1 fresh leases`),
    );

    const now = new Map((await c.range('/registry/', { rangeEnd: '/registry0' })).kvs.map((kv) => [kv.key.toString(), kv.value.toString()]));
    for (const [k, v] of atPoint) {
      if (k.startsWith('/registry/pods/other/') || k === '/registry/namespaces/other') continue;
      const changed = /p01\d$/.test(k);
      assert.equal(now.get(k), changed ? 'written by someone else' : v, k);
    }
    assert.equal(now.get('/registry/pods/other/q0'), 'changed since', 'another namespace is left as it is');
    assert.equal(now.get('/registry/pods/shop/new'), 'created since');
    const leased = (await c.range('/registry/configmaps/shop/settings')).kvs[0];
    assert.notEqual(leased.lease, 0n);
    assert.equal((await c.leaseTimeToLive(leased.lease)).grantedTtl, 900);

    const shown = await lifeboat('audit', 'list', '--audit-db', path.join(dir, 'audit.db'));
    assert.match(shown.stdout, /restore-keys/);
  });
});
