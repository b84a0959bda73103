// One running member: the Raft core driven over the data dir, the peer
// transport, the KV store, and etcd's client API on top. Lifecycle (bootstrap,
// join, restart, forced new cluster) lives in startup.ts; this file wires the
// running member together, starts and stops it, takes the driver's hooks (soft
// state, read states, snapshots to install, log compaction) and proposes (the
// waiting is proposer.ts's). Its jobs live beside it: apply.ts applies committed
// entries, checkpoints.ts makes kv.db durable and compacts the log behind it,
// v3Backend.ts and clusterApi.ts serve the client API, peerHost.ts answers the
// peer transport.
import { ErrNoSpace, ErrStopped, proposalRefused } from '../common/memberErrors.js';
import { listenWithAuthorityRewrite, type AuthorityRewriteListener } from '../net/authorityListener.js';
import { GrpcServer } from '../net/grpcServer.js';
import { registerEtcdServices } from '../api/services.js';
import { registerLeaseService } from '../api/leaseService.js';
import { registerAuthService } from '../api/authService.js';
import { OpenStreams, registerWatchService } from '../api/watchService.js';
import { decodeRequest, encodeRequest, type AuthInfo, type AuthRequest, type KvStore, type ServerRequest } from '../kv/index.js';
import { AuthApi } from './authApi.js';
import { AlarmType, type KvApplyResult, type KvRequest } from '../kv/types.js';
import type { RawNode } from '../raft/rawNode.js';
import { NONE, StateType, type Message, type Ready, type Snapshot, type SoftState } from '../raft/types.js';
import type { RaftStorage } from '../storage/raftStorage.js';
import { PeerTransport } from '../transport/peerTransport.js';
import { hostPort } from '../common/urls.js';
import { HeldBackApplies } from './heldBackApplies.js';
import { EntryApplier, installLeaderSnapshot, quotaNewlyExceeded, spaceExceeded, type ApplyOutcome } from './apply.js';
import { Checkpoints } from './checkpoints.js';
import { ClusterApi } from './clusterApi.js';
import type { ServerConfig } from './config.js';
import { maxReceiveBytes, ticksOf } from './config.js';
import { RaftDriver } from './driver.js';
import { formatId } from '../common/ids.js';
import type { Logger } from './logger.js';
import { writeMarker } from '../storage/markers.js';
import { Leases } from './leases.js';
import { PeerHost } from './peerHost.js';
import { ReadIndexBatcher } from './proposals.js';
import { Proposer } from './proposer.js';
import { V3Backend } from './v3Backend.js';
import { WatchHub } from './watchHub.js';
import { MemberMetrics } from './watchMetrics.js';
import { memberTls, type MemberTls } from './memberTls.js';

export { SERVER_VERSION } from './v3Backend.js';

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
  raft: RawNode;
  memberId: bigint;
}

export class Member {
  readonly memberId: bigint;
  readonly cfg: ServerConfig;
  readonly log: Logger;
  readonly metrics = new MemberMetrics();
  readonly requestTimeoutMs: number;
  private readonly storage: RaftStorage;
  private kv: KvStore;
  private readonly driver: RaftDriver;
  private readonly transport: PeerTransport;
  private readonly peerHost: PeerHost;
  private readonly applier: EntryApplier;
  private readonly clusterApi: ClusterApi;
  private readonly v3: V3Backend;
  private readonly clientServer: GrpcServer;
  /** Client URL listeners: TCP accepted here, handed to clientServer with etcdctl's ":authority: http://..." made valid. */
  private readonly clientListeners: AuthorityRewriteListener[] = [];
  private readonly proposer: Proposer;
  /** What the https:// listeners serve and check, and how https:// peers are dialled. */
  private readonly tls: MemberTls;
  private readonly reads: ReadIndexBatcher;
  private lead: bigint = NONE;
  private state: StateType = StateType.Follower;
  private stopping = false;
  private readonly exitWaiters: Array<(e: MemberExit) => void> = [];
  private publishTimer: NodeJS.Timeout | undefined;
  /** Applies wait here while kv.db is defragmented. */
  private readonly heldBack = new HeldBackApplies();
  private readonly checkpoints: Checkpoints;
  /** Watches on this member, fed from its own applies (watchHub.ts). */
  private readonly watchHub: WatchHub;
  private readonly leases: Leases;
  private readonly auth: AuthApi;
  private readonly streams: OpenStreams;
  /** When this member last lost its leader (Date.now()); 0 while it has one. */
  private leaderlessAt = Date.now();

  constructor(p: MemberParts) {
    this.cfg = p.cfg;
    this.log = p.log;
    this.storage = p.storage;
    this.kv = this.watched(p.kv);
    this.memberId = p.memberId;
    this.clientServer = new GrpcServer({ maxReceiveMessageLength: maxReceiveBytes(p.cfg.maxRequestBytes) });
    const { tickMs, electionTick } = ticksOf(p.cfg);
    this.requestTimeoutMs = 5000 + 2 * electionTick * tickMs;
    this.driver = new RaftDriver(
      p.raft,
      { write: (b) => this.storage.save(b, { sync: false }), sync: () => this.storage.sync(), syncNow: () => this.storage.syncNow() },
      {
        send: (ms) => this.send(ms),
        applySnapshot: (s) => this.heldBack.run(() => this.applySnapshot(s)),
        applyEntries: (es) => this.heldBack.run(() => this.applier.applyEntries(es)),
        softState: (s) => this.onSoftState(s),
        readStates: (rd) => this.onReadStates(rd),
        dropped: (rd) => this.onDropped(rd),
        afterAdvance: () => this.checkpoints.maybeCompact(),
        fatal: (e) => this.fatal(e),
      },
      this.metrics,
      tickMs,
    );
    this.checkpoints = new Checkpoints({
      log: this.log,
      storage: this.storage,
      kv: () => this.kv,
      raft: () => this.driver.raft,
      heldBack: this.heldBack,
      snapshotCount: p.cfg.snapshotCount,
      observeCheckpoint: (s) => this.metrics.kvCheckpoint.observe(s),
      stopping: () => this.stopping,
      fatal: (e) => this.fatal(e),
    });
    // What every part sees of the member; each part's interface takes what it needs.
    const view = {
      memberId: this.memberId,
      log: this.log,
      kv: () => this.kv,
      raft: () => this.driver.raft,
      isLeader: () => this.state === StateType.Leader,
      leader: () => this.lead,
      stopping: () => this.stopping,
    };
    this.proposer = new Proposer(
      { withRaft: (fn) => this.driver.with(fn), stopping: view.stopping, metrics: this.metrics },
      this.requestTimeoutMs,
      p.cfg.maxRequestBytes,
    );
    this.peerHost = new PeerHost({
      ...view,
      dataDir: p.cfg.dataDir,
      withRaft: (fn) => this.driver.with(fn),
      observeRtt: (s) => this.metrics.peerRtt.observe(s),
      forwardTargets: () => ({
        cluster: this.clusterApi,
        alarm: (a, m, t) => this.v3.alarm(a, m, t),
        lease: (method, args) => this.leases.forwarded(method, args),
      }),
      fatal: (e) => this.fatal(e),
      exit: (code, msg) => this.exit(code, msg),
    });
    this.tls = memberTls(p.cfg, this.log);
    this.transport = new PeerTransport(this.peerHost, this.tls.peerCredentials);
    this.metrics.peerCounts = () => this.transport.peerCounts();
    this.reads = new ReadIndexBatcher(
      (ctx) => this.driver.with((r) => r.readIndex(ctx)),
      () => this.kv.appliedIndex(),
      this.requestTimeoutMs,
    );
    this.clusterApi = new ClusterApi({
      ...view,
      cfg: p.cfg,
      requestTimeoutMs: this.requestTimeoutMs,
      log: this.log,
      forward: (to, method, json, timeoutMs) => this.transport.forward(to, method, json, timeoutMs),
      activeSince: (id) => this.transport.activeSince(id),
      proposeConf: (cc, member, deadline) => this.proposer.proposeConf(cc, member, deadline),
    });
    this.metrics.dbSize = () => this.kv.dbSize();
    this.metrics.kvPageCacheLimit = () => this.kv.pageCacheLimitBytes();
    this.metrics.onStall = (s) => this.log.warn({ ms: Math.round(s.ms), cause: s.cause, cpuMs: Math.round(s.cpuMs) }, 'event loop stalled');
    this.watchHub = new WatchHub(view.kv, this.log, p.cfg.watchProgressNotifyMs);
    const leaseHost = {
      ...view,
      hasLeader: () => this.lead !== NONE,
      leaderCaughtUp: () => this.kv.appliedTerm() === this.driver.raft.status().term,
      proposeLease: (req: ServerRequest, who?: AuthInfo, deadline?: number) => this.proposeServer(req, who, deadline),
      forwardToLeader: (method: string, json: string, timeoutMs: number) => this.transport.forward(this.lead, method, json, timeoutMs),
    };
    this.leases = new Leases(leaseHost, { electionMs: p.cfg.electionMs, requestTimeoutMs: this.requestTimeoutMs });
    this.auth = new AuthApi(
      {
        log: this.log,
        kv: view.kv,
        header: (rev) => this.v3.header(rev),
        currentRevision: () => this.kv.currentRevision(),
        isLearner: () => this.v3.isLearner(),
        readIndex: (deadline) => this.reads.read(deadline),
        proposeAuth: (req: AuthRequest, who: AuthInfo | undefined, deadline?: number) => this.proposeServer({ auth: req }, who, deadline),
        requestTimeoutMs: this.requestTimeoutMs,
      },
      p.cfg.authTokenTtlSec,
    );
    const v3Host = {
      ...view,
      cfg: p.cfg,
      clusterId: () => this.peerHost.clusterId(),
      readIndex: (deadline?: number) => this.reads.read(deadline),
      proposeKv: (req: KvRequest, who?: AuthInfo, deadline?: number) => this.proposeKv(req, who, deadline),
      auth: this.auth,
      proposeServer: (req: ServerRequest, deadline?: number) => this.proposeServer(req, undefined, deadline),
      transferLeader: (target: bigint) => this.driver.with((r) => r.transferLeader(target)),
      defragment: () => this.checkpoints.defragment(),
      watches: this.watchHub,
      leases: this.leases,
    };
    this.v3 = new V3Backend(v3Host, this.clusterApi);
    this.applier = new EntryApplier({
      ...view,
      leases: this.leases,
      auth: this.auth,
      resolve: (id, outcome) => this.proposer.pending.resolve(id, outcome),
      afterBatch: (count) => {
        this.metrics.proposalsCommitted += count;
        this.reads.appliedTo(this.kv.appliedIndex());
        this.watchHub.notify();
      },
      membersChanged: () => this.refreshPeers(),
      removed: () => this.removed(),
    });
    this.streams = new OpenStreams({
      leaderlessMs: () => (this.leaderlessAt > 0 ? Date.now() - this.leaderlessAt : 0),
      noLeaderCancelMs: 3 * p.cfg.electionMs,
    });
    this.metrics.watchStats = () => this.watchHub.stats();
    this.metrics.leaseStats = () => ({
      leases: this.kv.cluster.leases().length,
      granted: this.leases.granted,
      revoked: this.leases.revoked,
      expired: this.leases.expired,
    });
  }

  // ---- lifecycle -----------------------------------------------------------

  async start(): Promise<void> {
    await this.transport.listen(this.cfg.listenPeerUrls, this.tls.peer);
    this.refreshPeers();
    registerEtcdServices(this.clientServer, this.v3);
    registerWatchService(this.clientServer, this.v3, this.streams);
    registerLeaseService(this.clientServer, this.v3, this.streams);
    registerAuthService(this.clientServer, this.auth);
    for (const url of this.cfg.listenClientUrls) {
      try {
        const tls = url.startsWith('https:') ? this.tls.client : undefined;
        if (url.startsWith('https:') && !tls) throw new Error('no TLS certificate (--cert-file, --key-file)');
        this.clientListeners.push(await listenWithAuthorityRewrite(this.clientServer, hostPort(url), { tls }));
      } catch (err) {
        throw new Error(`cannot listen on client URL ${url}: ${(err as Error).message}`);
      }
    }
    await this.metrics.listen(this.cfg.listenMetricsUrls, this.tls.client);
    this.driver.start();
    this.leases.start();
    this.publishTimer = setInterval(() => this.maybePublish(), 500);
    this.checkpoints.start();
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
    this.checkpoints.stopTimer();
    const writeSettled = this.driver.stop();
    // Applies still held back are in the log: the next start applies them.
    await this.checkpoints.settled();
    this.leases.stop();
    this.auth.stop();
    this.proposer.pending.rejectAll(ErrStopped);
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

  /** The store, with a failed commit of held applies made fatal (kvStore.ts commitDelayMs). */
  private watched(kv: KvStore): KvStore {
    kv.onCommitFailure = (e) => this.fatal(e);
    kv.onCommit = (s) => this.metrics.kvCommit.observe(s);
    kv.aroundCommit = (commit) => this.metrics.spans.during('commit', commit);
    return kv;
  }

  private fatal(e: Error): void {
    this.log.error({ error: e.message }, 'member stopped on an internal error');
    this.exit(1, e.message);
  }

  // ---- driver hooks --------------------------------------------------------

  private send(messages: Message[]): void {
    if (messages.length === 0) return;
    this.peerHost.sending(messages);
    this.transport.send(messages);
  }

  private onSoftState(s: SoftState): void {
    if (s.lead !== this.lead) {
      this.metrics.leaderChanges++;
      if (s.lead === this.memberId) this.log.info({ term: this.driver.raft.status().term }, 'became leader');
      else if (s.lead !== NONE) this.log.info({ leader: formatId(s.lead), term: this.driver.raft.status().term }, 'leader changed');
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
    if (s.lead !== NONE) this.proposer.leaderElected();
  }

  private onReadStates(rd: Ready): void {
    for (const rs of rd.readStates) this.reads.confirmedAt(rs.context, rs.index);
  }

  private onDropped(rd: Ready): void {
    for (const d of rd.droppedProposals) {
      for (const e of d.entries) {
        const { id } = decodeRequest(e.data);
        this.proposer.pending.reject(id, proposalRefused(d.reason));
      }
    }
  }

  private applySnapshot(s: Snapshot): void {
    this.kv = this.watched(installLeaderSnapshot(s, this.kv, this.cfg.dataDir, this.memberId, this.log));
    this.checkpoints.snapshotInstalled(s.meta.index);
    this.refreshPeers();
    this.leases.storeReplaced();
    this.watchHub.storeReplaced();
  }

  private checkQuota(): void {
    if (this.state !== StateType.Leader || !quotaNewlyExceeded(this.kv, this.cfg.quotaBackendBytes)) return;
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
      () => this.log.info({ clientURLs: this.cfg.advertiseClientUrls }, 'published local member to cluster through raft'),
      () => undefined,
    );
  }

  // ---- proposals -------------------------------------------------------------

  private async proposeKv(req: KvRequest, who?: AuthInfo, deadline?: number): Promise<KvApplyResult> {
    if (spaceExceeded(req, this.kv.cluster.alarms())) throw ErrNoSpace;
    const out = await this.proposer.propose((id) => encodeRequest(req, id, who), deadline);
    if (out.error) throw out.error;
    const r = out.kv!;
    if ('error' in r && r.error) throw r.error;
    this.checkQuota();
    return r;
  }

  /** `who`: the client a request is made for (its entry carries it); none for the member's own. `deadline`: the client's. */
  private proposeServer(req: ServerRequest, who?: AuthInfo, deadline?: number): Promise<ApplyOutcome> {
    return this.proposer.propose((id) => encodeRequest(req, id, who), deadline);
  }

  private refreshPeers(): void {
    const peers = new Map<bigint, string[]>();
    for (const m of this.kv.cluster.members()) if (m.id !== this.memberId) peers.set(m.id, m.peerURLs);
    this.transport.setPeers(peers);
  }
}
