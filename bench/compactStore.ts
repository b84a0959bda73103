// Before the snapshot figures: drop the keys and history the load tests left
// (check perf alone writes hundreds of MB on etcd), so each store's snapshot holds
// the fill keys and little else, on both systems alike.
import { EtcdClient } from '../src/client/etcdClient.js';
import { prefixEnd } from '../src/client/keyRange.js';
import type { TlsOptions } from '../src/client/tls.js';

/** Lifeboat answers a large delete or compaction after check perf with "request timed out": try again a few times. */
async function retried<T>(what: string, fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      if (attempt >= 4) throw new Error(`${what}: ${(e as Error).message}`);
      await new Promise((r) => setTimeout(r, 2000 * attempt));
    }
  }
}

export async function clearAndCompact(endpoints: string[], prefixes: string[], tls?: TlsOptions): Promise<void> {
  const c = new EtcdClient({ endpoints: [endpoints[0]], tls, dialTimeoutMs: 3000, commandTimeoutMs: 120_000 });
  try {
    let revision = 0;
    for (const prefix of prefixes)
      revision = (await retried(`deleting ${prefix}`, () => c.deleteRange(prefix, { rangeEnd: prefixEnd(Buffer.from(prefix)) }))).header.revision;
    // A retry after a timed-out attempt that did apply finds the revision compacted: done.
    let tried = false;
    await retried('compacting', async () => {
      try {
        await c.compact(revision, { physical: true });
      } catch (e) {
        if (!(tried && /required revision has been compacted/.test((e as Error).message))) {
          tried = true;
          throw e;
        }
      }
    });
  } finally {
    c.close();
  }
  for (const e of endpoints) {
    // A member still busy with the compaction (or a defragment an earlier attempt
    // started) answers late, not never.
    const m = new EtcdClient({ endpoints: [e], tls, dialTimeoutMs: 120_000, commandTimeoutMs: 300_000 });
    try {
      await retried(`defragmenting ${e}`, () => m.defragment());
    } finally {
      m.close();
    }
  }
}
