// Child process for appliedIndex.test.ts: applies one batch and commits it, then
// dies by SIGKILL in the middle of a later batch, leaving the WAL as a crash leaves
// it. With a commit delay, a whole batch is held (not committed) before that one.
// Usage: node crashApply.js <db path> [commitDelayMs]

import { KvStore } from '../../src/kv/kvStore.js';

const commitDelayMs = Number(process.argv[3] ?? 0);
const kv = KvStore.open(process.argv[2], { commitDelayMs });
const put = (i: number) => ({ put: { key: Buffer.from(`key${i}`), value: Buffer.from(`value${i}`) } });

kv.applyBatch(Array.from({ length: 100 }, (_, i) => ({ index: i + 1, term: 1, request: put(i + 1) })));
kv.commit();
let next = 101;
if (commitDelayMs > 0) {
  kv.applyBatch(Array.from({ length: 20 }, (_, i) => ({ index: next + i, term: 2, request: put(next + i) })));
  next += 20;
}

kv.batch(() => {
  for (let index = next; index <= 200; index++) {
    kv.applyRequest(index, 2, put(index));
    if (index === 150) process.kill(process.pid, 'SIGKILL');
  }
});
