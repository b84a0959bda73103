// Proposing to Raft and waiting for the apply: each proposal gets a request ID
// (carried in its entry, or in a conf change's context) and waits, bounded by the
// request timeout, until apply.ts hands back its outcome. A proposal made while
// there is no leader waits for one (until its own deadline) instead of failing;
// Raft's other refusals become etcd's errors. A client's deadline (grpc-timeout)
// bounds the wait when it comes first: a request already past it is not
// proposed; one proposed may still apply, once, but its waiter is released at
// the deadline (a later apply finds no waiter). So do membership changes. An
// entry larger than --max-request-bytes is refused before it is proposed (etcd's
// ErrRequestTooLarge).
import {
  confChangeRefused,
  ErrConfChangePending,
  ErrDeadlineExceeded,
  ErrNotLeader,
  ErrRequestTooLarge,
  ErrStopped,
  ErrTimeout,
  proposalRefused,
  type MemberError,
} from '../common/memberErrors.js';
import type { Member as MemberInfo } from '../kv/types.js';
import type { Raft } from '../raft/raft.js';
import { RaftError, type ConfChange } from '../raft/types.js';
import type { ApplyOutcome } from './apply.js';
import { encodeMemberContext } from './membership.js';
import { PendingProposals } from './proposals.js';

export interface ProposerHost {
  /** Runs `fn` on the Raft core and lets the driver process what it produced. */
  withRaft(fn: (r: Raft) => void): void;
  stopping(): boolean;
  readonly metrics: { proposalsPending: number; proposalsFailed: number };
}

export class Proposer {
  /** Proposals waiting for their apply, by request ID. */
  readonly pending: PendingProposals<ApplyOutcome>;
  /** Proposals that found no leader: retried when one is elected, until their deadline. */
  private noLeaderQueue: Array<{ data: Uint8Array; id: bigint; deadline: number }> = [];

  constructor(
    private readonly host: ProposerHost,
    private readonly requestTimeoutMs: number,
    /** --max-request-bytes: the largest entry proposed for a request. */
    private readonly maxRequestBytes = Infinity,
  ) {
    this.pending = new PendingProposals(requestTimeoutMs);
  }

  /**
   * Proposes the entry `encode` makes with the request ID; resolves once it is
   * applied. `deadline`: the client's (Date.now() scale), if it has one.
   */
  propose(encode: (id: bigint) => Uint8Array, deadline = Infinity): Promise<ApplyOutcome> {
    if (this.host.stopping()) return Promise.reject(ErrStopped);
    const metrics = this.host.metrics;
    const wait = this.waitFor(deadline);
    if (!wait) {
      metrics.proposalsFailed++;
      return Promise.reject(ErrDeadlineExceeded);
    }
    const id = this.pending.nextId();
    const data = encode(id);
    if (data.length > this.maxRequestBytes) {
      metrics.proposalsFailed++;
      return Promise.reject(ErrRequestTooLarge);
    }
    const done = this.pending.wait(id, wait.error, wait.ms);
    metrics.proposalsPending++;
    this.proposeData(data, id, wait.until);
    return done
      .finally(() => metrics.proposalsPending--)
      .catch((e) => {
        metrics.proposalsFailed++;
        throw e;
      });
  }

  /**
   * How long a proposal made now waits: until the client's deadline when it comes
   * before the request timeout (undefined: already passed, nothing is proposed),
   * else the request timeout.
   */
  private waitFor(deadline: number): { until: number; ms: number; error: MemberError } | undefined {
    const now = Date.now();
    if (deadline >= now + this.requestTimeoutMs) return { until: now + this.requestTimeoutMs, ms: this.requestTimeoutMs, error: ErrTimeout };
    if (deadline <= now) return undefined;
    return { until: deadline, ms: deadline - now, error: ErrDeadlineExceeded };
  }

  /** A membership change, answered once applied; `deadline` as for propose (a conf change is never queued for a leader). */
  async proposeConf(cc: Omit<ConfChange, 'context'>, member: MemberInfo | undefined, deadline = Infinity): Promise<ApplyOutcome> {
    if (this.host.stopping()) throw ErrStopped;
    const wait = this.waitFor(deadline);
    if (!wait) throw ErrDeadlineExceeded;
    const id = this.pending.nextId();
    const done = this.pending.wait(id, wait.error, wait.ms);
    const context = member
      ? encodeMemberContext(member, id)
      : encodeMemberContext({ id: cc.nodeId, name: '', peerURLs: [], clientURLs: [], isLearner: false }, id);
    try {
      this.host.withRaft((r) => r.proposeConfChange({ ...cc, context }));
    } catch (e) {
      this.pending.reject(id, confError(e));
    }
    return done;
  }

  /** A leader is known again: the proposals that waited for one go now. */
  leaderElected(): void {
    if (this.noLeaderQueue.length === 0) return;
    const queued = this.noLeaderQueue;
    this.noLeaderQueue = [];
    const now = Date.now();
    for (const q of queued) if (q.deadline > now) this.proposeData(q.data, q.id, q.deadline);
  }

  private proposeData(data: Uint8Array, id: bigint, deadline: number): void {
    try {
      this.host.withRaft((r) => r.propose(data));
    } catch (e) {
      if (e instanceof RaftError && e.code === 'ProposalDropped') {
        // No leader yet: wait for one (bounded by the request's own timeout).
        this.noLeaderQueue.push({ data, id, deadline });
        return;
      }
      this.pending.reject(id, e instanceof RaftError ? proposalRefused(e.message) : (e as Error));
    }
  }
}

function confError(e: unknown): Error {
  if (e instanceof RaftError) {
    if (e.code === 'ConfChangePending') return ErrConfChangePending;
    if (e.code === 'NotLeader') return ErrNotLeader;
    return confChangeRefused(e.message);
  }
  return e as Error;
}
