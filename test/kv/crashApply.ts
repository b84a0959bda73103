// Child process for appliedIndex.test.ts: applies one batch, then dies by SIGKILL
// in the middle of a second batch, leaving the WAL as a crash leaves it.
// Usage: node crashApply.js <db path>

import { KvStore } from '../../src/kv/kvStore.js';

const kv = KvStore.open(process.argv[2]);
const put = (i: number) => ({ put: { key: Buffer.from(`key${i}`), value: Buffer.from(`value${i}`) } });

kv.applyBatch(Array.from({ length: 100 }, (_, i) => ({ index: i + 1, term: 1, request: put(i + 1) })));

kv.batch(() => {
  for (let index = 101; index <= 200; index++) {
    kv.applyRequest(index, 2, put(index));
    if (index === 150) process.kill(process.pid, 'SIGKILL');
  }
});
