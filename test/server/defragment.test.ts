// Defragment rewrites kv.db in the store's worker thread (kvStore.ts): the member
// keeps its event loop, so Raft keeps ticking and serving while VACUUM runs. Only
// its applies wait (heldBackApplies.ts), as etcd's clients wait while it defrags.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { LifeboatCluster, waitFor } from '../support/lifeboatCluster.js';

const KEYS = 400;
/** The worker holds the write lock this much longer than VACUUM takes (failpoint): longer than an election timeout. */
const SLOW_MS = 2_000;
const VALUE = 'v'.repeat(16 * 1024);
/** Bounds every loop below: the defragment takes well under this. */
const LOOP_MS = 60_000;

describe('defragment off the event loop', () => {
  const c = LifeboatCluster.start('defrag-loop', 3, [], { env: { LIFEBOAT_FAULT: `defragment-slow:${SLOW_MS}` } });
  after(async () => (await c).stopAll());

  test('while the leader defragments, it answers reads, writes through a follower are acknowledged, and the term stays', { timeout: 180_000 }, async () => {
    const cluster = await c;
    const leader = await cluster.waitForLeader();
    const follower = cluster.running().find((m) => m !== leader)!;
    const atLeader = new EtcdClient({ endpoints: leader.client, commandTimeoutMs: LOOP_MS });
    const atFollower = new EtcdClient({ endpoints: follower.client, commandTimeoutMs: LOOP_MS });
    try {
      // ~6 MiB, half of it then deleted and compacted away: pages for VACUUM to move and free.
      for (let i = 0; i < KEYS; i += 50) {
        await Promise.all(Array.from({ length: 50 }, (_, j) => atLeader.put(`d/${String(i + j).padStart(5, '0')}`, VALUE)));
      }
      const del = await atLeader.deleteRange('d/00000', { rangeEnd: `d/${String(KEYS / 2).padStart(5, '0')}` });
      await atLeader.compact(del.header.revision, { physical: true });
      const before = await atLeader.status();
      assert.ok(before.dbSizeInUse < before.dbSize, 'compaction left free pages');

      let defragDone = false;
      const readsDuring: number[] = [];
      const writesDuring: string[] = [];
      const started = Date.now();
      const defrag = atLeader.defragment().finally(() => (defragDone = true));
      const reading = (async () => {
        for (let n = 0; !defragDone && Date.now() - started < LOOP_MS; n++) {
          const r = await atLeader.range('d/10000', { serializable: true });
          if (!defragDone) readsDuring.push(r.count);
          await new Promise((res) => setTimeout(res, 10));
        }
      })();
      const writing = (async () => {
        for (let n = 0; !defragDone && Date.now() - started < LOOP_MS; n++) {
          const key = `during/${n}`;
          await atFollower.put(key, 'w');
          if (!defragDone) writesDuring.push(key);
        }
      })();
      await Promise.all([defrag, reading, writing]);
      assert.ok(Date.now() - started >= SLOW_MS, 'the defragment returned before its worker let go of the write lock');

      // The event loop was free: the leader answered, and committed what a follower proposed.
      assert.ok(readsDuring.length > 0, 'no serializable read was answered by the leader before its defragment returned');
      assert.ok(writesDuring.length > 0, 'no write through a follower was acknowledged while the leader defragmented');
      const afterStatus = await atLeader.status();
      assert.equal(afterStatus.raftTerm, before.raftTerm, 'an election took place during the defragment');
      assert.equal(afterStatus.leader, before.leader);
      assert.ok(afterStatus.dbSize < before.dbSize, `db size ${before.dbSize} → ${afterStatus.dbSize}`);
      // Every write acknowledged meanwhile is on the leader too, once its held-back applies ran.
      const onLeader = await waitFor('the leader to apply what waited', async () => {
        const r = await atLeader.range('during/', { rangeEnd: 'during0', serializable: true, keysOnly: true });
        return r.count >= writesDuring.length ? new Set(r.kvs.map((kv) => kv.key.toString())) : undefined;
      });
      assert.deepEqual(
        writesDuring.filter((k) => !onLeader.has(k)),
        [],
        'writes acknowledged during the defragment are missing on the leader',
      );
      assert.equal((await atLeader.range('d/', { rangeEnd: 'd0', countOnly: true })).count, KEYS / 2);
      const rev = (await atLeader.status()).header.revision;
      const each = cluster.running().map((m) => new EtcdClient({ endpoints: m.client, commandTimeoutMs: LOOP_MS }));
      try {
        const hashes = await waitFor('every member to apply up to the leader', async () => {
          const hs = await Promise.all(each.map((cl) => cl.hashKV(rev).catch(() => undefined)));
          return hs.every((h) => h !== undefined) ? hs : undefined;
        });
        assert.equal(new Set(hashes.map((h) => h.hash)).size, 1, 'members disagree after the defragment');
      } finally {
        for (const cl of each) cl.close();
      }
    } finally {
      atLeader.close();
      atFollower.close();
    }
  });
});
