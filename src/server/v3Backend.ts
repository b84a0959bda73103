// The backend the v3 API serves (KV, Maintenance; the Cluster calls are handed to
// clusterApi.ts, Watch to the watch hub, Lease to the lessor): reads are linearizable unless serializable (a
// ReadIndex round first), writes are proposed and answered once applied, and the
// maintenance calls (status, hash, snapshot, alarm, defragment, move-leader) read
// this member's store and Raft state. A client's deadline (grpc-timeout) bounds
// every wait on Raft: a request is not proposed, nor a read asked for, past it.
// Errors thrown are the member's and the store's; src/api/errors.ts turns them
// into what clients see.
import * as grpcErrors from '../api/errors.js';
import { ErrBadLeaderTransferee, ErrDeadlineExceeded, ErrNotLeader, ErrTimeoutLeaderTransfer } from '../common/memberErrors.js';
import type { EtcdBackend, Header, SnapshotToSend, StatusInfo } from '../api/services.js';
import type { LeaseBackend, LeaseTimeToLive } from '../api/leaseService.js';
import type { WatchBackend, WatchSession, WatchSink } from '../api/watchService.js';
import type { AuthInfo, KvStore, ServerRequest } from '../kv/index.js';
import type { Caller } from '../api/caller.js';
import type { AuthApi } from './authApi.js';
import {
  AlarmType,
  type Alarm,
  type CompactionRequest,
  type DeleteRangeRequest,
  type DeleteRangeResponse,
  type KvApplyResult,
  type KvRequest,
  type Member as MemberInfo,
  type PutRequest,
  type PutResponse,
  type RangeRequest,
  type RangeResponse,
  type TxnRequest,
  type TxnResponse,
} from '../kv/types.js';
import type { Raft } from '../raft/raft.js';
import { NONE } from '../raft/types.js';
import { failpointSet } from '../common/failpoint.js';
import type { ClusterApi } from './clusterApi.js';
import type { Leases } from './leases.js';
import { linearizable } from './proposals.js';

/** Failpoint `stale-local-reads`, a planted bug: linearizable reads skip ReadIndex (the fault suite must catch it). */
const STALE_LOCAL_READS = failpointSet('stale-local-reads');

export const SERVER_VERSION = '3.4.23-lifeboat';

export interface V3Host {
  readonly memberId: bigint;
  readonly cfg: { electionMs: number; heartbeatMs: number; maxTxnOps: number };
  kv(): KvStore;
  raft(): Raft;
  clusterId(): bigint;
  isLeader(): boolean;
  /** The leader this member follows (NONE when there is none). */
  leader(): bigint;
  /** Resolves once this member has applied up to the leader's commit index at the call (ReadIndex), unless the client's `deadline` passes first. */
  readIndex(deadline?: number): Promise<void>;
  /** Proposes a KV write on behalf of `who` (checked at apply) unless the client's `deadline` passed; resolves once applied, throws its error. */
  proposeKv(req: KvRequest, who?: AuthInfo, deadline?: number): Promise<KvApplyResult>;
  /** Proposes one of the member's own requests (unless the client's `deadline` passed); resolves once applied. */
  proposeServer(req: ServerRequest, deadline?: number): Promise<unknown>;
  transferLeader(target: bigint): void;
  /** Defragments kv.db off the event loop, holding applies back meanwhile. */
  defragment(): Promise<void>;
  readonly watches: { open(sink: WatchSink): WatchSession };
  readonly leases: Pick<Leases, 'grant' | 'revoke' | 'renew' | 'timeToLive' | 'list'>;
  readonly auth: Pick<AuthApi, 'authInfo' | 'requireAdmin' | 'requireRead' | 'watchRefusal'>;
}

/** A client's request without a token: etcd's empty RequestHeader (refused with "user name is empty" when auth is on). */
const NOBODY: AuthInfo = { username: '', revision: 0 };

export class V3Backend implements EtcdBackend, WatchBackend, LeaseBackend {
  /** The IDs as the decimal text every response header carries (the cluster ID is learned once by a joining member). */
  private readonly memberText: string;
  private cluster = { id: -1n, text: '' };

  constructor(
    private readonly host: V3Host,
    private readonly clusterApi: ClusterApi,
  ) {
    this.memberText = host.memberId.toString();
  }

  header(revision: number): Header {
    const id = this.host.clusterId();
    if (id !== this.cluster.id) this.cluster = { id, text: id.toString() };
    return {
      cluster_id: this.cluster.text,
      member_id: this.memberText,
      revision: String(revision),
      raft_term: String(this.host.raft().currentTerm()),
    };
  }

  currentRevision(): number {
    return this.host.kv().currentRevision();
  }

  isLearner(): boolean {
    return this.host.raft().isLearner(this.host.memberId);
  }

  get maxTxnOps(): number {
    return this.host.cfg.maxTxnOps;
  }

  authInfo(c: Caller): Promise<AuthInfo | undefined> {
    return this.host.auth.authInfo(c);
  }

  requireAdmin(ai: AuthInfo | undefined): void {
    this.host.auth.requireAdmin(ai);
  }

  watchRefusal(c: Caller, key: Uint8Array, rangeEnd: Uint8Array): Error | undefined {
    return this.host.auth.watchRefusal(c, key, rangeEnd);
  }

  async range(r: RangeRequest, ai?: AuthInfo, deadline?: number): Promise<RangeResponse> {
    if (!r.serializable && !STALE_LOCAL_READS) await linearizable(this.host, deadline);
    this.host.auth.requireRead(ai, r.key, r.rangeEnd);
    return this.host.kv().range(r);
  }

  async put(r: PutRequest, ai?: AuthInfo, deadline?: number): Promise<PutResponse> {
    const res = await this.host.proposeKv({ put: r }, ai ?? NOBODY, deadline);
    return (res.response as { put: PutResponse }).put;
  }

  async deleteRange(r: DeleteRangeRequest, ai?: AuthInfo, deadline?: number): Promise<DeleteRangeResponse> {
    const res = await this.host.proposeKv({ deleteRange: r }, ai ?? NOBODY, deadline);
    return (res.response as { deleteRange: DeleteRangeResponse }).deleteRange;
  }

  async txn(r: TxnRequest, ai?: AuthInfo, deadline?: number): Promise<TxnResponse> {
    const res = await this.host.proposeKv({ txn: r }, ai ?? NOBODY, deadline);
    return (res.response as { txn: TxnResponse }).txn;
  }

  async compact(r: CompactionRequest, deadline?: number): Promise<void> {
    await this.host.proposeKv({ compaction: r }, undefined, deadline);
  }

  memberAdd(peerURLs: string[], isLearner: boolean, deadline?: number): Promise<{ member: MemberInfo; members: MemberInfo[] }> {
    return this.clusterApi.memberAdd(peerURLs, isLearner, deadline);
  }

  memberRemove(id: bigint, deadline?: number): Promise<MemberInfo[]> {
    return this.clusterApi.memberRemove(id, deadline);
  }

  memberUpdate(id: bigint, peerURLs: string[], deadline?: number): Promise<MemberInfo[]> {
    return this.clusterApi.memberUpdate(id, peerURLs, deadline);
  }

  memberPromote(id: bigint, deadline?: number): Promise<MemberInfo[]> {
    return this.clusterApi.memberPromote(id, deadline);
  }

  memberList(): Promise<MemberInfo[]> {
    return Promise.resolve(this.host.kv().cluster.members());
  }

  status(): Promise<StatusInfo> {
    const kv = this.host.kv();
    const st = this.host.raft().status();
    const errors: string[] = [];
    if (st.lead === NONE) errors.push(grpcErrors.ErrNoLeader.message);
    for (const a of kv.cluster.alarms()) errors.push(`memberID:${a.memberId} alarm:${AlarmType[a.alarm].toUpperCase()} `);
    return Promise.resolve({
      version: SERVER_VERSION,
      dbSize: kv.dbSize(),
      dbSizeInUse: kv.dbSizeInUse(),
      leader: st.lead,
      raftIndex: st.lastIndex,
      raftTerm: st.term,
      raftAppliedIndex: kv.appliedIndex(),
      errors,
      isLearner: st.conf.learners.includes(this.host.memberId),
    });
  }

  async hashKV(revision: number): Promise<{ hash: number; compactRevision: number; revision: number }> {
    return this.host.kv().hashKvAsync(revision);
  }

  async hash(): Promise<number> {
    return this.host.kv().hashAsync();
  }

  async snapshot(): Promise<SnapshotToSend> {
    // Streamed from the store's file under a held read: no copy is made first.
    const snap = await this.host.kv().openSnapshot();
    return { size: snap.size, chunks: (n) => snap.chunks(n), done: () => snap.release() };
  }

  async moveLeader(target: bigint, clientDeadline = Infinity): Promise<void> {
    if (!this.host.isLeader()) throw ErrNotLeader;
    const st = this.host.raft().status();
    if (!st.conf.voters.includes(target)) throw ErrBadLeaderTransferee;
    if (target === this.host.memberId) return;
    if (clientDeadline <= Date.now()) throw ErrDeadlineExceeded;
    this.host.transferLeader(target);
    const deadline = Math.min(clientDeadline, Date.now() + Math.max(this.host.cfg.electionMs * 3, 3000));
    while (Date.now() < deadline) {
      if (this.host.leader() === target) return;
      await new Promise((r) => setTimeout(r, this.host.cfg.heartbeatMs));
    }
    throw deadline === clientDeadline ? ErrDeadlineExceeded : ErrTimeoutLeaderTransfer;
  }

  async alarm(action: 'GET' | 'ACTIVATE' | 'DEACTIVATE', memberId: bigint, alarm: AlarmType, deadline?: number): Promise<Alarm[]> {
    const kv = this.host.kv();
    if (action === 'GET') return kv.cluster.alarms();
    const target = memberId === 0n ? this.host.memberId : memberId;
    const had = kv.cluster.alarms().filter((a) => a.memberId === target && a.alarm === alarm);
    await this.host.proposeServer({ alarm: { action, memberId: target, alarm } }, deadline);
    // As etcd answers: the alarm raised, or the one cleared (none if it was not active),
    // not every alarm left; `alarm disarm` prints what it disarmed from this.
    return action === 'ACTIVATE' ? [{ memberId: target, alarm }] : had;
  }

  defragment(): Promise<void> {
    return this.host.defragment();
  }

  // ---- Watch, Lease ----------------------------------------------------------

  openWatchSession(sink: WatchSink): WatchSession {
    return this.host.watches.open(sink);
  }

  leaseGrant(ttl: number, id: bigint, deadline?: number): Promise<{ id: bigint; ttl: number }> {
    return this.host.leases.grant(ttl, id, deadline);
  }

  leaseRevoke(id: bigint, ai?: AuthInfo, deadline?: number): Promise<void> {
    return this.host.leases.revoke(id, ai ?? NOBODY, deadline);
  }

  leaseRenew(id: bigint): Promise<number> {
    return this.host.leases.renew(id);
  }

  leaseTimeToLive(id: bigint, keys: boolean, deadline?: number): Promise<LeaseTimeToLive> {
    return this.host.leases.timeToLive(id, keys, deadline);
  }

  leaseLeases(): Promise<bigint[]> {
    return Promise.resolve(this.host.leases.list());
  }
}
