// The request of log entry i in the KV crash test: a function of i alone, so the
// parent can replay entries 1..applied into a model and compare. Puts and deletes
// over a small key space (overwrites, tombstones), now and then a txn or a compaction.

import { CompareResult, CompareTarget, type KvRequest } from '../../src/kv/types.js';

const key = (n: number) => Buffer.from(`key${n % 97}`);

export function requestAt(i: number): KvRequest {
  if (i % 251 === 0) return { compaction: { revision: Math.floor(i / 2) } };
  if (i % 13 === 0) return { deleteRange: { key: key(i * 7), rangeEnd: key(i * 7 + 3) } };
  if (i % 17 === 0) {
    return {
      txn: {
        compare: [{ key: key(i), target: CompareTarget.Version, result: CompareResult.Greater, version: 1 }],
        success: [{ requestPut: { key: key(i + 1), value: Buffer.from(`txn${i}`) } }],
        failure: [{ requestDeleteRange: { key: key(i + 2) } }],
      },
    };
  }
  return { put: { key: key(i * 31), value: Buffer.from(`value of entry ${i}`) } };
}
