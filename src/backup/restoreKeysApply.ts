// Applying a restore-keys plan to the live cluster: each key written in a Txn
// guarded by the mod revision the plan saw (0: absent), batched; a batch whose
// guard fails is retried key by key, so a key changed since the plan is refused
// (counted, never overwritten) and the rest still go in. Keys that had a lease
// get a fresh one with the recorded TTL, one per lease of the backup.
import type { EtcdClient } from '../client/etcdClient.js';
import type { TxnCompare, TxnOp } from '../client/types.js';
import type { PlannedKey, RestoreKeysPlan } from './restoreKeysPlan.js';

/** At most this many keys per Txn (etcd's default --max-txn-ops), and about this many bytes. */
const BATCH_KEYS = 128;
const BATCH_BYTES = 1024 * 1024;

export interface ApplyCounts {
  restored: number;
  overwritten: number;
  deleted: number;
  /** same value, or newer and kept */
  skipped: number;
  /** changed since the plan: left as they are */
  refused: number;
  refusedKeys: string[];
  leasesGranted: number;
}

const WRITES = new Set(['restore', 'overwrite', 'delete']);

export async function applyPlan(client: EtcdClient, plan: RestoreKeysPlan, onProgress?: (line: string) => void): Promise<ApplyCounts> {
  const counts: ApplyCounts = { restored: 0, overwritten: 0, deleted: 0, skipped: 0, refused: 0, refusedKeys: [], leasesGranted: 0 };
  const todo = plan.keys.filter((k) => WRITES.has(k.action));
  counts.skipped = plan.keys.length - todo.length;
  const leases = new Map<string, bigint>();
  for (const k of todo) {
    if (!k.lease || leases.has(k.lease.id)) continue;
    leases.set(k.lease.id, (await client.leaseGrant(k.lease.ttl)).id);
    counts.leasesGranted++;
  }
  const guard = (k: PlannedKey): TxnCompare => ({ key: Buffer.from(k.key, 'base64'), target: 'MOD', result: 'EQUAL', value: k.liveModRevision });
  const op = (k: PlannedKey): TxnOp =>
    k.action === 'delete'
      ? { deleteRange: { key: Buffer.from(k.key, 'base64') } }
      : { put: { key: Buffer.from(k.key, 'base64'), value: Buffer.from(k.value ?? '', 'base64'), ...(k.lease ? { lease: leases.get(k.lease.id) } : {}) } };
  const done = (k: PlannedKey) => {
    if (k.action === 'restore') counts.restored++;
    else if (k.action === 'overwrite') counts.overwritten++;
    else counts.deleted++;
  };
  let i = 0;
  while (i < todo.length) {
    const batch: PlannedKey[] = [];
    let bytes = 0;
    while (i < todo.length && batch.length < BATCH_KEYS && (batch.length === 0 || bytes < BATCH_BYTES)) {
      bytes += todo[i].key.length + (todo[i].value?.length ?? 0);
      batch.push(todo[i++]);
    }
    const r = await client.txn({ compare: batch.map(guard), success: batch.map(op) });
    if (r.succeeded) {
      batch.forEach(done);
      continue;
    }
    // Someone changed a key since the plan: find which, one by one.
    for (const k of batch) {
      const one = await client.txn({ compare: [guard(k)], success: [op(k)] });
      if (one.succeeded) done(k);
      else {
        counts.refused++;
        counts.refusedKeys.push(Buffer.from(k.key, 'base64').toString('utf8'));
      }
    }
    onProgress?.(`${i} of ${todo.length} keys written`);
  }
  return counts;
}
