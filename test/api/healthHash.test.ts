// grpc.health.v1.Health and Maintenance.Hash on a running member, through gRPC.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as grpc from '#grpc-js';
import { service } from '../../src/proto/grpcClients.js';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { LifeboatCluster } from '../support/lifeboatCluster.js';

let c: LifeboatCluster;
let client: EtcdClient;
before(async () => {
  c = await LifeboatCluster.start('health-hash', 1);
  client = new EtcdClient({ endpoints: c.endpoints()[0], commandTimeoutMs: 10_000 });
});
after(async () => {
  client?.close();
  await c?.stopAll();
});

test("grpc.health.v1.Health: Check answers SERVING for the server and for etcd's service name", async () => {
  const Health = service('grpc.health.v1.Health');
  const h = new Health(c.endpoints()[0], grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
  try {
    for (const name of ['', 'etcdserverpb.KV']) {
      const r = await new Promise<{ status: string }>((resolve, reject) =>
        h.Check({ service: name }, { deadline: Date.now() + 10_000 }, (e: Error | null, res: { status: string }) => (e ? reject(e) : resolve(res))),
      );
      assert.equal(r.status, 'SERVING', `service "${name}"`);
    }
  } finally {
    h.close();
  }
});

test('Maintenance.Hash: the same without writes, different after one, with a response header', async () => {
  await client.put('hash/a', '1');
  const first = await client.hash();
  const again = await client.hash();
  assert.equal(again.hash, first.hash);
  assert.ok(first.header.clusterId > 0n && first.header.memberId > 0n && first.header.revision > 0);
  await client.put('hash/a', '2');
  const after = await client.hash();
  assert.notEqual(after.hash, first.hash);
});
