// Leases (etcd's lessor). A lease's record (ID, TTL) is replicated: grants and
// revocations are Raft entries, applied on every member in the same transaction
// as the deletion of the lease's keys (one revision). Its deadline is not: like
// etcd, only the leader keeps one, in memory, on the monotonic clock.
//
// - The leader renews (KeepAlive) and answers TimeToLive; a follower forwards both
//   to the leader over the peer Forward RPC, retrying across a leader change until
//   the request's deadline (the client's, when it comes first). A grant or a
//   revocation is not proposed past its client's deadline.
// - When a deadline passes, the leader proposes the lease's revocation; the keys go
//   when that entry is applied, on every member at the same revision. Never before:
//   a follower never expires anything.
// - A new leader gives every lease a fresh full TTL plus one election timeout
//   (etcd's Promote), so a leader change can extend a lease but never end it early.
//   Lifeboat does not checkpoint remaining TTLs (etcd 3.4 leaves that off by default).
// - A leader answers only once it has applied an entry of its own term, so it never
//   calls a lease unknown that the previous leader granted.
import { randomBytes } from 'node:crypto';
import * as grpcErrors from '../api/errors.js';
import { EtcdError, toEtcdError } from '../api/errors.js';
import { GrpcCode } from '../net/grpcCode.js';
import {
  ErrDeadlineExceeded,
  ErrLeaseExist,
  ErrLeaseTTLTooLarge,
  ErrNoLeader,
  ErrNotLeader,
  ErrStopped,
  ErrTimeout,
  type MemberError,
} from '../common/memberErrors.js';
import { ErrLeaseNotFound, type KvError } from '../kv/errors.js';
import type { LeaseTimeToLive } from '../api/leaseService.js';
import { formatIdPadded } from '../common/ids.js';
import type { AuthInfo, KvStore, KvWriter } from '../kv/index.js';
import type { ForwardReply } from '../transport/peerTransport.js';
import type { Logger } from './logger.js';
import { monotonicMs } from '../common/clock.js';
import { sleep } from '../common/sleep.js';

/** etcd's MaxLeaseTTL (seconds). */
export const MAX_LEASE_TTL = 9_000_000_000;
/** The leader checks deadlines this often (etcd: every 500 ms). */
const EXPIRE_CHECK_MS = 500;
/** Revocations proposed per check (etcd revokes at most 1000 leases a second). */
const MAX_REVOKES_PER_CHECK = 500;

/** etcd's minimum lease TTL: 1.5 election timeouts, rounded up to whole seconds. */
export function minLeaseTtl(electionMs: number): number {
  return Math.max(1, Math.ceil((1.5 * electionMs) / 1000));
}

/** Lease IDs as etcdctl prints them (%016x). */
export function leaseHex(id: bigint): string {
  return formatIdPadded(BigInt.asUintN(64, id));
}

export interface LeaseHost {
  readonly log: Logger;
  kv(): KvStore;
  isLeader(): boolean;
  /** Whether a leader is known (this member or another). */
  hasLeader(): boolean;
  /** The leader has applied an entry of its own term: its lease records are current. */
  leaderCaughtUp(): boolean;
  /** Proposes unless the client's `deadline` (Date.now() scale) passed; resolves once applied. */
  proposeLease(
    req: { leaseGrant: { id: bigint; ttl: number } } | { leaseRevoke: { id: bigint } },
    who?: AuthInfo,
    deadline?: number,
  ): Promise<{ error?: Error }>;
  /** Calls `method` on the current leader (PeerHost.forward there). */
  forwardToLeader(method: string, json: string, timeoutMs: number): Promise<ForwardReply>;
  stopping(): boolean;
}

export interface LeaseOptions {
  electionMs: number;
  requestTimeoutMs: number;
}

export class Leases {
  /** Leader only: lease ID → deadline (monotonicMs() ms). */
  private readonly deadlines = new Map<bigint, number>();
  /** Expired leases whose revocation was proposed, and when. */
  private readonly revoking = new Map<bigint, number>();
  private primary = false;
  private timer: NodeJS.Timeout | undefined;
  readonly minTtl: number;
  granted = 0;
  revoked = 0;
  expired = 0;

  constructor(
    private readonly host: LeaseHost,
    private readonly opts: LeaseOptions,
  ) {
    this.minTtl = minLeaseTtl(opts.electionMs);
  }

  start(): void {
    this.timer = setInterval(() => this.revokeExpired(), EXPIRE_CHECK_MS);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.primary = false;
    this.deadlines.clear();
  }

  // ---- leadership ----------------------------------------------------------------

  /** This member became leader: every lease gets its full TTL again, plus an election timeout. */
  promote(): void {
    this.primary = true;
    this.deadlines.clear();
    this.revoking.clear();
    const now = monotonicMs();
    const leases = this.host.kv().cluster.leases();
    for (const l of leases) this.deadlines.set(l.id, now + l.ttl * 1000 + this.opts.electionMs);
    if (leases.length > 0) this.host.log.info({ leases: leases.length, extendMs: this.opts.electionMs }, 'leases renewed for the new leader');
  }

  /** Leadership lost: deadlines are the next leader's business. */
  demote(): void {
    this.primary = false;
    this.deadlines.clear();
    this.revoking.clear();
  }

  /** The store was replaced (snapshot from the leader): rebuild what depends on it. */
  storeReplaced(): void {
    if (this.primary) this.promote();
  }

  // ---- apply (inside the entry's transaction; identical on every member) -----------

  applyGrant(w: KvWriter, id: bigint, ttl: number): MemberError | KvError | undefined {
    if (id === 0n) return ErrLeaseNotFound;
    if (ttl > MAX_LEASE_TTL) return ErrLeaseTTLTooLarge;
    if (w.cluster.lease(id)) return ErrLeaseExist;
    w.cluster.putLease({ id, ttl });
    return undefined;
  }

  applyRevoke(w: KvWriter, id: bigint): KvError | undefined {
    return w.revokeLease(id).found ? undefined : ErrLeaseNotFound;
  }

  /** After the grant committed. */
  afterGrant(id: bigint, ttl: number): void {
    this.granted++;
    if (this.primary) this.deadlines.set(id, monotonicMs() + ttl * 1000);
  }

  /** After the revocation committed (`found` false: the lease was already gone). */
  afterRevoke(id: bigint, found: boolean): void {
    if (found) this.revoked++;
    this.deadlines.delete(id);
    this.revoking.delete(id);
  }

  // ---- client API ----------------------------------------------------------------

  async grant(ttl: number, id: bigint, deadline?: number): Promise<{ id: bigint; ttl: number }> {
    if (ttl > MAX_LEASE_TTL) throw ErrLeaseTTLTooLarge;
    const granted = Math.max(ttl, this.minTtl);
    // As etcd: no ID given, the member picks a positive int64.
    while (id === 0n) id = randomBytes(8).readBigUInt64BE() & 0x7fff_ffff_ffff_ffffn;
    const out = await this.host.proposeLease({ leaseGrant: { id, ttl: granted } }, undefined, deadline);
    if (out.error) throw out.error;
    return { id, ttl: granted };
  }

  /** `who`: the client asking (its entry carries it, checked at apply); none for the leader's own expiry. */
  async revoke(id: bigint, who?: AuthInfo, deadline?: number): Promise<void> {
    const out = await this.host.proposeLease({ leaseRevoke: { id } }, who, deadline);
    if (out.error) throw out.error;
  }

  list(): bigint[] {
    return this.host
      .kv()
      .cluster.leases()
      .map((l) => l.id);
  }

  /** KeepAlive: the TTL after renewal, 0 when the lease is gone (expired or revoked). */
  renew(id: bigint): Promise<number> {
    return this.onLeader(
      'LeaseRenew',
      { id: id.toString() },
      () => this.renewHere(id),
      (json) => JSON.parse(json) as number,
    );
  }

  timeToLive(id: bigint, keys: boolean, deadline?: number): Promise<LeaseTimeToLive> {
    return this.onLeader(
      'LeaseTimeToLive',
      { id: id.toString(), keys },
      () => this.timeToLiveHere(id, keys),
      (json) => {
        const r = JSON.parse(json) as { ttl: number; grantedTtl: number; keys: string[] };
        return { ttl: r.ttl, grantedTtl: r.grantedTtl, keys: r.keys.map((k) => Buffer.from(k, 'hex')) };
      },
      deadline,
    );
  }

  /** A method a follower forwarded (PeerHost.forward on the leader); undefined: not ours. */
  async forwarded(method: string, args: Record<string, unknown>): Promise<unknown> {
    if (method === 'LeaseRenew') return this.renewHere(BigInt(args.id as string));
    if (method === 'LeaseTimeToLive') {
      const r = await this.timeToLiveHere(BigInt(args.id as string), !!args.keys);
      return { ttl: r.ttl, grantedTtl: r.grantedTtl, keys: r.keys.map((k) => k.toString('hex')) };
    }
    return undefined;
  }

  // ---- leader side -----------------------------------------------------------------

  private async renewHere(id: bigint): Promise<number> {
    await this.waitCaughtUp();
    const lease = this.host.kv().cluster.lease(id);
    if (!lease) return 0;
    const now = monotonicMs();
    const deadline = this.deadlines.get(id);
    // Expired, its revocation on the way: etcd answers "not found" too.
    if (deadline !== undefined && deadline <= now) return 0;
    this.deadlines.set(id, now + lease.ttl * 1000);
    return lease.ttl;
  }

  private async timeToLiveHere(id: bigint, keys: boolean): Promise<LeaseTimeToLive> {
    await this.waitCaughtUp();
    const kv = this.host.kv();
    const lease = kv.cluster.lease(id);
    if (!lease) return { ttl: -1, grantedTtl: 0, keys: [] };
    const deadline = this.deadlines.get(id) ?? monotonicMs() + lease.ttl * 1000;
    const remaining = Math.max(0, Math.trunc((deadline - monotonicMs()) / 1000));
    return { ttl: remaining, grantedTtl: lease.ttl, keys: keys ? kv.leaseKeys(id) : [] };
  }

  /** Until this leader applied an entry of its term; throws ErrNotLeader if it stops leading. */
  private async waitCaughtUp(): Promise<void> {
    const deadline = Date.now() + this.opts.requestTimeoutMs;
    for (;;) {
      if (!this.host.isLeader() || !this.primary) throw ErrNotLeader;
      if (this.host.leaderCaughtUp()) return;
      if (Date.now() >= deadline) throw ErrTimeout;
      await sleep(10);
    }
  }

  /**
   * Runs `local` if this member leads, else forwards to the leader; across a leader
   * change (no leader, "not leader", an unreachable one) it tries again until the
   * request's deadline, as etcd's LeaseRenew does: the request timeout, or the
   * client's deadline when it comes first (then ErrDeadlineExceeded).
   */
  private async onLeader<T>(
    method: string,
    args: Record<string, unknown>,
    local: () => Promise<T>,
    decode: (json: string) => T,
    clientDeadline = Infinity,
  ): Promise<T> {
    const deadline = Math.min(clientDeadline, Date.now() + this.opts.requestTimeoutMs);
    let last: Error = ErrNoLeader;
    while (Date.now() < deadline) {
      if (this.host.stopping()) throw ErrStopped;
      try {
        if (this.host.isLeader()) return await local();
        if (this.host.hasLeader()) {
          const reply = await this.host.forwardToLeader(method, JSON.stringify(args), Math.max(100, deadline - Date.now()));
          if (!reply.error_message) return decode(reply.json);
          throw new EtcdError(reply.error_code, reply.error_message);
        }
      } catch (e) {
        // Errors of this member and the leader's alike, by what clients would see.
        const etcd = toEtcdError(e);
        if (etcd && !retryable(etcd)) throw e;
        last = e as Error;
      }
      await sleep(Math.min(50, Math.max(0, deadline - Date.now())));
    }
    if (deadline === clientDeadline) throw ErrDeadlineExceeded;
    throw toEtcdError(last)?.is(grpcErrors.ErrNoLeader) ? ErrNoLeader : ErrTimeout;
  }

  /** Leader only: propose the revocation of every lease past its deadline (bounded per check). */
  private revokeExpired(): void {
    if (!this.primary || !this.host.isLeader() || !this.host.leaderCaughtUp() || this.host.stopping()) return;
    const now = monotonicMs();
    let n = 0;
    for (const [id, deadline] of this.deadlines) {
      if (deadline > now) continue;
      const since = this.revoking.get(id);
      if (since !== undefined && now - since < this.opts.requestTimeoutMs) continue;
      this.revoking.set(id, now);
      this.expired++;
      this.host.log.info({ lease: leaseHex(id) }, 'revoking expired lease');
      // A failed proposal (leadership lost, timeout) is tried again after requestTimeoutMs.
      this.host.proposeLease({ leaseRevoke: { id } }).catch(() => undefined);
      if (++n >= MAX_REVOKES_PER_CHECK) break;
    }
  }
}

function retryable(e: EtcdError): boolean {
  return [grpcErrors.ErrNotLeader, grpcErrors.ErrNoLeader, grpcErrors.ErrTimeout].some((x) => x.is(e)) || e.code === GrpcCode.Unavailable;
}
