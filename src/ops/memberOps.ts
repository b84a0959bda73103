// Cluster operations over the client, for recovery and the other playbooks: status,
// member list, the leader, wait for health, wait until a learner caught up (through
// Maintenance.Status, so real etcd too), promote, check agreement. Every wait is bounded.
import { clientFor, type ConnectionOptions } from '../client/etcdClient.js';
import { EtcdClientError, isAuthRefusal } from '../client/errors.js';
import type { Member, StatusResult } from '../client/types.js';
import { sleep } from '../common/sleep.js';

type Connection = ConnectionOptions;

/**
 * Retries fn until it returns a value (not undefined) or the deadline passes. A
 * refusal of the credentials ends the wait at once: no retry cures it, and a
 * timeout would hide it.
 */
export async function waitUntil<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined>, everyMs = 250, signal?: AbortSignal): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last = '';
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      if (isAuthRefusal(e)) throw e;
      last = (e as Error).message;
    }
    if (Date.now() >= deadline) throw new Error(`timed out after ${Math.round(timeoutMs / 1000)}s waiting for ${what}${last ? ` (last error: ${last})` : ''}`);
    await sleep(everyMs, signal);
  }
}

export async function statusOf(endpoint: string, conn: Connection): Promise<StatusResult> {
  // Status needs no credentials (etcd checks none), and a learner refuses Authenticate: ask without them.
  const { credentials: _unused, ...open } = conn;
  const c = clientFor([endpoint], open);
  try {
    return await c.status();
  } finally {
    c.close();
  }
}

export async function memberList(endpoints: string[], conn: Connection): Promise<Member[]> {
  const c = clientFor(endpoints, conn);
  try {
    return (await c.memberList()).members;
  } finally {
    c.close();
  }
}

/** The leader's client endpoint and status, found by asking each endpoint. */
export async function findLeader(endpoints: string[], conn: Connection): Promise<{ endpoint: string; status: StatusResult }> {
  for (const ep of endpoints) {
    try {
      const s = await statusOf(ep, conn);
      if (s.leader !== 0n && s.leader === s.header.memberId) return { endpoint: ep, status: s };
      if (s.leader !== 0n) {
        const members = await memberList([ep], conn);
        const lead = members.find((m) => m.id === s.leader);
        if (lead?.clientURLs[0]) return { endpoint: lead.clientURLs[0], status: await statusOf(lead.clientURLs[0], conn) };
      }
    } catch {
      // try the next one
    }
  }
  throw new Error(`no leader found at ${endpoints.join(', ')}`);
}

export async function waitHealthy(
  endpoints: string[],
  conn: Connection,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<{ leader: string; endpoint: string }> {
  return waitUntil(
    `a leader at ${endpoints.join(', ')}`,
    timeoutMs,
    async () => {
      const { endpoint, status } = await findLeader(endpoints, conn);
      const c = clientFor([endpoint], conn);
      try {
        await c.range('health');
      } finally {
        c.close();
      }
      return { leader: status.leader.toString(16), endpoint };
    },
    250,
    signal,
  );
}

export interface CaughtUp {
  learnerApplied: number;
  leaderIndex: number;
  waitedMs: number;
  /** when the learner was first seen caught up (epoch ms) in the final, unbroken stretch */
  caughtUpAt: number;
}

/** The learner itself made no progress for the stall timeout: the caller removes it. */
export class LearnerStalledError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LearnerStalledError';
  }
}

/**
 * Waits until the learner's applied index has reached the leader's raft index
 * (less `lag`) and stayed there for `stabilizationMs`. If the learner makes no
 * progress for `stallMs`, throws LearnerStalledError (the caller removes it and
 * reports). Failing to find the leader is the cluster's trouble, not the
 * learner's: it is retried, and only after `stallMs` without a leader does this
 * throw a plain Error (the learner is kept).
 */
export async function waitCaughtUp(
  learnerEndpoint: string,
  clusterEndpoints: string[],
  conn: Connection,
  o: {
    lag: number;
    stabilizationMs: number;
    stallMs: number;
    onProgress?: (text: string) => void;
    onCaughtUp?: (applied: number, leaderIndex: number) => void;
    signal?: AbortSignal;
  },
): Promise<CaughtUp> {
  const start = Date.now();
  let lastApplied = -1;
  let lastProgressAt = Date.now();
  let leaderSeenAt = Date.now();
  let caughtSince: number | undefined;
  for (;;) {
    let learner: StatusResult | undefined;
    try {
      learner = await statusOf(learnerEndpoint, conn);
    } catch {
      // not serving (yet, or any more): counts as no progress
    }
    let leader: StatusResult | undefined;
    try {
      leader = (await findLeader(clusterEndpoints, conn)).status;
      leaderSeenAt = Date.now();
    } catch (e) {
      // An election or a slow answer: wait for a leader rather than blame the learner.
      caughtSince = undefined;
      lastProgressAt = Date.now();
      if (Date.now() - leaderSeenAt > o.stallMs)
        throw new Error(`${(e as Error).message} for ${Math.round(o.stallMs / 1000)}s; the learner at ${learnerEndpoint} was left in place`);
      o.onProgress?.(`no leader answers (${(e as Error).message}); retrying`);
      await sleep(200, o.signal);
      continue;
    }
    const applied = learner?.raftAppliedIndex ?? -1;
    if (applied > lastApplied) {
      lastApplied = applied;
      lastProgressAt = Date.now();
    }
    const behind = leader.raftIndex - Math.max(applied, 0);
    if (learner && behind <= o.lag) {
      // Being caught up is progress: an idle cluster gives a caught-up learner nothing new to apply.
      lastProgressAt = Date.now();
      if (caughtSince === undefined) {
        caughtSince = Date.now();
        o.onCaughtUp?.(applied, leader.raftIndex);
      }
      const stable = Date.now() - caughtSince;
      o.onProgress?.(
        `caught up (applied ${applied} of ${leader.raftIndex}); stable for ${(stable / 1000).toFixed(1)}s of ${(o.stabilizationMs / 1000).toFixed(1)}s`,
      );
      if (stable >= o.stabilizationMs) return { learnerApplied: applied, leaderIndex: leader.raftIndex, waitedMs: Date.now() - start, caughtUpAt: caughtSince };
    } else {
      caughtSince = undefined;
      o.onProgress?.(`applied ${Math.max(applied, 0)} of ${leader.raftIndex} (${behind} behind)`);
      if (Date.now() - lastProgressAt > o.stallMs) {
        throw new LearnerStalledError(
          `the learner at ${learnerEndpoint} made no progress for ${Math.round(o.stallMs / 1000)}s (applied ${Math.max(applied, 0)}, leader at ${leader.raftIndex})`,
        );
      }
    }
    await sleep(200, o.signal);
  }
}

/** Promotes a learner, retrying while the leader says it is not yet in sync (bounded). */
export async function promoteWhenReady(endpoints: string[], id: bigint, conn: Connection, timeoutMs: number, signal?: AbortSignal): Promise<Member[]> {
  return waitUntil(
    `member ${id.toString(16)} to be promoted`,
    timeoutMs,
    async () => {
      const c = clientFor(endpoints, conn);
      try {
        return (await c.memberPromote(id)).members;
      } catch (e) {
        if (e instanceof EtcdClientError && /in sync with leader|unhealthy cluster/.test(e.message)) return undefined;
        throw e;
      } finally {
        c.close();
      }
    },
    500,
    signal,
  );
}

export interface ClusterCheck {
  voters: number;
  learners: number;
  leader: string;
  revision: number;
  hashes: Record<string, number>;
}

/**
 * Every voter answers, exactly one leader, and HashKV is equal on all members at
 * one revision (the leader's current one).
 */
/**
 * HashKV at `revision`; at the compaction point itself (a recovery's revision bump
 * compacts at the revision it reaches, and etcd refuses a hash there) the current
 * hash, which is the same while the revision has not moved.
 */
async function hashAt(c: ReturnType<typeof clientFor>, revision: number): Promise<number> {
  try {
    return (await c.hashKV(revision)).hash;
  } catch (e) {
    if (!/required revision has been compacted/.test((e as Error).message)) throw e;
    const h = await c.hashKV(0);
    if (h.compactRevision !== revision || h.header.revision !== revision) throw e;
    return h.hash;
  }
}

export async function checkCluster(endpoints: string[], conn: Connection, timeoutMs: number, signal?: AbortSignal): Promise<ClusterCheck> {
  return waitUntil(
    'every member to answer with one leader and equal hashes',
    timeoutMs,
    async () => {
      const members = await memberList(endpoints, conn);
      const voters = members.filter((m) => !m.isLearner);
      const statuses = await Promise.all(members.map((m) => statusOf(m.clientURLs[0] ?? '', conn)));
      const leaders = new Set(statuses.map((s) => s.leader.toString(16)));
      if (leaders.size !== 1 || leaders.has('0')) throw new Error(`members disagree on the leader (${[...leaders].join(', ')})`);
      const { status: leader } = await findLeader(endpoints, conn);
      const revision = leader.header.revision;
      // Every member hashes at once: each scans its whole store, and one after another took the sum of their times.
      // Settled, not raced: a member that fails at once must not leave the others' scans running under the next attempt.
      const settled = await Promise.allSettled(
        members.map(async (m) => {
          const c = clientFor([m.clientURLs[0]], conn);
          try {
            return [m.id.toString(16), await hashAt(c, revision)] as const;
          } finally {
            c.close();
          }
        }),
      );
      const hashes: Record<string, number> = {};
      for (const r of settled) {
        if (r.status === 'rejected') throw r.reason instanceof Error ? r.reason : new Error(String(r.reason));
        hashes[r.value[0]] = r.value[1];
      }
      if (new Set(Object.values(hashes)).size !== 1) throw new Error(`HashKV differs at revision ${revision}: ${JSON.stringify(hashes)}`);
      return { voters: voters.length, learners: members.length - voters.length, leader: [...leaders][0], revision, hashes };
    },
    500,
    signal,
  );
}
