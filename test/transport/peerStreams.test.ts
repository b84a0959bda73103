// Raft messages and snapshots between members go over connections of their own
// (src/transport/rawPeerStream.ts, rawSnapshot.ts), not over grpc-js calls. A
// member that takes none (one from before them; failpoint grpc-peer-stream-only
// stands in for it) still gets both: its peers fall back to gRPC for it.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { etcdctl, lifeboat, LifeboatCluster, waitFor } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';

/** A lifeboat_peer_*_total counter by kind, from a member's /metrics. */
async function byKind(metricsPort: number, counter: 'streams_opened' | 'snapshots_sent'): Promise<{ raw: number; grpc: number }> {
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const count = (kind: string) => Number(new RegExp(`^lifeboat_peer_${counter}_total\\{kind="${kind}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { raw: count('raw'), grpc: count('grpc') };
}
const streamsOpened = (port: number) => byKind(port, 'streams_opened');

/** Writes enough through `endpoint` for the log to be compacted (--snapshot-count 20) past a stopped member. */
async function writeMany(endpoint: string, prefix: string): Promise<void> {
  for (let i = 0; i < 40; i++) {
    const r = await etcdctl(endpoint, 'put', `${prefix}${i}`, `${i}`);
    assert.equal(r.code, 0, r.stderr);
  }
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
        ['--initial-cluster', initial, '--initial-cluster-state', 'new', '--listen-metrics-urls', `http://127.0.0.1:${metrics[i]}`, '--snapshot-count', '20'],
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
    assert.deepEqual(await byKind(metrics[0], 'snapshots_sent'), { raw: 0, grpc: 0 }, 'no snapshot was needed yet');

    // Stopped while the log is compacted past them, each catches up by a snapshot:
    // m2 on a raw connection, m3 (which takes none) over gRPC.
    const [, m2member, m3member] = c.members;
    for (const [m, env, kind] of [
      [m2member, {}, 'raw'],
      [m3member, { LIFEBOAT_FAULT: 'grpc-peer-stream-only' }, 'grpc'],
    ] as const) {
      await c.kill(m, 'SIGTERM');
      await writeMany(c.members[0].client, `${m.name}-away/`);
      const before = await byKind(metrics[0], 'snapshots_sent');
      c.spawn(m, ['--snapshot-count', '20'], { env });
      await waitFor(`${m.name} to serve the writes it missed`, async () => {
        const r = await etcdctl(m.client, 'get', `${m.name}-away/39`, '--consistency=s', '--print-value-only');
        return r.code === 0 && r.stdout.trim() === '39';
      });
      assert.ok(
        m.log.some((l) => l.includes('applying snapshot from leader')),
        `${m.name} caught up without a snapshot`,
      );
      const after = await byKind(metrics[0], 'snapshots_sent');
      assert.equal(after[kind], before[kind] + 1, `the snapshot to ${m.name} went ${kind}: ${JSON.stringify({ before, after })}`);
    }
  });
});
