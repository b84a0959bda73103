// A member checkpoints kv.db only when there is work, and its store worker
// (hashes, snapshots: src/kv/readJob.ts) runs only for them. Checkpoints run on the
// member's own thread with their fsyncs in libuv's pool (KvStore.checkpointAsync),
// and kv.db's file changes only when one copies the WAL into it. A few writes wait
// for the checkpoint that is due 30 s after the last; a few hundred writes get one
// within a second, and the store worker is not started for it, nor for a snapshot
// save of a checkpointed store (its read is held on the member's thread). hashkv
// starts the worker, which ends after 10 s without a job. The held-read rules (the worker holds
// the read when commits keep landing, and is not ended while it does) are checked
// against the store in test/kv/readJob.test.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Etcd3 } from 'etcd3';
import { LifeboatCluster, etcdctl, lifeboat, waitFor } from '../support/lifeboatCluster.js';

/**
 * Threads of a process now: a running store worker is one or more of them, and so
 * is libuv's thread pool, which starts at a member's first fsync in it (a checkpoint's).
 */
const threads = (pid: number): number => Number(/^Threads:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
/** When kv.db's file last changed: only a checkpoint writes it (applies go to its WAL). */
const kvChanged = (dataDir: string): bigint => fs.statSync(path.join(dataDir, 'member', 'kv.db'), { bigint: true }).mtimeNs;

describe('a member checkpoints, and starts its store worker, when there is work for it', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('idle-worker', 3);
  });
  after(async () => c?.stopAll());

  test(
    'a few writes are not checkpointed at once, many are, without a thread; snapshot save needs none either; hashkv starts the worker, which ends; a few writes are checkpointed within 30 s',
    { timeout: 120_000 },
    async () => {
      const leader = await c.waitForLeader();
      for (let i = 0; i < 20; i++) assert.equal((await etcdctl(c.endpoints(), 'put', `idle/${i}`, `v${i}`)).code, 0);
      const pid = leader.proc?.pid ?? 0;
      // Two checkpoint ticks later: nothing is due yet for 20 writes.
      await sleep(2000);
      const unchanged = kvChanged(leader.dataDir);
      await sleep(1500);
      assert.equal(kvChanged(leader.dataDir), unchanged, '20 writes were checkpointed at once');

      const client = new Etcd3({ hosts: `http://${leader.client}`, dialTimeout: 3000 });
      try {
        for (let i = 0; i < 600; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => client.put(`many/${i + j}`).value('x')));
      } finally {
        client.close();
      }
      await waitFor('600 writes are checkpointed', () => kvChanged(leader.dataDir) !== unchanged, 5_000, 50);
      const lastCheckpoint = Date.now();
      // Counted after the checkpoint, whose fsyncs started libuv's pool. Had it started the
      // store worker instead, hashkv below (within its 10 s) would find it running and
      // start no thread.
      const idle = threads(pid);

      const file = path.join(c.dir, 'after-idle.db');
      const saved = await lifeboat('snapshot', 'save', file, '--endpoints', leader.client);
      assert.equal(saved.code, 0, saved.stderr);
      assert.match(saved.stdout, /revision \d+, 620 keys/);
      assert.equal(threads(pid), idle, 'a snapshot save of a checkpointed store started a thread');

      const hashes = await lifeboat('endpoint', 'hashkv', '--endpoints', c.endpoints().join(','), '-w', 'json');
      assert.equal(hashes.code, 0, hashes.stderr);
      const parsed = JSON.parse(hashes.stdout) as { HashKV: { hash: number } }[];
      assert.equal(parsed.length, 3);
      assert.equal(new Set(parsed.map((h) => h.HashKV.hash)).size, 1, `one hash on every member: ${hashes.stdout}`);
      assert.ok(threads(pid) > idle, 'hashkv ran without the store worker');
      await waitFor('the idle worker ends (10 s without a job)', () => threads(pid) === idle, 30_000, 250);

      const before30 = kvChanged(leader.dataDir);
      assert.equal((await etcdctl(leader.client, 'put', 'idle/after', 'x')).code, 0);
      await waitFor('one write is checkpointed 30 s after the last checkpoint', () => kvChanged(leader.dataDir) !== before30, 45_000, 250);
      assert.ok(Date.now() - lastCheckpoint >= 29_000, 'not before 30 s');
      const get = await etcdctl(leader.client, 'get', 'idle/after', '--print-value-only');
      assert.equal(get.stdout.trim(), 'x');
    },
  );
});
