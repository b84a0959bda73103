// Raft traffic through real processes: concurrent puts on a 3-member cluster share
// their appends and acks (lifeboat_raft_messages_sent_total), and the followers still
// learn every commit.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as grpc from '#grpc-js';
import { service } from '../../src/proto/grpcClients.js';
import { LifeboatCluster, etcdctl, waitFor } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';

type Unary = (req: unknown, opts: unknown, cb: (e: grpc.ServiceError | null, r?: unknown) => void) => void;
type KvClient = { Put: Unary; close(): void };

/** Appends and append responses the members sent, from their /metrics. */
async function appTraffic(urls: string[]): Promise<{ App: number; AppResp: number }> {
  const out = { App: 0, AppResp: 0 };
  for (const url of urls) {
    const text = await (await fetch(`${url}/metrics`)).text();
    for (const type of ['App', 'AppResp'] as const) {
      const m = new RegExp(`^lifeboat_raft_messages_sent_total\\{type="${type}"\\} (\\d+)$`, 'm').exec(text);
      if (m) out[type] += Number(m[1]);
    }
  }
  return out;
}

describe('raft traffic', () => {
  let c: LifeboatCluster;
  const metricsUrls: string[] = [];
  before(async () => {
    const ports = await freePorts(3, 'raft-traffic-metrics');
    c = await LifeboatCluster.create('rafttraffic', 3);
    for (let i = 0; i < 3; i++) c.members.push(c.define(`m${i + 1}`));
    const initial = c.initialCluster();
    c.members.forEach((m, i) => {
      metricsUrls.push(`http://127.0.0.1:${ports[i]}`);
      c.spawn(m, ['--initial-cluster', initial, '--initial-cluster-state', 'new', '--listen-metrics-urls', metricsUrls[i]]);
    });
    await c.waitStarted(3);
  });
  after(async () => c?.stopAll());

  test('100 concurrent puts on 3 members: far fewer appends and acks than one per put per follower; every follower applies all', async (t) => {
    const leader = await c.waitForLeader();
    const before = await appTraffic(metricsUrls);
    const KV = service('etcdserverpb.KV');
    const kv = new KV(leader.client, grpc.credentials.createInsecure()) as unknown as KvClient;
    await Promise.all(
      Array.from(
        { length: 100 },
        (_, i) =>
          new Promise<void>((resolve, reject) =>
            kv.Put({ key: Buffer.from(`traffic/${i}`), value: Buffer.alloc(256, 1) }, { deadline: Date.now() + 20_000 }, (e) => (e ? reject(e) : resolve())),
          ),
      ),
    );
    kv.close();
    // One append per put to each of 2 followers and its ack would be 400 messages (800 with the commit updates and their acks).
    const after = await appTraffic(metricsUrls);
    assert.ok(after.App > before.App && after.AppResp > before.AppResp, 'appends and acks are counted');
    const sent = after.App + after.AppResp - before.App - before.AppResp;
    t.diagnostic(`${sent} appends and acks`);
    assert.ok(sent < 200, `${sent} appends and acks for 100 concurrent puts`);
    for (const m of c.members.filter((x) => x !== leader)) {
      await waitFor(`${m.name} to apply the 100 puts`, async () => {
        const r = await etcdctl(m.client, 'get', 'traffic/', '--prefix', '--keys-only', '--consistency=s', '-w', 'json');
        return r.code === 0 && (JSON.parse(r.stdout) as { count?: number }).count === 100;
      });
    }
  });
});
