// A learner that joins behind a log larger than one peer message may carry (64 MiB)
// catches up by log replay over one healthy stream: the leader sends what it owes
// in envelopes of a few MiB as the stream drains, never one envelope of it all.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { LifeboatCluster, etcdctl, waitFor } from '../support/lifeboatCluster.js';

const VALUE = Buffer.alloc(1 << 20, 7);
const PUTS = 90;

async function status(endpoint: string) {
  const c = new EtcdClient({ endpoints: [endpoint], dialTimeoutMs: 1000, commandTimeoutMs: 3000 });
  try {
    return await c.status();
  } finally {
    c.close();
  }
}

// 90 entries are far below the snapshot count: the leader keeps its whole log and
// the learner can only be sent entries, never a snapshot.
describe('learner catch-up by log replay', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('learnercatchup', 1);
  });
  after(async () => c?.stopAll());

  test(`a learner behind ${PUTS} MiB of log (more than one peer message may hold) replays it all over one stream`, async () => {
    const [leader] = c.members;
    const client = new EtcdClient({ endpoints: [leader.client], dialTimeoutMs: 3000, commandTimeoutMs: 20_000 });
    try {
      for (let i = 0; i < PUTS; i++) await client.put(`big/${i}`, VALUE);
    } finally {
      client.close();
    }
    const target = (await status(leader.client)).raftIndex;
    const m = c.define('learner');
    // etcdctl's member add prints the settings the new member starts with.
    const added = await etcdctl(leader.client, 'member', 'add', m.name, `--peer-urls=${m.peerUrl}`, '--learner');
    assert.equal(added.code, 0, added.stderr);
    const initial = /ETCD_INITIAL_CLUSTER="([^"]+)"/.exec(added.stdout)?.[1];
    assert.ok(initial, `no ETCD_INITIAL_CLUSTER in: ${added.stdout}`);
    c.spawn(m, ['--initial-cluster', initial, '--initial-cluster-state', 'existing']);
    // Connection failures before the learner listens are expected; count those after.
    await waitFor('the learner to answer', () => status(m.client).then(() => true), 30_000, 100);
    const from = leader.log.length;
    await waitFor(`the learner to apply index ${target}`, async () => (await status(m.client)).raftAppliedIndex >= target, 90_000, 200);
    const lost = leader.log.slice(from).filter((l) => l.includes('"msg":"lost connection to peer"'));
    assert.deepEqual(lost, [], 'the stream to the learner never failed');
    const learnerClient = new EtcdClient({ endpoints: [m.client], dialTimeoutMs: 3000, commandTimeoutMs: 20_000 });
    try {
      const r = await learnerClient.range(`big/${PUTS - 1}`, { serializable: true });
      assert.equal(r.kvs.length, 1);
      assert.ok(Buffer.from(r.kvs[0].value).equals(VALUE), 'the last value arrived whole');
    } finally {
      learnerClient.close();
    }
  });
});
