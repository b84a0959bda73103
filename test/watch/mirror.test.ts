// `etcdctl make-mirror` into Lifeboat, from Lifeboat and from real etcd 3.4. The
// mirror lists the source at one revision (paged Range), copies it, then watches
// from the next revision and replays each revision as one Txn on the destination;
// afterwards every key and value match, including what was written and deleted
// while it ran.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { EtcdCluster } from '../support/etcdCluster.js';
import { LifeboatCluster, waitFor } from '../support/lifeboatCluster.js';
import { etcdctlBackground, RawKv, type Background } from './watchClients.js';

const key = (i: number) => `m/${String(i).padStart(4, '0')}`;

async function mirrorAndCompare(source: string, dest: string): Promise<void> {
  const src = new RawKv(source);
  const dst = new RawKv(dest);
  let mirror: Background | undefined;
  try {
    // Before the mirror starts: 1200 keys (more than one 1000-key page), overwrites, deletes.
    for (let i = 0; i < 1200; i += 100) await Promise.all(Array.from({ length: 100 }, (_, j) => src.put(key(i + j), `v1-${i + j}`)));
    for (let i = 0; i < 50; i++) await src.put(key(i), `v2-${i}`);
    await src.del(key(1150), key(1200));
    mirror = etcdctlBackground(source, 'make-mirror', dest);
    await waitFor('the base copy', async () => (await dst.dump()).length === 1150, 30_000, 200);
    // While it runs: new keys, overwrites, deletes of single keys and ranges.
    for (let i = 1200; i < 1300; i++) await src.put(key(i), `v1-${i}`);
    for (let i = 100; i < 120; i++) await src.put(key(i), `v3-${i}`);
    await src.del(key(0));
    await src.del(key(500), key(600));
    await src.put(key(0), 'back');
    const want = await src.dump();
    assert.equal(want.length, 1150 + 100 - 100);
    await waitFor('the destination to match the source', async () => JSON.stringify(await dst.dump()) === JSON.stringify(want), 30_000, 200);
    assert.deepEqual(await dst.dump(), want);
    assert.ok(mirror.running, `make-mirror stopped: ${mirror.stderr}`);
  } finally {
    await mirror?.stop();
    src.close();
    dst.close();
  }
}

describe('etcdctl make-mirror', () => {
  const clusters: Array<{ stop(): Promise<void> }> = [];
  after(async () => {
    await Promise.all(clusters.map((c) => c.stop()));
  });

  test('from one Lifeboat cluster to another: every key and value equal', async () => {
    const [from, to] = await Promise.all([LifeboatCluster.start('mirror-a', 1), LifeboatCluster.start('mirror-b', 1)]);
    clusters.push({ stop: () => from.stopAll() }, { stop: () => to.stopAll() });
    await mirrorAndCompare(from.endpoints()[0], to.endpoints()[0]);
  });

  test('from real etcd 3.4 to Lifeboat: every key and value equal', async () => {
    const [etcd, to] = await Promise.all([EtcdCluster.start({ size: 1, portSeed: 'mirror-etcd' }), LifeboatCluster.start('mirror-c', 1)]);
    clusters.push({ stop: () => etcd.stop() }, { stop: () => to.stopAll() });
    await mirrorAndCompare(etcd.endpoints, to.endpoints()[0]);
  });
});
