// Writes to the destination in transactions no larger than etcd accepts by
// default (--max-txn-ops 128, requests under 1.5 MiB), so a real etcd takes them
// as readily as a Lifeboat member. Puts and deletes are idempotent: a batch
// written twice after an interruption leaves the same keys.
import type { EtcdClient } from '../client/etcdClient.js';
import type { TxnOp } from '../client/types.js';

export type DestOp = { put: { key: Buffer; value: Buffer } } | { delete: { key: Buffer } };

const MAX_OPS = 128;
const MAX_BYTES = 1024 * 1024;

export async function writeOps(dst: EtcdClient, ops: readonly DestOp[]): Promise<void> {
  let batch: TxnOp[] = [];
  let bytes = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    await dst.txn({ success: batch });
    batch = [];
    bytes = 0;
  };
  for (const op of ops) {
    const size = 'put' in op ? op.put.key.length + op.put.value.length : op.delete.key.length;
    if (batch.length >= MAX_OPS || (batch.length > 0 && bytes + size > MAX_BYTES)) await flush();
    batch.push('put' in op ? { put: { key: op.put.key, value: op.put.value } } : { deleteRange: { key: op.delete.key } });
    bytes += size;
  }
  await flush();
}
