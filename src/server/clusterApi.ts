// etcd's Cluster API on this member: member add, remove, update and promote.
// A change runs on the leader (a follower forwards it there, a member without a
// leader refuses it), is checked against the membership rules (membership.ts;
// with --strict-reconfig-check also against the peers connected for a while), a
// learner is promoted only once in sync with the leader, and the change is
// proposed as a Raft conf change and answered once applied. A client's deadline
// (grpc-timeout) goes with a forwarded change as the time left (members' clocks
// differ): the leader does not propose it past that, nor waits longer.
import { EtcdError } from '../api/errors.js';
import { ErrDeadlineExceeded, ErrLearnerNotReady, ErrMemberNotFound, ErrNoLeader, ErrUnhealthy, type MemberError } from '../common/memberErrors.js';
import type { KvStore } from '../kv/index.js';
import type { Member as MemberInfo } from '../kv/types.js';
import type { Raft } from '../raft/raft.js';
import { NONE, type ConfChange } from '../raft/types.js';
import type { ForwardReply } from '../transport/peerTransport.js';
import type { ApplyOutcome } from './apply.js';
import type { Logger } from './logger.js';
import { formatId } from '../common/ids.js';
import { runtimeMemberId } from '../storage/identity.js';
import { checkAdd, checkPromote, checkUpdate, strictAddCheck, strictRemoveCheck } from './membership.js';

/** Peers count as connected for the strict reconfiguration check after this long. */
const HEALTH_INTERVAL_MS = 5000;
/** A learner may be promoted when its match index is within this fraction of the leader's. */
const LEARNER_READY = 0.9;

export interface ClusterHost {
  readonly memberId: bigint;
  readonly cfg: { strictReconfigCheck: boolean; maxLearners: number };
  readonly requestTimeoutMs: number;
  readonly log: Logger;
  kv(): KvStore;
  raft(): Raft;
  isLeader(): boolean;
  /** The leader this member follows (NONE when there is none). */
  leader(): bigint;
  /** Calls `method` on member `to` (its PeerHost.forward). */
  forward(to: bigint, method: string, json: string, timeoutMs: number): Promise<ForwardReply>;
  /** Since when the peer transport has been talking to `id` without a break (Date.now()), if it is. */
  activeSince(id: bigint): number | undefined;
  /** Proposes a conf change carrying `member` unless the client's `deadline` passed; resolves once applied. */
  proposeConf(cc: Omit<ConfChange, 'context'>, member: MemberInfo | undefined, deadline?: number): Promise<ApplyOutcome>;
}

/** bigints travel between members as "0x…" strings. */
export const bigintToJson = (_k: string, v: unknown): unknown => (typeof v === 'bigint' ? `0x${formatId(v)}` : v);
export const bigintFromJson = (_k: string, v: unknown): unknown => (typeof v === 'string' && /^0x[0-9a-f]+$/.test(v) ? BigInt(v) : v);

export class ClusterApi {
  constructor(private readonly host: ClusterHost) {}

  /** Membership changes run on the leader; a follower hands them over, with the milliseconds its client has left (`leftMs`). */
  private async onLeader<T>(method: string, args: Record<string, unknown>, deadline: number, local: () => Promise<T>): Promise<T> {
    const h = this.host;
    if (h.isLeader()) return local();
    // Without a leader there is no quorum: a membership change cannot be made safely.
    if (h.leader() === NONE) {
      h.log.warn({ change: method }, 'refused a membership change: no leader');
      throw h.cfg.strictReconfigCheck ? ErrUnhealthy : ErrNoLeader;
    }
    const leftMs = deadline - Date.now();
    if (leftMs <= 0) throw ErrDeadlineExceeded;
    const timeoutMs = Math.min(h.requestTimeoutMs, leftMs);
    const reply = await h.forward(h.leader(), method, JSON.stringify(Number.isFinite(leftMs) ? { ...args, leftMs } : args, bigintToJson), timeoutMs);
    if (reply.error_message) throw new EtcdError(reply.error_code, reply.error_message);
    return JSON.parse(reply.json, bigintFromJson) as T;
  }

  private connected = (id: bigint): boolean => {
    const since = this.host.activeSince(id);
    return since !== undefined && Date.now() - since >= HEALTH_INTERVAL_MS;
  };

  /** An operator retrying "unhealthy cluster" can read in the leader's log which voters it waits for. */
  private refused(change: string, err: MemberError, members: MemberInfo[]): MemberError {
    const waiting = members.filter((m) => !m.isLearner && m.id !== this.host.memberId && !this.connected(m.id)).map((m) => formatId(m.id));
    this.host.log.warn({ change, error: err.message, notConnectedFor5s: waiting }, 'refused a membership change');
    return err;
  }

  async memberAdd(peerURLs: string[], isLearner: boolean, deadline = Infinity): Promise<{ member: MemberInfo; members: MemberInfo[] }> {
    return this.onLeader('MemberAdd', { peerURLs, isLearner }, deadline, async () => {
      const h = this.host;
      const members = h.kv().cluster.members();
      const id = runtimeMemberId(peerURLs, Date.now() / 1000);
      const bad = checkAdd(members, peerURLs, id, isLearner, h.cfg.maxLearners);
      if (bad) throw bad;
      if (h.cfg.strictReconfigCheck) {
        const unsafe = strictAddCheck(members, !isLearner, this.connected, h.memberId);
        if (unsafe) throw this.refused('add', unsafe, members);
      }
      const member: MemberInfo = { id, name: '', peerURLs, clientURLs: [], isLearner };
      const out = await h.proposeConf({ type: isLearner ? 'addLearner' : 'addVoter', nodeId: id }, member, deadline);
      return { member, members: out.members ?? [] };
    });
  }

  async memberRemove(id: bigint, deadline = Infinity): Promise<MemberInfo[]> {
    return this.onLeader('MemberRemove', { id }, deadline, async () => {
      const h = this.host;
      const members = h.kv().cluster.members();
      if (!members.some((m) => m.id === id)) throw ErrMemberNotFound;
      if (h.cfg.strictReconfigCheck) {
        const unsafe = strictRemoveCheck(members, id, this.connected, h.memberId);
        if (unsafe) throw this.refused('remove', unsafe, members);
      }
      const out = await h.proposeConf({ type: 'remove', nodeId: id }, undefined, deadline);
      return out.members ?? [];
    });
  }

  async memberUpdate(id: bigint, peerURLs: string[], deadline = Infinity): Promise<MemberInfo[]> {
    return this.onLeader('MemberUpdate', { id, peerURLs }, deadline, async () => {
      const members = this.host.kv().cluster.members();
      const bad = checkUpdate(members, id, peerURLs);
      if (bad) throw bad;
      const m = members.find((x) => x.id === id)!;
      const out = await this.host.proposeConf({ type: 'update', nodeId: id }, { ...m, peerURLs }, deadline);
      return out.members ?? [];
    });
  }

  async memberPromote(id: bigint, deadline = Infinity): Promise<MemberInfo[]> {
    return this.onLeader('MemberPromote', { id }, deadline, async () => {
      const h = this.host;
      const members = h.kv().cluster.members();
      const bad = checkPromote(members, id);
      if (bad) throw bad;
      const st = h.raft().status();
      const learnerMatch = st.progress.get(id)?.match ?? 0;
      const leaderMatch = st.progress.get(h.memberId)?.match ?? st.lastIndex;
      if (learnerMatch < leaderMatch * LEARNER_READY) throw ErrLearnerNotReady;
      if (h.cfg.strictReconfigCheck) {
        const unsafe = strictAddCheck(members, true, this.connected, h.memberId);
        if (unsafe) throw this.refused('promote', unsafe, members);
      }
      const out = await h.proposeConf({ type: 'promote', nodeId: id }, undefined, deadline);
      return out.members ?? [];
    });
  }
}
