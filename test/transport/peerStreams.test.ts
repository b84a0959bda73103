// Raft messages between members go over connections of their own
// (src/transport/rawPeerStream.ts), not over grpc-js streams. A member that takes
// none (one from before them; failpoint grpc-peer-stream-only stands in for it)
// still gets its messages: its peers fall back to the gRPC stream for it.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { etcdctl, lifeboat, LifeboatCluster, waitFor } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';

/** lifeboat_peer_streams_opened_total by kind, from a member's /metrics. */
async function streamsOpened(metricsPort: number): Promise<{ raw: number; grpc: number }> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const count = (kind: string) => Number(new RegExp(`^lifeboat_peer_streams_opened_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { raw: count('raw'), grpc: count('grpc') };
}

describe('peer message streams', () => {
  test('raw connections between members of this version; gRPC streams to and from a member that takes none', async () => {
    const c = await LifeboatCluster.create('peer-streams', 3);
    after(() => c.stopAll());
    const metrics = await freePorts(3, 'peer-streams-metrics');
    for (let i = 0; i < 3; i++) c.members.push(c.define(`m${i + 1}`));
    const initial = c.initialCluster();
    c.members.forEach((m, i) =>
      c.spawn(
        m,
        ['--initial-cluster', initial, '--initial-cluster-state', 'new', '--listen-metrics-urls', `http://127.0.0.1:${metrics[i]}`],
        i === 2 ? { env: { LIFEBOAT_FAULT: 'grpc-peer-stream-only' } } : {},
      ),
    );
    await c.waitStarted(3);
    for (const [i, m] of c.members.entries()) {
      const r = await etcdctl(m.client, 'put', `k${i}`, `v${i}`);
      assert.equal(r.code, 0, r.stderr);
    }
    // Every member serves every write from its own store: messages reached each of them.
    for (const m of c.members) {
      await waitFor(`${m.name} to hold all three keys`, async () => {
        const r = await etcdctl(m.client, 'get', 'k', '--prefix', '--consistency=s', '--print-value-only');
        return r.code === 0 && r.stdout.split('\n').filter(Boolean).join(',') === 'v0,v1,v2';
      });
    }
    // Followers send only to the leader: have m1 lead, so it sends to both.
    if ((await c.waitForLeader()) !== c.members[0]) {
      const list = await etcdctl(c.endpoints(), 'member', 'list');
      const id = /^([0-9a-f]+), started, m1,/m.exec(list.stdout)?.[1];
      assert.ok(id, list.stdout);
      const moved = await lifeboat('move-leader', id, '--endpoints', c.endpoints().join(','));
      assert.equal(moved.code, 0, moved.stderr);
      await waitFor('m1 to lead', async () => (await c.waitForLeader()) === c.members[0]);
    }
    const r = await etcdctl(c.members[0].client, 'put', 'after', 'move');
    assert.equal(r.code, 0, r.stderr);
    const [m1, , m3] = await Promise.all(metrics.map(streamsOpened));
    assert.ok(m1.raw >= 1, `the leader m1 talks to m2 over a raw connection: ${JSON.stringify(m1)}`);
    assert.ok(m1.grpc >= 1, `its stream to m3 fell back to gRPC: ${JSON.stringify(m1)}`);
    assert.deepEqual({ raw: m3.raw, grpc: m3.grpc >= 1 }, { raw: 0, grpc: true }, `m3 opens gRPC streams only: ${JSON.stringify(m3)}`);
  });
});
