// One running member: the Raft core driven over the data dir, the peer
// transport, the KV store, and etcd's client API on top. Lifecycle (bootstrap,
// join, restart, forced new cluster) lives in startup.ts; this file is the
// running member and the EtcdBackend the API serves.
import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  ErrBadLeaderTransferee,
  ErrConfChangePending,
  ErrLearnerNotReady,
  ErrMemberNotFound,
  ErrNoLeader,
  ErrNoSpace,
  ErrNotLeader,
  ErrStopped,
  ErrTimeout,
  ErrTimeoutLeaderTransfer,
  ErrUnhealthy,
  EtcdError,
  GrpcCode,
} from '../errors.js';
import { listenWithAuthorityRewrite, type AuthorityRewriteListener } from '../net/authorityListener.js';
import { registerEtcdServices, type EtcdBackend, type Header, type SnapshotToSend, type StatusInfo } from '../api/services.js';
import { registerLeaseService, type LeaseBackend, type LeaseTimeToLive } from '../api/leaseService.js';
import { OpenStreams, registerWatchService, type WatchBackend, type WatchSession, type WatchSink } from '../api/watchService.js';
import { decodeKvRequest, encodeKvRequest, KvStore } from '../kv/index.js';
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
import { decodeConfChange, encodeConfChange } from '../raft/confChange.js';
import { Raft } from '../raft/raft.js';
import { EntryType, MessageType, NONE, RaftError, StateType, type ConfChange, type Entry, type Message, type Ready, type Snapshot, type SoftState } from '../raft/types.js';
import type { RaftStorage } from '../storage/raftStorage.js';
import { kvPath } from '../storage/layout.js';
import { PeerTransport, REFUSED_MISMATCH, REFUSED_REMOVED, REFUSED_SUPERSEDED, type ForwardReply, type IdentityReply, type OutgoingSnapshot, type TransportHost } from '../transport/peerTransport.js';
import { hostPort } from '../transport/urls.js';
import type { ServerConfig } from './config.js';
import { ticksOf } from './config.js';
import { RaftDriver } from './driver.js';
import { hex, runtimeMemberId } from './identity.js';
import type { Logger } from './logger.js';
import { writeMarker } from './markers.js';
import { checkAdd, checkPromote, checkUpdate, decodeMemberContext, encodeMemberContext, strictAddCheck, strictRemoveCheck } from './membership.js';
import { Leases } from './leases.js';
import { PendingProposals, ReadIndexBatcher } from './proposals.js';
import { incomingSnapshotFile, referencedFile, removeReceivedSnapshots, snapshotRef } from './receivedSnapshots.js';
import { decodeServerRequest, encodeServerRequest, type ServerRequest } from './serverRequests.js';
import { DEFAULT_PROGRESS_INTERVAL_MS, WatchHub } from './watchHub.js';
import { MemberMetrics } from './watchMetrics.js';

export const SERVER_VERSION = '3.4.23-lifeboat';
/** Peers count as connected for the strict reconfiguration check after this long. */
const HEALTH_INTERVAL_MS = 5000;
/** A learner may be promoted when its match index is within this fraction of the leader's. */
const LEARNER_READY = 0.9;

/** A member stopping for good: the process exits with `code`. */
export class MemberExit extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
    this.name = 'MemberExit';
  }
}

export interface MemberParts {
  cfg: ServerConfig;
  log: Logger;
  storage: RaftStorage;
  kv: KvStore;
  raft: Raft;
  memberId: bigint;
}

type ApplyOutcome = { kv?: KvApplyResult; members?: MemberInfo[]; member?: MemberInfo; error?: EtcdError };

export class Member implements EtcdBackend, WatchBackend, LeaseBackend, TransportHost {
  readonly memberId: bigint;
  readonly cfg: ServerConfig;
  readonly log: Logger;
  readonly metrics = new MemberMetrics();
  private readonly storage: RaftStorage;
  private kv: KvStore;
  private readonly driver: RaftDriver;
  private readonly transport: PeerTransport;
  private readonly clientServer = new grpc.Server({ 'grpc.max_receive_message_length': 2 * 1024 * 1024 + 512 * 1024 });
  /** Client URL listeners: TCP accepted here, handed to clientServer with etcdctl's ":authority: http://..." made valid. */
  private readonly clientListeners: AuthorityRewriteListener[] = [];
  private readonly proposals: PendingProposals<ApplyOutcome>;
  private readonly reads: ReadIndexBatcher;
  private readonly requestTimeoutMs: number;
  private lead: bigint = NONE;
  private state: StateType = StateType.Follower;
  private stopping = false;
  private snapshotIndex: number;
  private readonly exitWaiters: Array<(e: MemberExit) => void> = [];
  /** Proposals that found no leader: retried when one is elected, until their deadline. */
  private noLeaderQueue: Array<{ data: Uint8Array; id: bigint; deadline: number }> = [];
  private publishTimer: NodeJS.Timeout | undefined;
  private checkpointTimer: NodeJS.Timeout | undefined;
  private readonly heartbeatSentAt = new Map<bigint, number>();
  private checkpointing: Promise<unknown> | undefined;
  /** Watches on this member, fed from its own applies (watchHub.ts). */
  private readonly watchHub: WatchHub;
  private readonly leases: Leases;
  private readonly streams: OpenStreams;
  /** When this member last lost its leader (Date.now()); 0 while it has one. */
  private leaderlessAt = Date.now();

  constructor(p: MemberParts) {
    this.cfg = p.cfg;
    this.log = p.log;
    this.storage = p.storage;
    this.kv = p.kv;
    this.memberId = p.memberId;
    const { tickMs, electionTick } = ticksOf(p.cfg);
    this.requestTimeoutMs = 5000 + 2 * electionTick * tickMs;
    this.proposals = new PendingProposals(this.requestTimeoutMs);
    this.snapshotIndex = p.storage.snapshotMeta().index;
    this.driver = new RaftDriver(
      p.raft,
      { write: (b) => this.storage.save(b, { sync: false }), sync: () => this.storage.sync() },
      {
        send: (ms) => this.send(ms),
        applySnapshot: (s) => this.applySnapshot(s),
        applyEntries: (es) => this.applyEntries(es),
        softState: (s) => this.onSoftState(s),
        readStates: (rd) => this.onReadStates(rd),
        dropped: (rd) => this.onDropped(rd),
        afterAdvance: () => this.maybeSnapshot(),
        fatal: (e) => this.fatal(e),
      },
      this.metrics,
      tickMs,
    );
    this.transport = new PeerTransport(this);
    this.reads = new ReadIndexBatcher(
      (ctx) => this.driver.with((r) => r.readIndex(ctx)),
      () => this.kv.appliedIndex(),
      this.requestTimeoutMs,
    );
    this.metrics.dbSize = () => this.kv.dbSize();
    const progressMs = Number(process.env.LIFEBOAT_WATCH_PROGRESS_NOTIFY_INTERVAL_MS) || DEFAULT_PROGRESS_INTERVAL_MS;
    this.watchHub = new WatchHub(() => this.kv, this.log, progressMs);
    this.leases = new Leases(
      {
        log: this.log,
        kv: () => this.kv,
        isLeader: () => this.state === StateType.Leader,
        hasLeader: () => this.lead !== NONE,
        leaderCaughtUp: () => this.kv.appliedTerm() === this.driver.raft.status().term,
        proposeLease: (req) => this.proposeServer(req),
        forwardToLeader: (method, json, timeoutMs) => this.transport.forward(this.lead, method, json, timeoutMs),
        stopping: () => this.stopping,
      },
      { electionMs: p.cfg.electionMs, requestTimeoutMs: this.requestTimeoutMs },
    );
    this.streams = new OpenStreams({ leaderlessMs: () => (this.leaderlessAt > 0 ? Date.now() - this.leaderlessAt : 0), noLeaderCancelMs: 3 * p.cfg.electionMs });
    this.metrics.watchStats = () => this.watchHub.stats();
    this.metrics.leaseStats = () => ({ leases: this.kv.cluster.leases().length, granted: this.leases.granted, revoked: this.leases.revoked, expired: this.leases.expired });
  }

  // ---- lifecycle -----------------------------------------------------------

  async start(): Promise<void> {
    await this.transport.listen(this.cfg.listenPeerUrls);
    this.refreshPeers();
    registerEtcdServices(this.clientServer, this);
    registerWatchService(this.clientServer, this, this.streams);
    registerLeaseService(this.clientServer, this, this.streams);
    for (const url of this.cfg.listenClientUrls) {
      try {
        this.clientListeners.push(await listenWithAuthorityRewrite(this.clientServer, hostPort(url)));
      } catch (err) {
        throw new Error(`cannot listen on client URL ${url}: ${(err as Error).message}`);
      }
    }
    await this.metrics.listen(this.cfg.listenMetricsUrls);
    this.driver.start();
    this.leases.start();
    this.publishTimer = setInterval(() => this.maybePublish(), 500);
    // SQLite's WAL is checkpointed in a worker thread, never inside an apply.
    this.checkpointTimer = setInterval(() => this.checkpoint(), 1000);
    this.log.info({ peerURLs: this.cfg.initialAdvertisePeerUrls, clientURLs: this.cfg.advertiseClientUrls }, 'serving');
  }

  /** Resolves when the member must stop for good (removed, superseded, fatal). */
  exited(): Promise<MemberExit> {
    return new Promise((resolve) => this.exitWaiters.push(resolve));
  }

  private exit(code: number, message: string): void {
    if (this.stopping) return;
    const e = new MemberExit(code, message);
    for (const w of this.exitWaiters) w(e);
  }

  /** SIGTERM: stop taking requests, let the write in flight finish, close cleanly. */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.publishTimer) clearInterval(this.publishTimer);
    if (this.checkpointTimer) clearInterval(this.checkpointTimer);
    const writeSettled = this.driver.stop();
    await this.checkpointing;
    this.leases.stop();
    this.proposals.rejectAll(ErrStopped);
    this.reads.rejectAll(ErrStopped);
    // Watch and keep-alive streams never end by themselves: end them, or shutdown waits forever.
    this.streams.closeAll();
    this.watchHub.stop();
    for (const l of this.clientListeners) l.stopAccepting();
    // Bounded: a stream whose client stopped reading never finishes flushing.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 2000);
      this.clientServer.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.clientServer.forceShutdown();
    await Promise.all(this.clientListeners.map((l) => l.close()));
    await this.transport.close();
    await this.metrics.close();
    await writeSettled;
    this.storage.close();
    this.kv.close();
  }

  private fatal(e: Error): void {
    this.log.error({ error: e.message }, 'member stopped on an internal error');
    this.exit(1, e.message);
  }

  // ---- driver hooks --------------------------------------------------------

  private send(messages: Message[]): void {
    if (messages.length === 0) return;
    const now = performance.now();
    for (const m of messages) if (m.type === MessageType.Heartbeat) this.heartbeatSentAt.set(m.to, now);
    this.transport.send(messages);
  }

  private onSoftState(s: SoftState): void {
    if (s.lead !== this.lead) {
      this.metrics.leaderChanges++;
      if (s.lead === this.memberId) this.log.info({ term: this.driver.raft.status().term }, 'became leader');
      else if (s.lead !== NONE) this.log.info({ leader: hex(s.lead), term: this.driver.raft.status().term }, 'leader changed');
      else this.log.warn({}, 'no leader');
    }
    const wasLeader = this.state === StateType.Leader;
    this.lead = s.lead;
    this.state = s.state;
    if (s.lead === NONE) this.leaderlessAt ||= Date.now();
    else this.leaderlessAt = 0;
    if (s.state === StateType.Leader && !wasLeader) this.leases.promote();
    else if (s.state !== StateType.Leader && wasLeader) this.leases.demote();
    this.metrics.hasLeader = s.lead !== NONE ? 1 : 0;
    this.metrics.isLeader = s.state === StateType.Leader ? 1 : 0;
    if (s.lead !== NONE && this.noLeaderQueue.length > 0) {
      const queued = this.noLeaderQueue;
      this.noLeaderQueue = [];
      const now = Date.now();
      for (const q of queued) if (q.deadline > now) this.proposeData(q.data, q.id, q.deadline);
    }
  }

  private onReadStates(rd: Ready): void {
    for (const rs of rd.readStates) this.reads.confirmedAt(rs.context, rs.index);
  }

  private onDropped(rd: Ready): void {
    for (const d of rd.droppedProposals) {
      for (const e of d.entries) {
        const { id } = decodeKvRequest(e.data);
        this.proposals.reject(id, new EtcdError(GrpcCode.Unavailable, `etcdserver: ${d.reason}`));
      }
    }
  }

  private applySnapshot(s: Snapshot): void {
    // The leader sent its whole KV state (received into a file): install it as our database.
    const dataDir = this.cfg.dataDir;
    let file = referencedFile(dataDir, s.data);
    if (!file) {
      // Data held in memory (not from our transport): put it in a file first.
      file = incomingSnapshotFile(dataDir, 0n);
      fs.writeFileSync(file, s.data);
    }
    this.log.info({ index: s.meta.index, term: s.meta.term, bytes: fs.statSync(file).size }, 'applying snapshot from leader');
    const dbPath = kvPath(dataDir);
    // Fault hook for tests: die with the snapshot recorded by Raft but not yet installed.
    if (process.env.LIFEBOAT_FAULT === 'before-snapshot-install') process.kill(process.pid, 'SIGKILL');
    this.kv.close();
    KvStore.installSnapshotSync(file, dbPath);
    removeReceivedSnapshots(dataDir, file);
    this.kv = KvStore.open(dbPath, { autoCheckpoint: false });
    // It carries the leader's member ID: the file is ours now.
    this.kv.writeLocal((c) => c.setMemberId(this.memberId));
    // The leader's snapshot is now also ours: the next compaction counts from it.
    this.snapshotIndex = s.meta.index;
    this.refreshPeers();
    this.leases.storeReplaced();
    this.watchHub.storeReplaced();
  }

  private applyEntries(entries: Entry[]): void {
    const outcomes: Array<[bigint, ApplyOutcome]> = [];
    const events: Array<() => void> = [];
    // kv.db may be ahead of the log's commit index (a power cut kept a checkpoint
    // but not the unsynced hard state that moved the commit): entries it already
    // holds are skipped, as etcd skips those at or below its consistent index.
    const applied = this.kv.appliedIndex();
    this.kv.batch(() => {
      for (const e of entries) {
        if (e.index <= applied) this.skipApplied(e, applied, events);
        else if (e.type === EntryType.ConfChange) this.applyConfChange(e, outcomes, events);
        else this.applyNormal(e, outcomes, events);
      }
    });
    this.metrics.proposalsCommitted += entries.length;
    for (const [id, o] of outcomes) this.proposals.resolve(id, o);
    for (const ev of events) ev();
    this.reads.appliedTo(this.kv.appliedIndex());
    this.watchHub.notify();
  }

  /** An entry kv.db already holds: nothing to apply; a membership change still updates the peers. */
  private skipApplied(e: Entry, applied: number, events: Array<() => void>): void {
    if (e.index === applied && e.term !== this.kv.appliedTerm()) {
      throw new Error(`kv: entry ${e.index} has term ${e.term}, but kv.db applied index ${applied} at term ${this.kv.appliedTerm()}: the raft log and kv.db disagree`);
    }
    if (e.type !== EntryType.ConfChange) return;
    const cc = decodeConfChange(e.data);
    events.push(() => this.afterConfChange(cc, this.kv.cluster.member(cc.nodeId)));
  }

  private applyNormal(e: Entry, outcomes: Array<[bigint, ApplyOutcome]>, events: Array<() => void>): void {
    if (e.data.length === 0) {
      this.kv.apply(e.index, e.term, () => undefined);
      return;
    }
    const server = decodeServerRequest(e.data);
    if (server) {
      const { id } = decodeKvRequest(e.data);
      const outcome: ApplyOutcome = {};
      this.kv.apply(e.index, e.term, (w) => {
        if ('publish' in server) {
          const m = w.cluster.member(server.publish.memberId);
          if (m) w.cluster.putMember({ ...m, name: server.publish.name, clientURLs: server.publish.clientURLs });
        } else if ('leaseGrant' in server) {
          const { id: lease, ttl } = server.leaseGrant;
          outcome.error = this.leases.applyGrant(w, lease, ttl);
          if (!outcome.error) events.push(() => this.leases.afterGrant(lease, ttl));
        } else if ('leaseRevoke' in server) {
          const lease = server.leaseRevoke.id;
          outcome.error = this.leases.applyRevoke(w, lease);
          const found = !outcome.error;
          events.push(() => this.leases.afterRevoke(lease, found));
        } else if (server.alarm.action === 'ACTIVATE') {
          if (w.cluster.activateAlarm({ memberId: server.alarm.memberId, alarm: server.alarm.alarm })) {
            events.push(() => this.log.warn({ alarm: AlarmType[server.alarm.alarm], member: hex(server.alarm.memberId) }, 'alarm raised'));
          }
        } else {
          w.cluster.deactivateAlarm({ memberId: server.alarm.memberId, alarm: server.alarm.alarm });
        }
      });
      outcomes.push([id, outcome]);
      return;
    }
    const { id, request } = decodeKvRequest(e.data);
    const result = this.kv.apply(e.index, e.term, (w) => {
      if (!request) return undefined;
      if (this.spaceExceeded(request, w.cluster.alarms())) return { error: ErrNoSpace } as KvApplyResult;
      return w.request(request);
    });
    if (result) outcomes.push([id, { kv: result }]);
  }

  private applyConfChange(e: Entry, outcomes: Array<[bigint, ApplyOutcome]>, events: Array<() => void>): void {
    const cc = decodeConfChange(e.data);
    const ctx = cc.context.length > 0 ? decodeMemberContext(cc.context) : undefined;
    const reqId = ctx?.reqId ?? 0n;
    let changed: MemberInfo | undefined;
    this.kv.apply(e.index, e.term, (w) => {
      const existing = w.cluster.member(cc.nodeId);
      switch (cc.type) {
        case 'addVoter':
        case 'addLearner':
          if (ctx) w.cluster.putMember((changed = { ...ctx.member, isLearner: cc.type === 'addLearner' }));
          break;
        case 'promote':
          if (existing) w.cluster.putMember((changed = { ...existing, isLearner: false }));
          break;
        case 'remove':
          w.cluster.deleteMember(cc.nodeId);
          w.cluster.addRemovedMember(cc.nodeId);
          break;
        case 'update':
          if (existing && ctx) w.cluster.putMember((changed = { ...existing, peerURLs: ctx.member.peerURLs }));
          break;
      }
    });
    const members = this.kv.cluster.members();
    outcomes.push([reqId, { members, member: changed }]);
    events.push(() => this.afterConfChange(cc, changed));
  }

  private afterConfChange(cc: ConfChange, changed: MemberInfo | undefined): void {
    const fields = { id: hex(cc.nodeId), peerURLs: changed?.peerURLs };
    if (cc.type === 'addVoter' || cc.type === 'addLearner') this.log.info({ ...fields, learner: cc.type === 'addLearner' }, 'added member');
    else if (cc.type === 'remove') this.log.info(fields, 'removed member');
    else if (cc.type === 'promote') this.log.info(fields, 'promoted member');
    else this.log.info(fields, 'updated member');
    this.refreshPeers();
    if (cc.type === 'remove' && cc.nodeId === this.memberId) this.removed();
  }

  /** Past the quota, writes fail until space is freed and the alarm disarmed (etcd's NOSPACE). */
  private spaceExceeded(req: KvRequest, alarms: Alarm[]): boolean {
    if (!alarms.some((a) => a.alarm === AlarmType.NoSpace)) return false;
    return 'put' in req || ('txn' in req && (req.txn.success?.length ?? 0) + (req.txn.failure?.length ?? 0) > 0);
  }

  private maybeSnapshot(): void {
    const applied = this.kv.appliedIndex();
    if (applied - this.snapshotIndex < this.cfg.snapshotCount) return;
    // Compact only past what the KV has made durable: the log replays the rest.
    const durable = this.kv.makeDurable();
    const meta = this.driver.raft.snapshotMetaAt(durable);
    if (!meta || durable <= Math.max(this.snapshotIndex, this.storage.snapshotMeta().index)) return;
    this.driver.raft.compact(durable, new Uint8Array(0));
    this.storage.saveSnapshot({ meta, data: new Uint8Array(0) });
    this.storage.compact(durable);
    this.snapshotIndex = durable;
    this.log.info({ index: durable }, 'compacted raft log');
  }

  private checkpoint(): void {
    if (this.checkpointing || this.stopping) return;
    this.checkpointing = this.kv
      .checkpointAsync()
      .catch((e: Error) => this.log.warn({ error: e.message }, 'KV checkpoint failed'))
      .finally(() => (this.checkpointing = undefined));
  }

  private checkQuota(): void {
    if (this.cfg.quotaBackendBytes <= 0 || this.state !== StateType.Leader) return;
    if (this.kv.dbSize() <= this.cfg.quotaBackendBytes) return;
    if (this.kv.cluster.alarms().some((a) => a.alarm === AlarmType.NoSpace)) return;
    this.proposeServer({ alarm: { action: 'ACTIVATE', memberId: this.memberId, alarm: AlarmType.NoSpace } }).catch(() => undefined);
  }

  private removed(): void {
    const msg = 'the member has been permanently removed from the cluster';
    this.log.warn({}, msg);
    writeMarker(this.cfg.dataDir, 'removed', `${new Date().toISOString()} ${msg}\n`);
    // Give the response to the removal request and the commit a moment to go out.
    setTimeout(() => this.exit(78, msg), Math.min(1000, this.cfg.electionMs));
  }

  private maybePublish(): void {
    if (this.lead === NONE) return;
    const me = this.kv.cluster.member(this.memberId);
    if (!me) return;
    const same = me.name === this.cfg.name && me.clientURLs.join(',') === this.cfg.advertiseClientUrls.join(',');
    if (same) {
      if (this.publishTimer) clearInterval(this.publishTimer);
      this.publishTimer = undefined;
      return;
    }
    this.proposeServer({ publish: { memberId: this.memberId, name: this.cfg.name, clientURLs: this.cfg.advertiseClientUrls } }).then(
      () => this.log.info({ name: this.cfg.name, clientURLs: this.cfg.advertiseClientUrls }, 'published local member to cluster through raft'),
      () => undefined,
    );
  }

  // ---- proposals -------------------------------------------------------------

  private proposeData(data: Uint8Array, id: bigint, deadline: number): void {
    try {
      this.driver.with((r) => r.propose(data));
    } catch (e) {
      if (e instanceof RaftError && e.code === 'ProposalDropped') {
        // No leader yet: wait for one (bounded by the request's own timeout).
        this.noLeaderQueue.push({ data, id, deadline });
        return;
      }
      this.proposals.reject(id, e instanceof RaftError ? new EtcdError(GrpcCode.Unavailable, `etcdserver: ${e.message}`) : (e as Error));
    }
  }

  private propose(encode: (id: bigint) => Uint8Array): Promise<ApplyOutcome> {
    if (this.stopping) return Promise.reject(ErrStopped);
    const id = this.proposals.nextId();
    const done = this.proposals.wait(id);
    this.metrics.proposalsPending++;
    this.proposeData(encode(id), id, Date.now() + this.requestTimeoutMs);
    return done.finally(() => this.metrics.proposalsPending--).catch((e) => {
      this.metrics.proposalsFailed++;
      throw e;
    });
  }

  private async proposeKv(req: KvRequest): Promise<KvApplyResult> {
    if (this.spaceExceeded(req, this.kv.cluster.alarms())) throw ErrNoSpace;
    const out = await this.propose((id) => encodeKvRequest(req, id));
    const r = out.kv!;
    if ('error' in r && r.error) throw r.error;
    this.checkQuota();
    return r;
  }

  private proposeServer(req: ServerRequest): Promise<ApplyOutcome> {
    return this.propose((id) => encodeServerRequest(req, id));
  }

  private async proposeConf(cc: Omit<ConfChange, 'context'>, member: MemberInfo | undefined): Promise<ApplyOutcome> {
    if (this.stopping) throw ErrStopped;
    const id = this.proposals.nextId();
    const done = this.proposals.wait(id);
    const context = member ? encodeMemberContext(member, id) : encodeMemberContext({ id: cc.nodeId, name: '', peerURLs: [], clientURLs: [], isLearner: false }, id);
    try {
      this.driver.with((r) => r.proposeConfChange({ ...cc, context }));
    } catch (e) {
      this.proposals.reject(id, this.confError(e));
    }
    return done;
  }

  private confError(e: unknown): Error {
    if (e instanceof RaftError) {
      if (e.code === 'ConfChangePending') return ErrConfChangePending;
      if (e.code === 'NotLeader') return ErrNotLeader;
      return new EtcdError(GrpcCode.FailedPrecondition, `etcdserver: ${e.message}`);
    }
    return e as Error;
  }

  // ---- EtcdBackend ---------------------------------------------------------

  header(revision: number): Header {
    return {
      cluster_id: this.clusterId().toString(),
      member_id: this.memberId.toString(),
      revision: String(revision),
      raft_term: String(this.driver.raft.status().term),
    };
  }

  currentRevision(): number {
    return this.kv.currentRevision();
  }

  isLearner(): boolean {
    return this.driver.raft.status().conf.learners.includes(this.memberId);
  }

  async range(r: RangeRequest): Promise<RangeResponse> {
    if (!r.serializable) await this.linearizable();
    return this.kv.range(r);
  }

  private async linearizable(): Promise<void> {
    try {
      await this.reads.read();
    } catch (e) {
      if (e instanceof RaftError) throw ErrNoLeader;
      throw e;
    }
  }

  async put(r: PutRequest): Promise<PutResponse> {
    const res = await this.proposeKv({ put: r });
    return (res.response as { put: PutResponse }).put;
  }

  async deleteRange(r: DeleteRangeRequest): Promise<DeleteRangeResponse> {
    const res = await this.proposeKv({ deleteRange: r });
    return (res.response as { deleteRange: DeleteRangeResponse }).deleteRange;
  }

  async txn(r: TxnRequest): Promise<TxnResponse> {
    const res = await this.proposeKv({ txn: r });
    return (res.response as { txn: TxnResponse }).txn;
  }

  async compact(r: CompactionRequest): Promise<void> {
    await this.proposeKv({ compaction: r });
  }

  /** Membership changes run on the leader; a follower hands them over. */
  private async onLeader<T>(method: string, args: Record<string, unknown>, local: () => Promise<T>, decode: (json: string) => T): Promise<T> {
    if (this.state === StateType.Leader) return local();
    // Without a leader there is no quorum: a membership change cannot be made safely.
    if (this.lead === NONE) throw this.cfg.strictReconfigCheck ? ErrUnhealthy : ErrNoLeader;
    const reply = await this.transport.forward(this.lead, method, JSON.stringify(args, (_k, v) => (typeof v === 'bigint' ? `0x${v.toString(16)}` : v)), this.requestTimeoutMs);
    if (reply.error_message) throw new EtcdError(reply.error_code as GrpcCode, reply.error_message);
    return decode(reply.json);
  }

  async forward(method: string, json: string): Promise<ForwardReply> {
    const args = JSON.parse(json, (_k, v) => (typeof v === 'string' && /^0x[0-9a-f]+$/.test(v) ? BigInt(v) : v)) as Record<string, never>;
    const ok = (v: unknown) => ({ json: JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `0x${x.toString(16)}` : x)), error_code: 0, error_message: '' });
    try {
      if (this.state !== StateType.Leader) throw ErrNotLeader;
      switch (method) {
        case 'MemberAdd':
          return ok(await this.memberAdd(args.peerURLs, args.isLearner));
        case 'MemberRemove':
          return ok(await this.memberRemove(args.id));
        case 'MemberUpdate':
          return ok(await this.memberUpdate(args.id, args.peerURLs));
        case 'MemberPromote':
          return ok(await this.memberPromote(args.id));
        case 'Alarm':
          return ok(await this.alarm(args.action, args.memberId, args.alarm));
        case 'LeaseRenew':
        case 'LeaseTimeToLive':
          return ok(await this.leases.forwarded(method, args));
        default:
          throw new Error(`unknown forwarded method ${method}`);
      }
    } catch (e) {
      if (e instanceof EtcdError) return { json: '', error_code: e.code, error_message: e.message };
      return { json: '', error_code: GrpcCode.Unknown, error_message: (e as Error).message };
    }
  }

  private connected = (id: bigint): boolean => {
    const since = this.transport.activeSince(id);
    return since !== undefined && Date.now() - since >= HEALTH_INTERVAL_MS;
  };

  private static decodeMembers(json: string): MemberInfo[] {
    return JSON.parse(json, (_k, v) => (typeof v === 'string' && /^0x[0-9a-f]+$/.test(v) ? BigInt(v) : v)) as MemberInfo[];
  }

  async memberAdd(peerURLs: string[], isLearner: boolean): Promise<{ member: MemberInfo; members: MemberInfo[] }> {
    return this.onLeader(
      'MemberAdd',
      { peerURLs, isLearner },
      async () => {
        const members = this.kv.cluster.members();
        const id = runtimeMemberId(peerURLs, Date.now() / 1000);
        const bad = checkAdd(members, peerURLs, id, isLearner, this.cfg.maxLearners);
        if (bad) throw bad;
        if (this.cfg.strictReconfigCheck) {
          const unsafe = strictAddCheck(members, !isLearner, this.connected, this.memberId);
          if (unsafe) throw unsafe;
        }
        const member: MemberInfo = { id, name: '', peerURLs, clientURLs: [], isLearner };
        const out = await this.proposeConf({ type: isLearner ? 'addLearner' : 'addVoter', nodeId: id }, member);
        return { member, members: out.members ?? [] };
      },
      (json) => {
        const r = JSON.parse(json, (_k, v) => (typeof v === 'string' && /^0x[0-9a-f]+$/.test(v) ? BigInt(v) : v)) as { member: MemberInfo; members: MemberInfo[] };
        return r;
      },
    );
  }

  async memberRemove(id: bigint): Promise<MemberInfo[]> {
    return this.onLeader(
      'MemberRemove',
      { id },
      async () => {
        const members = this.kv.cluster.members();
        if (!members.some((m) => m.id === id)) throw ErrMemberNotFound;
        if (this.cfg.strictReconfigCheck) {
          const unsafe = strictRemoveCheck(members, id, this.connected, this.memberId);
          if (unsafe) throw unsafe;
        }
        const out = await this.proposeConf({ type: 'remove', nodeId: id }, undefined);
        return out.members ?? [];
      },
      Member.decodeMembers,
    );
  }

  async memberUpdate(id: bigint, peerURLs: string[]): Promise<MemberInfo[]> {
    return this.onLeader(
      'MemberUpdate',
      { id, peerURLs },
      async () => {
        const members = this.kv.cluster.members();
        const bad = checkUpdate(members, id, peerURLs);
        if (bad) throw bad;
        const m = members.find((x) => x.id === id)!;
        const out = await this.proposeConf({ type: 'update', nodeId: id }, { ...m, peerURLs });
        return out.members ?? [];
      },
      Member.decodeMembers,
    );
  }

  async memberPromote(id: bigint): Promise<MemberInfo[]> {
    return this.onLeader(
      'MemberPromote',
      { id },
      async () => {
        const members = this.kv.cluster.members();
        const bad = checkPromote(members, id);
        if (bad) throw bad;
        const st = this.driver.raft.status();
        const learnerMatch = st.progress.get(id)?.match ?? 0;
        const leaderMatch = st.progress.get(this.memberId)?.match ?? st.lastIndex;
        if (learnerMatch < leaderMatch * LEARNER_READY) throw ErrLearnerNotReady;
        if (this.cfg.strictReconfigCheck) {
          const unsafe = strictAddCheck(members, true, this.connected, this.memberId);
          if (unsafe) throw unsafe;
        }
        const out = await this.proposeConf({ type: 'promote', nodeId: id }, undefined);
        return out.members ?? [];
      },
      Member.decodeMembers,
    );
  }

  async memberList(): Promise<MemberInfo[]> {
    return this.kv.cluster.members();
  }

  async status(): Promise<StatusInfo> {
    const st = this.driver.raft.status();
    const errors: string[] = [];
    if (st.lead === NONE) errors.push(ErrNoLeader.message);
    for (const a of this.kv.cluster.alarms()) errors.push(`memberID:${a.memberId} alarm:${AlarmType[a.alarm].toUpperCase()} `);
    return {
      version: SERVER_VERSION,
      dbSize: this.kv.dbSize(),
      dbSizeInUse: this.kv.dbSizeInUse(),
      leader: st.lead,
      raftIndex: st.lastIndex,
      raftTerm: st.term,
      raftAppliedIndex: this.kv.appliedIndex(),
      errors,
      isLearner: st.conf.learners.includes(this.memberId),
    };
  }

  async hashKV(revision: number): Promise<{ hash: number; compactRevision: number; revision: number }> {
    return this.kv.hashKvAsync(revision);
  }

  async hash(): Promise<number> {
    return this.kv.hashAsync();
  }

  async snapshot(): Promise<SnapshotToSend> {
    const tmp = path.join(os.tmpdir(), `lifeboat-snapshot-${process.pid}-${Date.now()}.db`);
    const done = () => fs.rmSync(tmp, { force: true });
    try {
      // The file ends with the sha256 of the database: the stream sends both as they are.
      const info = await this.kv.saveSnapshot(tmp);
      return { file: tmp, size: info.size - 32, done };
    } catch (e) {
      done();
      throw e;
    }
  }

  async moveLeader(target: bigint): Promise<void> {
    if (this.state !== StateType.Leader) throw ErrNotLeader;
    const st = this.driver.raft.status();
    if (!st.conf.voters.includes(target)) throw ErrBadLeaderTransferee;
    if (target === this.memberId) return;
    this.driver.with((r) => r.transferLeader(target));
    const deadline = Date.now() + Math.max(this.cfg.electionMs * 3, 3000);
    while (Date.now() < deadline) {
      if (this.lead === target) return;
      await new Promise((r) => setTimeout(r, this.cfg.heartbeatMs));
    }
    throw ErrTimeoutLeaderTransfer;
  }

  async alarm(action: 'GET' | 'ACTIVATE' | 'DEACTIVATE', memberId: bigint, alarm: AlarmType): Promise<Alarm[]> {
    if (action === 'GET') return this.kv.cluster.alarms();
    const target = memberId === 0n ? this.memberId : memberId;
    const had = this.kv.cluster.alarms().filter((a) => a.memberId === target && a.alarm === alarm);
    await this.proposeServer({ alarm: { action, memberId: target, alarm } });
    // As etcd answers: the alarm raised, or the one cleared (none if it was not active),
    // not every alarm left; `alarm disarm` prints what it disarmed from this.
    return action === 'ACTIVATE' ? [{ memberId: target, alarm }] : had;
  }

  async defragment(): Promise<void> {
    this.kv.defragment();
  }

  // ---- WatchBackend, LeaseBackend ----------------------------------------------

  openWatchSession(sink: WatchSink): WatchSession {
    return this.watchHub.open(sink);
  }

  leaseGrant(ttl: number, id: bigint): Promise<{ id: bigint; ttl: number }> {
    return this.leases.grant(ttl, id);
  }

  leaseRevoke(id: bigint): Promise<void> {
    return this.leases.revoke(id);
  }

  leaseRenew(id: bigint): Promise<number> {
    return this.leases.renew(id);
  }

  leaseTimeToLive(id: bigint, keys: boolean): Promise<LeaseTimeToLive> {
    return this.leases.timeToLive(id, keys);
  }

  async leaseLeases(): Promise<bigint[]> {
    return this.leases.list();
  }

  // ---- TransportHost ----------------------------------------------------------

  clusterId(): bigint {
    return this.kv.cluster.clusterId() ?? 0n;
  }

  ancestors(): bigint[] {
    const p = this.kv.cluster.parentClusterId();
    return p === undefined || p === 0n ? [] : [p];
  }

  isRemoved(id: bigint): boolean {
    return this.kv.cluster.isRemovedMember(id);
  }

  deliver(m: Message): void {
    if (this.stopping) return;
    if (m.type === MessageType.HeartbeatResp) {
      // Heartbeat out, response back: the peer round trip, including its persist cycle.
      const sent = this.heartbeatSentAt.get(m.from);
      if (sent !== undefined) this.metrics.peerRtt.observe((performance.now() - sent) / 1000);
      this.heartbeatSentAt.delete(m.from);
    }
    try {
      this.driver.with((r) => r.step(m));
    } catch (e) {
      this.fatal(e as Error);
    }
  }

  identity(asker: { clusterId: bigint; from: bigint }): IdentityReply {
    const members = this.kv.cluster.members();
    return {
      cluster_id: this.clusterId().toString(),
      member_id: this.memberId.toString(),
      parent_cluster_id: (this.kv.cluster.parentClusterId() ?? 0n).toString(),
      superseded: asker.clusterId !== 0n && this.ancestors().includes(asker.clusterId),
      removed: asker.clusterId === this.clusterId() && this.isRemoved(asker.from),
      members_json: JSON.stringify(members.map((m) => ({ ...m, id: hex(m.id) }))),
    };
  }

  private lastMismatchLog = 0;

  refused(peer: bigint, reason: string, supersededBy: bigint): void {
    if (reason === REFUSED_REMOVED) {
      const msg = 'the member has been permanently removed from the cluster';
      this.log.warn({ peer: hex(peer) }, msg);
      writeMarker(this.cfg.dataDir, 'removed', `${new Date().toISOString()} ${msg}\n`);
      this.exit(78, msg);
    } else if (reason === REFUSED_SUPERSEDED) {
      this.superseded(supersededBy, peer);
    } else if (reason === REFUSED_MISMATCH && Date.now() - this.lastMismatchLog > 5000) {
      this.lastMismatchLog = Date.now();
      this.log.warn({ peer: hex(peer), local: hex(this.clusterId()) }, 'cluster ID mismatch');
    }
  }

  superseded(by: bigint, peer: bigint): void {
    const msg = `cluster superseded by ${hex(by)}`;
    this.log.warn({ peer: hex(peer), cluster: hex(this.clusterId()), supersededBy: hex(by) }, msg);
    writeMarker(this.cfg.dataDir, 'superseded', `${new Date().toISOString()} ${msg}\n`);
    this.exit(78, msg);
  }

  unreachable(peer: bigint): void {
    this.driver.with((r) => r.reportUnreachable(peer));
  }

  async snapshotData(m: Message): Promise<OutgoingSnapshot> {
    const tmp = path.join(os.tmpdir(), `lifeboat-peer-snap-${process.pid}-${Date.now()}-${m.to.toString(16)}.db`);
    const done = () => fs.rmSync(tmp, { force: true });
    try {
      const info = await this.kv.saveSnapshot(tmp);
      const meta = this.driver.raft.snapshotMetaAt(info.appliedIndex);
      if (!meta) throw new Error(`no snapshot metadata at applied index ${info.appliedIndex}`);
      // The transport streams the file and removes it with done().
      return { message: { ...m, snapshot: { meta, data: new Uint8Array(0) } }, file: tmp, done };
    } catch (e) {
      done();
      throw e;
    }
  }

  incomingSnapshotFile(from: bigint): string {
    return incomingSnapshotFile(this.cfg.dataDir, from);
  }

  snapshotReceived(m: Message, file: string): void {
    const data = snapshotRef(file);
    this.deliver({ ...m, snapshot: { meta: m.snapshot!.meta, data } });
    // Not taken (stale, or we caught up meanwhile): nothing will ever install it.
    if (this.driver.raft.pendingSnapshot()?.data !== data) fs.rmSync(file, { force: true });
  }

  snapshotSent(peer: bigint, ok: boolean): void {
    this.driver.with((r) => r.reportSnapshot(peer, ok));
  }

  logEvent(level: 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown> = {}): void {
    this.log[level](fields, msg);
  }

  private refreshPeers(): void {
    const peers = new Map<bigint, string[]>();
    for (const m of this.kv.cluster.members()) if (m.id !== this.memberId) peers.set(m.id, m.peerURLs);
    this.transport.setPeers(peers);
  }
}
