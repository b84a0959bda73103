// The member as the peer transport sees it (TransportHost): who this member and
// its cluster are (identity replies, removed and superseded peers, which end this
// member with a marker in its data dir), messages delivered into the Raft core,
// requests other members forward to this leader, and snapshots: an outgoing one
// is saved from kv.db to a file the transport streams, an incoming one is handed
// to Raft as a reference to the durable file it arrived in.
import fs from 'node:fs';
import { toEtcdError } from '../api/errors.js';
import { GrpcCode } from '../net/grpcCode.js';
import { ErrNotLeader } from '../common/memberErrors.js';
import type { KvStore } from '../kv/index.js';
import type { AlarmType } from '../kv/types.js';
import type { Raft } from '../raft/raft.js';
import { MessageType, type Message } from '../raft/types.js';
import {
  REFUSED_MISMATCH,
  REFUSED_REMOVED,
  REFUSED_SUPERSEDED,
  type ForwardReply,
  type IdentityReply,
  type OutgoingSnapshot,
  type TransportHost,
} from '../transport/peerTransport.js';
import { bigintFromJson, bigintToJson, type ClusterApi } from './clusterApi.js';
import { formatId } from '../common/ids.js';
import type { Logger } from './logger.js';
import { writeMarker } from '../storage/markers.js';
import { incomingSnapshotFile, snapshotRef } from './receivedSnapshots.js';
import { monotonicMs } from '../common/clock.js';

/** What a leader answers for the forwarded calls besides the Cluster API. */
export interface ForwardTargets {
  cluster: ClusterApi;
  alarm(action: 'GET' | 'ACTIVATE' | 'DEACTIVATE', memberId: bigint, alarm: AlarmType): Promise<unknown>;
  lease(method: string, args: Record<string, unknown>): Promise<unknown>;
}

export interface PeerHostDeps {
  readonly memberId: bigint;
  readonly dataDir: string;
  readonly log: Logger;
  kv(): KvStore;
  raft(): Raft;
  /** Runs `fn` on the Raft core and lets the driver process what it produced. */
  withRaft(fn: (r: Raft) => void): void;
  isLeader(): boolean;
  stopping(): boolean;
  /** Heartbeat round trips, in seconds. */
  observeRtt(seconds: number): void;
  forwardTargets(): ForwardTargets;
  fatal(e: Error): void;
  /** The member must stop for good with exit code `code`. */
  exit(code: number, message: string): void;
}

export class PeerHost implements TransportHost {
  readonly memberId: bigint;
  private readonly heartbeatSentAt = new Map<bigint, number>();
  private lastMismatchLog = 0;

  constructor(private readonly d: PeerHostDeps) {
    this.memberId = d.memberId;
  }

  /** Messages on their way out: heartbeats are timed until their response. */
  sending(messages: Message[]): void {
    // The clock is read only for a batch with a heartbeat: most batches (a put's appends) have none.
    let now: number | undefined;
    for (const m of messages) if (m.type === MessageType.Heartbeat) this.heartbeatSentAt.set(m.to, (now ??= monotonicMs()));
  }

  clusterId(): bigint {
    return this.d.kv().cluster.clusterId() ?? 0n;
  }

  ancestors(): bigint[] {
    const p = this.d.kv().cluster.parentClusterId();
    return p === undefined || p === 0n ? [] : [p];
  }

  isRemoved(id: bigint): boolean {
    return this.d.kv().cluster.isRemovedMember(id);
  }

  deliver(m: Message): void {
    if (this.d.stopping()) return;
    if (m.type === MessageType.HeartbeatResp) {
      // Heartbeat out, response back: the peer round trip, including its persist cycle.
      const sent = this.heartbeatSentAt.get(m.from);
      if (sent !== undefined) this.d.observeRtt((monotonicMs() - sent) / 1000);
      this.heartbeatSentAt.delete(m.from);
    }
    try {
      this.d.withRaft((r) => r.step(m));
    } catch (e) {
      this.d.fatal(e as Error);
    }
  }

  identity(asker: { clusterId: bigint; from: bigint }): IdentityReply {
    const kv = this.d.kv();
    const members = kv.cluster.members();
    return {
      cluster_id: this.clusterId().toString(),
      member_id: this.memberId.toString(),
      parent_cluster_id: (kv.cluster.parentClusterId() ?? 0n).toString(),
      superseded: asker.clusterId !== 0n && this.ancestors().includes(asker.clusterId),
      removed: asker.clusterId === this.clusterId() && this.isRemoved(asker.from),
      members_json: JSON.stringify(members.map((m) => ({ ...m, id: formatId(m.id) }))),
    };
  }

  /** A request another member forwarded to this one as the leader. */
  async forward(method: string, json: string): Promise<ForwardReply> {
    const args = JSON.parse(json, bigintFromJson) as Record<string, never>;
    // The asker's client deadline, as the time it had left (clocks differ between members).
    const deadline = typeof args.leftMs === 'number' ? Date.now() + (args.leftMs as number) : Infinity;
    const ok = (v: unknown) => ({ json: JSON.stringify(v, bigintToJson), error_code: 0, error_message: '' });
    try {
      if (!this.d.isLeader()) throw ErrNotLeader;
      const t = this.d.forwardTargets();
      switch (method) {
        case 'MemberAdd':
          return ok(await t.cluster.memberAdd(args.peerURLs, args.isLearner, deadline));
        case 'MemberRemove':
          return ok(await t.cluster.memberRemove(args.id, deadline));
        case 'MemberUpdate':
          return ok(await t.cluster.memberUpdate(args.id, args.peerURLs, deadline));
        case 'MemberPromote':
          return ok(await t.cluster.memberPromote(args.id, deadline));
        case 'Alarm':
          return ok(await t.alarm(args.action, args.memberId, args.alarm));
        case 'LeaseRenew':
        case 'LeaseTimeToLive':
          return ok(await t.lease(method, args));
        default:
          throw new Error(`unknown forwarded method ${method}`);
      }
    } catch (e) {
      // The reply carries the error as a client would see it (the asker rethrows it as such).
      const etcd = toEtcdError(e);
      if (etcd) return { json: '', error_code: etcd.code, error_message: etcd.message };
      return { json: '', error_code: GrpcCode.Unknown, error_message: (e as Error).message };
    }
  }

  refused(peer: bigint, reason: string, supersededBy: bigint): void {
    if (reason === REFUSED_REMOVED) {
      const msg = 'the member has been permanently removed from the cluster';
      this.d.log.warn({ peer: formatId(peer) }, msg);
      writeMarker(this.d.dataDir, 'removed', `${new Date().toISOString()} ${msg}\n`);
      this.d.exit(78, msg);
    } else if (reason === REFUSED_SUPERSEDED) {
      this.superseded(supersededBy, peer);
    } else if (reason === REFUSED_MISMATCH && Date.now() - this.lastMismatchLog > 5000) {
      this.lastMismatchLog = Date.now();
      this.d.log.warn({ peer: formatId(peer), local: formatId(this.clusterId()) }, 'cluster ID mismatch');
    }
  }

  superseded(by: bigint, peer: bigint): void {
    const msg = `cluster superseded by ${formatId(by)}`;
    this.d.log.warn({ peer: formatId(peer), cluster: formatId(this.clusterId()), supersededBy: formatId(by) }, msg);
    writeMarker(this.d.dataDir, 'superseded', `${new Date().toISOString()} ${msg}\n`);
    this.d.exit(78, msg);
  }

  unreachable(peer: bigint): void {
    this.d.withRaft((r) => r.reportUnreachable(peer));
  }

  async snapshotData(m: Message): Promise<OutgoingSnapshot> {
    // Streamed from the store's file under a held read: no copy is made first.
    const snap = await this.d.kv().openSnapshot();
    const meta = this.d.raft().snapshotMetaAt(snap.appliedIndex);
    if (!meta) {
      snap.release();
      throw new Error(`no snapshot metadata at applied index ${snap.appliedIndex}`);
    }
    return { message: { ...m, snapshot: { meta, data: new Uint8Array(0) } }, chunks: (n) => snap.chunks(n), done: () => snap.release() };
  }

  incomingSnapshotFile(from: bigint): string {
    return incomingSnapshotFile(this.d.dataDir, from);
  }

  snapshotReceived(m: Message, file: string): void {
    const data = snapshotRef(file);
    this.deliver({ ...m, snapshot: { meta: m.snapshot!.meta, data } });
    // Not taken (stale, or we caught up meanwhile): nothing will ever install it.
    if (this.d.raft().pendingSnapshot()?.data !== data) fs.rmSync(file, { force: true });
  }

  snapshotSent(peer: bigint, ok: boolean): void {
    this.d.withRaft((r) => r.reportSnapshot(peer, ok));
  }

  logEvent(level: 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown> = {}): void {
    this.d.log[level](fields, msg);
  }
}
