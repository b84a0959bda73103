// Leases are not in the watch stream: the agent lists them (LeaseLeases, then
// LeaseTimeToLive for the granted TTL of each new one) each interval and
// whenever an event names a lease it does not know, and turns the differences
// into grant and revoke records, so a replay can grant them again.
import type { EtcdClient } from '../../client/etcdClient.js';

export interface LeaseGrant {
  id: bigint;
  /** the granted TTL; 0 when the lease was gone before its TTL could be read */
  ttlSeconds: number;
}

export class LeaseTracker {
  private readonly known = new Map<bigint, number>();

  has(id: bigint): boolean {
    return this.known.has(id);
  }

  get size(): number {
    return this.known.size;
  }

  private async ttlOf(client: EtcdClient, id: bigint): Promise<number> {
    try {
      const t = await client.leaseTimeToLive(id);
      return Math.max(0, t.grantedTtl);
    } catch (e) {
      // etcd: "requested lease not found" when it expired in between
      if (/lease not found/.test((e as Error).message)) return 0;
      throw e;
    }
  }

  /** Grants for `ids` not known yet (named by events), now known. */
  async lookup(client: EtcdClient, ids: Iterable<bigint>): Promise<LeaseGrant[]> {
    const out: LeaseGrant[] = [];
    for (const id of new Set(ids)) {
      if (id === 0n || this.known.has(id)) continue;
      const ttlSeconds = await this.ttlOf(client, id);
      this.known.set(id, ttlSeconds);
      out.push({ id, ttlSeconds });
    }
    return out;
  }

  /** List the cluster's leases: grants of the new ones and revocations of those gone. */
  async poll(client: EtcdClient): Promise<{ granted: LeaseGrant[]; revoked: bigint[] }> {
    const live = await client.leaseLeases();
    const granted = await this.lookup(client, live);
    const liveSet = new Set(live);
    const revoked = [...this.known.keys()].filter((id) => !liveSet.has(id));
    for (const id of revoked) this.known.delete(id);
    return { granted, revoked };
  }
}
