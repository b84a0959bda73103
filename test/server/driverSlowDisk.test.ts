// Where the driver fsyncs a small batch: on the event loop while the disk is fast
// (no thread wake-ups on a put's path), in libuv's pool once an fsync was slow, so a
// slow disk does not stall the loop (heartbeats, reads, requests) for the fsync's length.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RawNode } from '../../src/raft/rawNode.js';
import { StateType, type Entry } from '../../src/raft/types.js';
import { RaftDriver, SLOW_FSYNC_MS } from '../../src/server/driver.js';
import { Metrics } from '../../src/server/metrics.js';
import { options } from '../raft/testNetwork.js';
import { waitFor } from '../support/tools.js';

test('a slow fsync sends the next single-entry batches off the event loop; a fast disk keeps them on it', async () => {
  const raft = new RawNode(options(1n), {
    hardState: { term: 1, vote: 0n, commit: 0 },
    snapshot: { index: 0, term: 1, conf: { voters: [1n], learners: [] } },
    entries: [],
  });
  const fsyncs: ('loop' | 'pool')[] = [];
  let slowDisk = false;
  const store = {
    write: () => {},
    sync: () => {
      fsyncs.push('pool');
      return Promise.resolve();
    },
    syncNow: () => {
      fsyncs.push('loop');
      // A disk slower than SLOW_FSYNC_MS: the loop is held meanwhile.
      const until = performance.now() + (slowDisk ? SLOW_FSYNC_MS + 20 : 0);
      while (performance.now() < until);
    },
  };
  const applied: number[] = [];
  let failed: Error | undefined;
  const hooks = {
    send: () => {},
    applySnapshot: () => {},
    applyEntries: (es: Entry[]) => void applied.push(...es.map((e) => e.index)),
    softState: () => {},
    readStates: () => {},
    dropped: () => {},
    afterAdvance: () => {},
    fatal: (e: Error) => (failed = e),
  };
  const driver = new RaftDriver(raft, store, hooks, new Metrics(), 10);
  driver.start();
  try {
    await waitFor('a leader', () => Promise.resolve(raft.status().state === StateType.Leader), { timeoutMs: 10_000, intervalMs: 5 });
    /** Proposes one entry once nothing is pending, waits for it to apply, and says where its fsync ran. */
    const put = async (): Promise<'loop' | 'pool' | undefined> => {
      const settled = () => Promise.resolve(raft.status().lastIndex > 0 && (applied.at(-1) ?? 0) === raft.status().lastIndex);
      await waitFor('nothing pending', settled, { timeoutMs: 10_000, intervalMs: 5 });
      const before = fsyncs.length;
      driver.with((r) => r.propose(new Uint8Array([1])));
      await waitFor('the entry applied', async () => (await settled()) && fsyncs.length > before, { timeoutMs: 10_000, intervalMs: 5 });
      assert.equal(failed, undefined);
      return fsyncs.slice(before).at(-1);
    };
    assert.equal(await put(), 'loop', 'a fast disk: the batch of one entry is fsynced on the loop');
    slowDisk = true;
    assert.equal(await put(), 'loop', 'still on the loop: no fsync was slow yet');
    slowDisk = false;
    assert.equal(await put(), 'pool', 'after a slow fsync, the next one runs in the pool');
    assert.equal(await put(), 'pool', 'and for a while after');
  } finally {
    await driver.stop();
  }
});
