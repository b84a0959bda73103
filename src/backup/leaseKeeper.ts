// The leases of a replay's scratch member, kept alive while the replay runs: a
// lease that expired there would delete its keys in a revision the source never
// had, and every revision after it would be off by one. Leases are granted with
// their recorded IDs and TTLs; a recorded revoke waits until the lease holds no
// key (the source deleted its keys in a revision of their own, replayed as such),
// so revoking it never writes a revision.
import type { EtcdClient, LeaseKeepAliveStream } from '../client/etcdClient.js';
import { isAlreadyGranted } from './replayErrors.js';

export class LeaseKeeper {
  private readonly ttl = new Map<bigint, number>();
  private readonly revoked = new Set<bigint>();
  private timer: NodeJS.Timeout | undefined;
  private stream: LeaseKeepAliveStream | undefined;

  private constructor(private readonly client: EtcdClient) {}

  /** Starts keeping alive every lease the scratch member already has (those of the full). */
  static async start(client: EtcdClient): Promise<LeaseKeeper> {
    const k = new LeaseKeeper(client);
    k.stream = await client.leaseKeepAliveStream();
    for (const id of await client.leaseLeases()) {
      const t = await client.leaseTimeToLive(id);
      if (t.ttl >= 0) k.ttl.set(id, t.grantedTtl);
    }
    k.refreshAll();
    // Every half second: a lease's shortest TTL etcd grants is above a second.
    k.timer = setInterval(() => k.refreshAll(), 500);
    k.timer.unref();
    return k;
  }

  get count(): number {
    return this.ttl.size;
  }

  private refreshAll(): void {
    if (!this.stream) return;
    for (const id of this.ttl.keys()) this.stream.keepAlive(id);
  }

  /** Throws what ended the keep-alive stream, if it ended. */
  check(): void {
    if (this.stream?.error) throw new Error(`keeping the scratch member's leases alive failed: ${this.stream.error.message}`);
  }

  /** Grants `id` with its recorded TTL; one the scratch already has (from the full) is kept as it is. */
  async grant(id: bigint, ttlSeconds: number): Promise<void> {
    this.revoked.delete(id);
    if (this.ttl.has(id)) return;
    try {
      await this.client.leaseGrant(ttlSeconds, id);
    } catch (e) {
      if (!isAlreadyGranted(e)) throw e;
    }
    this.ttl.set(id, ttlSeconds);
    this.stream?.keepAlive(id);
  }

  /** The source revoked `id` (or it expired there): revoked at the end, once it holds no key. */
  revoke(id: bigint): void {
    if (this.ttl.has(id)) this.revoked.add(id);
  }

  /** Revokes the leases the source revoked whose keys are gone; returns how many, and those still holding keys. */
  async settleRevokes(): Promise<{ revoked: number; holdingKeys: bigint[] }> {
    let revoked = 0;
    const holdingKeys: bigint[] = [];
    for (const id of this.revoked) {
      const t = await this.client.leaseTimeToLive(id, true);
      if (t.ttl < 0) continue;
      if (t.keys.length > 0) {
        holdingKeys.push(id);
        continue;
      }
      await this.client.leaseRevoke(id);
      this.ttl.delete(id);
      revoked++;
    }
    this.revoked.clear();
    return { revoked, holdingKeys };
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.stream?.close();
    this.stream = undefined;
  }
}
