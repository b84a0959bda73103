// Quorum loss and --force-new-cluster: the survivor becomes a one-member
// cluster with a new cluster ID and all committed data; old members that come
// back are told their cluster was superseded and stop with exit 78.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import * as grpc from '#grpc-js';
import { service } from '../../src/proto/grpcClients.js';
import { LifeboatCluster, etcdctl, parseEtcdJson, waitFor } from '../support/lifeboatCluster.js';

function clusterIdOf(json: string): string {
  return BigInt(parseEtcdJson(json).header.cluster_id).toString(16);
}

describe('quorum loss and --force-new-cluster', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('quorum', 3);
  });
  after(async () => c?.stopAll());

  test('without a quorum, writes and member changes fail with etcd errors and change nothing', async () => {
    for (let i = 0; i < 20; i++) assert.equal((await etcdctl(c.endpoints(), 'put', `acked${i}`, `${i}`)).code, 0);
    const [survivor, a, b] = c.members;
    await c.kill(a);
    await c.kill(b);
    const put = await etcdctl(survivor.client, 'put', 'lost', 'write');
    assert.notEqual(put.code, 0);
    assert.match(put.stderr, /etcdserver: request timed out|context deadline exceeded/);
    const add = await etcdctl(survivor.client, 'member', 'add', 'm9', '--peer-urls=http://127.0.0.1:1');
    assert.notEqual(add.code, 0);
    assert.match(add.stderr, /etcdserver: unhealthy cluster/);
    // Why, in its log: no leader, or (still leading until check-quorum steps it down) the voters it has not heard from.
    assert.ok(
      survivor.log.some((l) => /"msg":"refused a membership change(: no leader)?"/.test(l)),
      'the survivor did not log why it refused',
    );
    const list = await etcdctl(survivor.client, 'member', 'list');
    assert.equal(list.stdout.trim().split('\n').length, 3);
    const get = await etcdctl(survivor.client, 'get', 'lost', '--consistency=s', '--print-value-only');
    assert.equal(get.stdout.trim(), '');
  });

  test('--force-new-cluster on the survivor: one member, a new cluster ID, every acknowledged write', async () => {
    const [survivor, a, b] = c.members;
    const before = await etcdctl(survivor.client, 'get', 'acked0', '-w', 'json', '--consistency=s');
    const oldCluster = clusterIdOf(before.stdout);
    assert.equal(await c.kill(survivor, 'SIGTERM'), 0);
    // kv.db's new cluster state must be durable before the data dir and the marker say
    // the cluster was forced: with its fsync failing, the force stops short of them.
    c.spawn(survivor, ['--force-new-cluster'], { env: { LIFEBOAT_FAULT: 'kv-fsync-eio' } });
    assert.equal(await c.exitOf(survivor), 1, survivor.log.slice(-3).join('\n'));
    assert.match(survivor.log.join('\n'), /EIO: i\/o error, fsync '[^']*kv\.db/);
    assert.equal(fs.existsSync(`${survivor.dataDir}/member/forced`), false, 'forced marked though kv.db was not durable');
    c.spawn(survivor, ['--force-new-cluster']);
    // The next force finishes the one that stopped midway (kv.db already holds the new cluster).
    await waitFor('the forced member to lead', () => c.leader([survivor])).catch((e) => {
      throw new Error(`${(e as Error).message}: ${survivor.log.slice(-3).join('\n')}`);
    });
    const after = await waitFor('a write on the new cluster', async () => {
      const r = await etcdctl(survivor.client, 'put', 'new-cluster', 'yes', '-w', 'json');
      return r.code === 0 ? r : undefined;
    });
    const newCluster = clusterIdOf(after.stdout);
    assert.notEqual(newCluster, oldCluster);
    const list = await etcdctl(survivor.client, 'member', 'list', '-w', 'json');
    assert.equal(parseEtcdJson(list.stdout).members.length, 1);
    for (let i = 0; i < 20; i++) {
      const r = await etcdctl(survivor.client, 'get', `acked${i}`, '--print-value-only');
      assert.equal(r.stdout.trim(), `${i}`);
    }
    assert.ok(fs.existsSync(`${survivor.dataDir}/member/forced`));

    // An old member that cannot reach the survivor (paused) starts and serves
    // clients, but alone it has no quorum: a write sent once it listens is not
    // acknowledged and fails with etcd's timeout. Once the survivor answers, the
    // member learns its cluster was superseded and stops with 78.
    survivor.proc!.kill('SIGSTOP');
    let err: grpc.ServiceError | null = null;
    try {
      c.spawn(a, []);
      await waitFor('the old member to accept client connections', async () => (await etcdctl(a.client, 'endpoint', 'status')).code === 0);
      const KV = service('etcdserverpb.KV');
      const kv = new KV(a.client, grpc.credentials.createInsecure()) as unknown as {
        Put(req: unknown, opts: unknown, cb: (e: grpc.ServiceError | null) => void): void;
        close(): void;
      };
      err = await new Promise<grpc.ServiceError | null>((resolve) =>
        kv.Put({ key: Buffer.from('split-brain'), value: Buffer.from('x') }, { deadline: Date.now() + 30_000 }, (e) => resolve(e)),
      );
      kv.close();
    } finally {
      survivor.proc!.kill('SIGCONT');
    }
    assert.ok(err, 'an old member acknowledged a write');
    assert.equal(err.details, 'etcdserver: request timed out');
    assert.equal(await c.exitOf(a), 78);
    assert.ok(c.logHas(a, `cluster superseded by ${newCluster}`), a.log.join('\n'));
    assert.ok(fs.existsSync(`${a.dataDir}/member/superseded`));
    // The other, coming back with the survivor up, asks it before serving and stops at once.
    c.spawn(b, []);
    assert.equal(await c.exitOf(b), 78);
    assert.ok(fs.existsSync(`${b.dataDir}/member/superseded`));

    // --force-new-cluster is one-shot.
    assert.equal(await c.kill(survivor, 'SIGTERM'), 0);
    c.spawn(survivor, ['--force-new-cluster']);
    assert.equal(await c.exitOf(survivor), 3);
    assert.ok(
      survivor.log.some((l) => l.includes('--force-new-cluster was already applied')),
      survivor.log.join('\n'),
    );
  });
});
