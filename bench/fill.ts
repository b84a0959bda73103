// Filling a store: keys bench/fill/<n> with 256-byte values, written by the load
// generator in Txns of 128 puts (etcd's default --max-txn-ops), 32 at a time.
import { EtcdClient } from '../src/client/etcdClient.js';
import type { TlsOptions } from '../src/client/tls.js';
import { prefixEnd } from '../src/client/keyRange.js';
import { runLoad, type LoadResult } from './loadGenerator.js';

export const FILL_PREFIX = 'bench/fill/';
const FILL_TIME_LIMIT_MS = 20 * 60_000;

/** Counts the fill keys afterwards, so a fill cut short (its time limit, txns that failed for good) is an error, not a smaller store. */
export async function fillKeys(o: {
  endpoints: string[];
  tls?: TlsOptions;
  from: number;
  to: number;
  workers: number;
  valueSize: number;
}): Promise<LoadResult> {
  const r = await runLoad({
    endpoints: o.endpoints,
    tls: o.tls,
    clients: 32,
    workers: o.workers,
    op: { kind: 'fill', keyPrefix: FILL_PREFIX, from: o.from, to: o.to, batch: 128 },
    valueSize: o.valueSize,
    durationMs: FILL_TIME_LIMIT_MS,
  });
  const c = new EtcdClient({ endpoints: [o.endpoints[0]], tls: o.tls, dialTimeoutMs: 3000, commandTimeoutMs: 60_000 });
  try {
    const prefix = Buffer.from(FILL_PREFIX);
    const { count } = await c.range(prefix, { rangeEnd: prefixEnd(prefix), countOnly: true });
    // A txn that timed out may have committed all the same: the count decides.
    if (count < o.to) throw new Error(`filling keys up to ${o.to}: ${count} present, ${r.errors} failed txns (${r.firstError ?? 'ran out of time'})`);
  } finally {
    c.close();
  }
  return r;
}
