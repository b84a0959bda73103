// Child process of crashKv.test.ts (not a test itself: without arguments it exits).
//
//   node crashKvChild.js <kv.db> <seed>   applies entries until killed, reporting each batch
//
// It opens the store as a member does (autoCheckpoint off, WAL synced by
// makeDurable and checkpointed from a worker) and applies the entries after the
// store's applied index. Report lines on stdout, written synchronously so that a
// line the parent reads was written before the child went on:
//   ready <appliedIndex>
//   B <first> <last>    a batch is starting
//   A <last>            it committed
//   D                   makeDurable / a checkpoint is starting (A follows when it returned)

import { KvStore } from '../../src/kv/kvStore.js';
import { report, seeded } from '../storage/fixtures.js';
import { requestAt } from './crashRequests.js';

/** A child never outlives this, whatever happens to its parent. */
const MAX_MS = 20_000;

async function applyUntilKilled(path: string, seed: number): Promise<void> {
  const rnd = seeded(seed);
  const kv = KvStore.open(path, { autoCheckpoint: false });
  report(`ready ${kv.appliedIndex()}`);
  const start = Date.now();
  while (Date.now() - start < MAX_MS) {
    const r = rnd();
    if (r < 0.9) {
      const first = kv.appliedIndex() + 1;
      const last = first + Math.floor(rnd() * (rnd() < 0.2 ? 400 : 40));
      report(`B ${first} ${last}`);
      kv.batch(() => {
        for (let i = first; i <= last; i++) kv.applyRequest(i, 1, requestAt(i));
      });
      report(`A ${last}`);
    } else if (r < 0.95) {
      report('D');
      kv.makeDurable();
      report(`A ${kv.appliedIndex()}`);
    } else {
      report('D');
      await kv.checkpointAsync();
      report(`A ${kv.appliedIndex()}`);
    }
  }
  kv.close();
}

const [path, seed] = process.argv.slice(2);
if (path) await applyUntilKilled(path, Number(seed ?? 1));
