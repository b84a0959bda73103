// A checkpoint that cannot make kv.db durable (its fsync fails with EIO) stops the
// member, as etcd stops when its backend cannot commit. Going on, the kernel may drop
// the pages and report the next fsync clean: a later checkpoint would call them
// durable and the Raft log be compacted past them. The log replays what kv.db lacks
// at the next start. Failpoint kv-fsync-eio, turned on while the member runs. A
// defragment rewrites the whole file: a failed fsync after its VACUUM stops the member
// too (defragment-fsync-eio), where it once only failed the client's call.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { LifeboatCluster, missingKeys } from '../support/lifeboatCluster.js';

/** Enough changed rows for a checkpoint to be due at the member's next second (CHECKPOINT_CHANGES). */
const PUTS = 700;

/** Puts fsync/<from..from+PUTS-1>; returns the keys acknowledged (all, unless the member stops under them). */
async function putBatch(endpoint: string, from: number): Promise<string[]> {
  const client = new EtcdClient({ endpoints: endpoint, commandTimeoutMs: 5_000 });
  const acked: string[] = [];
  let next = from;
  const loop = async () => {
    while (next < from + PUTS) {
      const key = `fsync/${String(next++).padStart(5, '0')}`;
      try {
        await client.put(key, 'v');
        acked.push(key);
      } catch {
        return;
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: 8 }, loop));
  } finally {
    client.close();
  }
  return acked;
}

describe('kv.db fsync failures', () => {
  let faults = '';
  const c = LifeboatCluster.create('kv-fsync', 1).then((cluster) => {
    faults = path.join(cluster.dir, 'm1.faults');
    fs.writeFileSync(faults, '');
    const m = cluster.define('m1');
    cluster.members.push(m);
    cluster.spawn(m, ['--initial-cluster', cluster.initialCluster(), '--initial-cluster-state', 'new'], { env: { LIFEBOAT_FAULT_FILE: faults } });
    return cluster;
  });
  after(async () => (await c).stopAll());

  test('a failed checkpoint fsync stops the member with one line; restarted, it serves every acknowledged write', async () => {
    const cluster = await c;
    const m = cluster.members[0];
    await cluster.waitForLeader();

    // The same writes with a working disk: checkpoints come and go, the member stays.
    const acked = await putBatch(m.client, 0);
    assert.equal(acked.length, PUTS);
    await new Promise((r) => setTimeout(r, 2500));
    assert.equal(m.proc?.exitCode, null, `the member stopped with a working disk: ${m.log.slice(-3).join(' | ')}`);

    fs.writeFileSync(faults, 'kv-fsync-eio\n');
    await new Promise((r) => setTimeout(r, 200)); // the fault file is polled every 50 ms
    acked.push(...(await putBatch(m.client, PUTS)));
    assert.equal(await cluster.exitOf(m, 15_000), 1, 'the member went on after a failed checkpoint fsync');
    const stopped = m.log.filter((l) => l.includes('member stopped on an internal error'));
    assert.equal(stopped.length > 0, true, m.log.slice(-5).join('\n'));
    assert.match(stopped[0], /kv\.db checkpoint failed: .*EIO: i\/o error, fsync/);

    fs.writeFileSync(faults, '');
    cluster.spawn(m, [], { env: { LIFEBOAT_FAULT_FILE: faults } });
    await cluster.waitForLeader();
    const missing = await missingKeys(m.client, 'fsync/', acked);
    assert.deepEqual(missing, [], `${missing.length} of ${acked.length} acknowledged writes are gone after the restart`);
  });
  test('a defragment whose fsync fails stops the member with one line; restarted, it serves every write', async () => {
    const cluster = await c;
    const m = cluster.members[0];
    await cluster.waitForLeader();
    const client = new EtcdClient({ endpoints: m.client, commandTimeoutMs: 15_000 });
    let acked: string[];
    try {
      acked = await putBatch(m.client, 2 * PUTS);
      // With a working disk the defragment succeeds and the member stays.
      await client.defragment();
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(m.proc?.exitCode, null, `the member stopped after a defragment with a working disk: ${m.log.slice(-3).join(' | ')}`);

      fs.writeFileSync(faults, 'defragment-fsync-eio\n');
      await new Promise((r) => setTimeout(r, 200)); // the fault file is polled every 50 ms
      await assert.rejects(client.defragment(), /defragment of .* could not make it durable: EIO/);
    } finally {
      client.close();
    }
    assert.equal(await cluster.exitOf(m, 15_000), 1, 'the member went on after a defragment it could not make durable');
    const stopped = m.log.filter((l) => l.includes('member stopped on an internal error'));
    assert.equal(stopped.length > 0, true, m.log.slice(-5).join('\n'));
    assert.match(stopped[0], /defragment of .* could not make it durable: EIO: i\/o error, fsync/);

    fs.writeFileSync(faults, '');
    cluster.spawn(m, [], { env: { LIFEBOAT_FAULT_FILE: faults } });
    await cluster.waitForLeader();
    const missing = await missingKeys(m.client, 'fsync/', acked);
    assert.deepEqual(missing, [], `${missing.length} of ${acked.length} acknowledged writes are gone after the restart`);
  });
});
