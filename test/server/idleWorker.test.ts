// A member's store worker (checkpoints, hashes, snapshots: src/kv/readJob.ts)
// ends when the member is idle and starts again at the next job: snapshot save
// and hashkv through the CLI work after it ended, and a write is checkpointed by
// a new one. The held-read rule (not ended while a streamed snapshot is held)
// is checked against the store in test/kv/readJob.test.ts.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { LifeboatCluster, etcdctl, lifeboat, waitFor } from '../support/lifeboatCluster.js';

/** Threads of a process now (a running store worker is one or more of them). */
const threads = (pid: number): number => Number(/^Threads:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);

describe('an idle member ends its store worker', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('idle-worker', 3);
  });
  after(async () => c?.stopAll());

  test('snapshot save and hashkv work after the worker of an idle member ended, and the next write starts one', { timeout: 90_000 }, async () => {
    const leader = await c.waitForLeader();
    for (let i = 0; i < 20; i++) assert.equal((await etcdctl(c.endpoints(), 'put', `idle/${i}`, `v${i}`)).code, 0);
    const pid = leader.proc?.pid ?? 0;
    // A checkpoint runs within a second of the writes: then the worker is up.
    await sleep(2000);
    const busy = threads(pid);
    const idle = await waitFor('the idle worker ends (10 s without a job)', () => threads(pid) < busy && threads(pid), 30_000, 250);

    const file = path.join(c.dir, 'after-idle.db');
    const saved = await lifeboat('snapshot', 'save', file, '--endpoints', leader.client);
    assert.equal(saved.code, 0, saved.stderr);
    assert.match(saved.stdout, /revision \d+, 20 keys/);

    const hashes = await lifeboat('endpoint', 'hashkv', '--endpoints', c.endpoints().join(','), '-w', 'json');
    assert.equal(hashes.code, 0, hashes.stderr);
    const parsed = JSON.parse(hashes.stdout) as { HashKV: { hash: number } }[];
    assert.equal(parsed.length, 3);
    assert.equal(new Set(parsed.map((h) => h.HashKV.hash)).size, 1, `one hash on every member: ${hashes.stdout}`);

    assert.equal((await etcdctl(leader.client, 'put', 'idle/after', 'x')).code, 0);
    await waitFor('a write starts a worker again', () => threads(pid) > idle);
    const get = await etcdctl(leader.client, 'get', 'idle/after', '--print-value-only');
    assert.equal(get.stdout.trim(), 'x');
  });
});
