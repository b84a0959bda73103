// How a member comes up: refuse a data dir marked removed or superseded; then
// bootstrap a new cluster, join an existing one (after checking the flags
// against the live membership), restart from its own state, or force a new
// single-member cluster from it. Nothing is written before every check passed.
import fs from 'node:fs';
import net from 'node:net';
import { hostPort } from '../common/urls.js';
import { crashAt } from '../common/failpoint.js';
import { randomInt } from 'node:crypto';
import { KvDamagedError, KvStore, restoreSnapshot } from '../kv/index.js';
import { bootstrapState, emptyState, forceNewClusterState } from '../raft/bootstrap.js';
import { RawNode } from '../raft/rawNode.js';
import { NONE, type PersistedState, type Snapshot } from '../raft/types.js';
import { recoveryHint } from '../storage/errors.js';
import { kvPath, metaPath } from '../storage/layout.js';
import type { MemberMeta } from '../storage/memberMeta.js';
import { RaftStorage } from '../storage/raftStorage.js';
import { PeerTransport } from '../transport/peerTransport.js';
import type { ServerConfig } from './config.js';
import { formatInitialCluster } from '../common/initialCluster.js';
import { ticksOf } from './config.js';
import { formatId, parseId } from '../common/ids.js';
import { clusterIdFor, memberIdFor, newClusterId } from '../storage/identity.js';
import type { Logger } from './logger.js';
import { readMarker, writeMarker } from '../storage/markers.js';
import { finishInterruptedInstall, MEMBER_KV_OPTIONS } from './apply.js';
import { Member, MemberExit } from './member.js';
import { referencedFile, removeReceivedSnapshots, senderOf } from './receivedSnapshots.js';
import { encodeMemberContext, type MemberRecord } from './membership.js';
import { memberTls, peerCredentialsFor } from './memberTls.js';
import { serveIdentityOnly } from '../transport/identityOnly.js';
import { discoverInitialCluster } from './discovery.js';
import { srvInitialCluster } from './discoverySrv.js';

const REMOVED = 'the member has been permanently removed from the cluster';

function openKv(cfg: ServerConfig): KvStore {
  try {
    return KvStore.open(kvPath(cfg.dataDir), MEMBER_KV_OPTIONS);
  } catch (e) {
    if (e instanceof KvDamagedError) throw new MemberExit(1, `data dir ${cfg.dataDir} is damaged: ${e.path}: ${e.detail}; ${recoveryHint(cfg.dataDir)}`);
    throw e;
  }
}

/**
 * A kv.db copied in from another member's (or another cluster's) data dir would
 * serve that member's state as ours: refuse it. A store that has no member ID yet
 * (written before it was recorded) gets ours. `forcedCluster`: the cluster an
 * interrupted --force-new-cluster gave kv.db (interruptedForce), accepted.
 * `installedFrom`: the leader whose snapshot a crash left in place as kv.db before
 * its member ID was replaced by ours (installedSender); replaced now.
 */
function checkKvIdentity(cfg: ServerConfig, kv: KvStore, meta: MemberMeta, forcedCluster?: bigint, installedFrom?: bigint): void {
  const file = kvPath(cfg.dataDir);
  const kvMember = kv.cluster.memberId();
  const kvCluster = kv.cluster.clusterId();
  const foreign = (what: string) =>
    new MemberExit(
      1,
      `data dir ${cfg.dataDir}: ${file} belongs to ${what}, but this data dir is member ${formatId(meta.memberId)} of cluster ${formatId(meta.clusterId)}; put back this member's own kv.db, or ${recoveryHint(cfg.dataDir)}`,
    );
  if (kvMember !== undefined && kvMember !== meta.memberId && kvMember !== installedFrom) throw foreign(`member ${formatId(kvMember)}`);
  if (kvCluster !== undefined && kvCluster !== meta.clusterId && kvCluster !== forcedCluster) throw foreign(`cluster ${formatId(kvCluster)}`);
  if (kvMember === undefined || kvMember === installedFrom) kv.writeLocal((c) => c.setMemberId(meta.memberId));
}

/**
 * The sender of the leader's snapshot that is kv.db now, if an install was cut
 * short before kv.db was made ours: the log's snapshot names a file received from
 * that member, and kv.db is at exactly that snapshot's index and term. (Moved in
 * by installLeaderSnapshot, or copied in by a restart's ensureKvCovers.)
 */
function installedSender(cfg: ServerConfig, snap: Snapshot | undefined, kv: KvStore): bigint | undefined {
  const file = snap && referencedFile(cfg.dataDir, snap.data);
  if (!file || kv.appliedIndex() !== snap.meta.index || kv.appliedTerm() !== snap.meta.term) return undefined;
  return senderOf(file);
}

/**
 * Every URL the member will listen on must be free before anything is written
 * (as etcd binds first): a port in use would otherwise leave a half-made data dir
 * whose next start keeps the flags of this one.
 */
async function checkListenUrls(cfg: ServerConfig): Promise<void> {
  const urls: Array<[string, string]> = [
    ...cfg.listenPeerUrls.map((u): [string, string] => ['peer', u]),
    ...cfg.listenClientUrls.map((u): [string, string] => ['client', u]),
    ...cfg.listenMetricsUrls.map((u): [string, string] => ['metrics', u]),
  ];
  for (const [kind, url] of urls) {
    const address = hostPort(url);
    const sep = address.lastIndexOf(':');
    const [host, port] = [address.slice(0, sep), address.slice(sep + 1)];
    const error = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
      const srv = net.createServer();
      srv.once('error', (e: NodeJS.ErrnoException) => resolve(e));
      srv.listen({ host, port: Number(port), exclusive: true }, () => srv.close(() => resolve(undefined)));
    });
    if (!error) continue;
    const why =
      error.code === 'EADDRINUSE'
        ? 'the address is in use (another member or program listens there)'
        : error.code === 'EADDRNOTAVAIL'
          ? 'no interface of this host has that address'
          : error.message;
    throw new MemberExit(1, `cannot listen on ${kind} URL ${url}: ${why}; nothing was written to ${cfg.dataDir}`);
  }
}

export async function startMember(cfg: ServerConfig, log: Logger): Promise<Member> {
  await checkListenUrls(cfg);
  const removed = readMarker(cfg.dataDir, 'removed');
  if (removed !== undefined) throw new MemberExit(78, `${REMOVED} (data dir ${cfg.dataDir}, marked ${removed.trim().split(' ')[0]}); do not restart it`);
  const superseded = readMarker(cfg.dataDir, 'superseded');
  if (superseded !== undefined)
    throw new MemberExit(78, `${superseded.trim().replace(/^\S+ /, '')} (data dir ${cfg.dataDir}); this member's cluster was replaced, do not restart it`);

  const hasState = fs.existsSync(metaPath(cfg.dataDir));
  if (cfg.forceNewCluster) {
    if (!hasState) throw new MemberExit(2, `--force-new-cluster needs an existing data dir, and ${cfg.dataDir} holds none`);
    const forced = readMarker(cfg.dataDir, 'forced');
    if (forced !== undefined) {
      throw new MemberExit(3, `--force-new-cluster was already applied to ${cfg.dataDir} (${forced.trim()}); start without the flag`);
    }
    return forceNewCluster(cfg, log);
  }
  if (hasState) {
    // As etcd: discovery is for the first start only; the data dir knows the cluster.
    if (cfg.discovery || cfg.discoverySrv) log.info('discovery is ignored: this member already has a data dir and its cluster');
    return restart(cfg, log);
  }
  if (cfg.initialClusterState === 'existing') return join(cfg, log);
  if (cfg.discovery) {
    // etcd's rule: with discovery, the discovery URL is the cluster token the IDs derive from.
    const token = cfg.discovery.url;
    const id = memberIdFor(cfg.initialAdvertisePeerUrls, token);
    // Registered but not a member yet: the peer URLs answer Identity, so an etcd member's start on this token can see us.
    const waiting = await serveIdentityOnly(cfg.listenPeerUrls, memberTls(cfg, log).peer, {
      cluster_id: '0',
      member_id: id.toString(),
      parent_cluster_id: '0',
      superseded: false,
      removed: false,
      members_json: '[]',
    });
    let initialCluster: Map<string, string[]>;
    try {
      initialCluster = await discoverInitialCluster(cfg.discovery, { id, name: cfg.name, peerUrls: cfg.initialAdvertisePeerUrls }, log);
    } finally {
      await waiting.close();
    }
    return bootstrap({ ...cfg, initialCluster, initialClusterToken: token }, log);
  }
  if (cfg.discoverySrv) {
    const { domain, serviceName } = cfg.discoverySrv;
    const initialCluster = await srvInitialCluster(domain, serviceName, { name: cfg.name, peerUrls: cfg.initialAdvertisePeerUrls });
    // etcd 3.4 (embed.Config.PeerURLsMapAndToken): https:// peers from SRV records and no
    // --peer-trusted-ca-file make the SRV domain the peer TLS server name, so every peer's
    // certificate must carry it as a SAN; set at this bootstrap only, as etcd does.
    const https = [...initialCluster.values()].flat().some((u) => u.startsWith('https:'));
    const peerTls = https && !cfg.peerTls.trustedCaFile ? { ...cfg.peerTls, serverName: domain } : cfg.peerTls;
    log.info(
      { initialCluster: formatInitialCluster(initialCluster), ...(peerTls.serverName ? { peerServerName: peerTls.serverName } : {}) },
      `initial cluster from DNS SRV records of ${domain}`,
    );
    return bootstrap({ ...cfg, initialCluster, peerTls }, log);
  }
  return bootstrap(cfg, log);
}

function raftFor(cfg: ServerConfig, id: bigint, state: PersistedState, applied: number): RawNode {
  const { heartbeatTick, electionTick } = ticksOf(cfg);
  return new RawNode(
    {
      id,
      electionTick,
      heartbeatTick,
      // The member may draw from the OS; only the core itself must stay deterministic.
      random: () => randomInt(0, 2 ** 31) / 2 ** 31,
      maxSizePerMsg: 1024 * 1024,
      maxInflightMsgs: 256,
      preVote: true,
      checkQuorum: true,
      lazyCommit: true,
      readOnly: 'safe',
      applied,
    },
    state,
  );
}

function sameUrls(a: string[], b: string[]): boolean {
  return [...a].sort().join(',') === [...b].sort().join(',');
}

function bootstrap(cfg: ServerConfig, log: Logger): Member {
  const members: MemberRecord[] = [...cfg.initialCluster].map(([, urls]) => ({
    id: memberIdFor(urls, cfg.initialClusterToken),
    name: '',
    peerURLs: urls,
    clientURLs: [],
    isLearner: false,
  }));
  // Our entry's URLs, as every member computes our ID (from SRV records they may name a host, not our advertised IP).
  const memberId = memberIdFor(cfg.initialCluster.get(cfg.name) ?? cfg.initialAdvertisePeerUrls, cfg.initialClusterToken);
  const clusterId = clusterIdFor(members.map((m) => m.id));
  const state = bootstrapState(members.map((m) => ({ id: m.id, context: encodeMemberContext(m, 0n) })));
  const { storage } = RaftStorage.open(cfg.dataDir, { identity: { memberId, clusterId } });
  storage.save({ hardState: state.hardState, entries: state.entries }, { sync: true });
  const kv = openKv(cfg);
  kv.writeLocal((c) => {
    c.setClusterId(clusterId);
    c.setMemberId(memberId);
    for (const m of members) c.putMember(m);
  });
  const l = log.child({ member: formatId(memberId), cluster: formatId(clusterId) });
  l.info({ initialCluster: formatInitialCluster(cfg.initialCluster) }, 'starting a new cluster');
  return new Member({ cfg, log: l, storage, kv, raft: raftFor(cfg, memberId, state, 0), memberId });
}

/** Phase 2 of a member add: check our flags against the live membership, then start empty. */
async function join(cfg: ServerConfig, log: Logger): Promise<Member> {
  const { electionMs } = cfg;
  const credentials = peerCredentialsFor(cfg, log);
  let reply: Awaited<ReturnType<typeof PeerTransport.identity>> | undefined;
  const errors: string[] = [];
  for (const [name, urls] of cfg.initialCluster) {
    if (name === cfg.name) continue;
    for (const url of urls) {
      try {
        reply = await PeerTransport.identity(url, { clusterId: 0n, from: 0n }, Math.max(electionMs, 2000), credentials);
        break;
      } catch (e) {
        errors.push(`${url}: ${(e as Error).message.split('\n')[0]}`);
      }
    }
    if (reply) break;
  }
  if (!reply)
    throw new MemberExit(1, `cannot fetch the cluster's membership from any peer in --initial-cluster (${errors.join('; ')}); check that the cluster is up`);
  const clusterId = BigInt(reply.cluster_id);
  const members = (JSON.parse(reply.members_json) as Array<Omit<MemberRecord, 'id'> & { id: string }>).map((m) => ({ ...m, id: parseId(m.id) }));
  const described = `{ClusterID:${formatId(clusterId)} Members:[${members.map((m) => `&{ID:${formatId(m.id)} PeerURLs:[${m.peerURLs.join(' ')}] Name:${m.name}}`).join(' ')}]}`;
  if (members.length !== cfg.initialCluster.size) throw new MemberExit(1, `error validating peerURLs ${described}: member count is unequal`);
  const flagged = [...cfg.initialCluster.values()];
  for (const m of members) {
    if (!flagged.some((urls) => sameUrls(urls, m.peerURLs))) {
      throw new MemberExit(
        1,
        `error validating peerURLs ${described}: PeerURLs: no match found for existing member (${formatId(m.id)}, ${m.peerURLs.join(',')})`,
      );
    }
  }
  const self = members.find((m) => sameUrls(m.peerURLs, cfg.initialAdvertisePeerUrls));
  if (!self) {
    throw new MemberExit(
      1,
      `error validating peerURLs ${described}: PeerURLs: no match found for this member (${cfg.initialAdvertisePeerUrls.join(',')}); add it first with 'lifeboat member add'`,
    );
  }
  const { storage } = RaftStorage.open(cfg.dataDir, { identity: { memberId: self.id, clusterId } });
  const kv = openKv(cfg);
  kv.writeLocal((c) => {
    c.setClusterId(clusterId);
    c.setMemberId(self.id);
    const parent = BigInt(reply.parent_cluster_id || '0');
    if (parent !== 0n) c.setParentClusterId(parent);
    for (const m of members) c.putMember(m);
  });
  const l = log.child({ member: formatId(self.id), cluster: formatId(clusterId) });
  l.info({ peers: members.length - 1 }, 'joining an existing cluster');
  return new Member({ cfg, log: l, storage, kv, raft: raftFor(cfg, self.id, emptyState(), 0), memberId: self.id });
}

/** Restart on existing state: the log is replayed from the KV's applied index. */
async function restart(cfg: ServerConfig, log: Logger): Promise<Member> {
  const opened = RaftStorage.open(cfg.dataDir);
  const { storage, state, member } = opened;
  for (const w of opened.warnings) log.warn({ ...w }, 'storage warning');
  let kv: KvStore | undefined;
  try {
    const snap = storage.latestSnapshot();
    finishInterruptedInstall(cfg.dataDir, snap, member.memberId, log);
    kv = openKv(cfg);
    checkKvIdentity(cfg, kv, member, undefined, installedSender(cfg, snap, kv));
    kv = await ensureKvCovers(cfg, snap, kv, state, member.memberId);
    const clusterId = kv.cluster.clusterId() ?? member.clusterId;
    const l = log.child({ member: formatId(member.memberId), cluster: formatId(clusterId) });
    await checkNotSuperseded(cfg, kv, member.memberId, clusterId, l);
    const aligned = alignLogWithKv(storage, state, kv, l);
    l.info({ applied: kv.appliedIndex(), commit: aligned.hardState.commit, lastIndex: lastIndexOf(aligned) }, 'restarting member');
    return new Member({ cfg, log: l, storage, kv, raft: raftFor(cfg, member.memberId, aligned, kv.appliedIndex()), memberId: member.memberId });
  } catch (e) {
    kv?.close();
    storage.close();
    throw e;
  }
}

/** The KV may lag the log (replayed at start) but never the snapshot the log starts from. */
async function ensureKvCovers(cfg: ServerConfig, snap: Snapshot | undefined, kv: KvStore, state: PersistedState, memberId: bigint): Promise<KvStore> {
  if (kv.appliedIndex() >= state.snapshot.index) {
    removeReceivedSnapshots(cfg.dataDir);
    return kv;
  }
  // A snapshot from the leader is recorded as a reference to the file it arrived in (receivedSnapshots.ts).
  const file = snap && referencedFile(cfg.dataDir, snap.data);
  if (!snap || snap.data.length === 0 || (file !== undefined && !fs.existsSync(file))) {
    throw new MemberExit(
      1,
      `data dir ${cfg.dataDir}: the KV store is at index ${kv.appliedIndex()} but the raft log starts after ${state.snapshot.index}; rebuild this member from a healthy one ('lifeboat recover plan --from-data-dir ${cfg.dataDir}')`,
    );
  }
  kv.close();
  await restoreSnapshot(file ?? snap.data, kvPath(cfg.dataDir));
  if (__LIFEBOAT_FAULTS__) crashAt('snapshot-install:restored');
  removeReceivedSnapshots(cfg.dataDir);
  const restored = openKv(cfg);
  restored.writeLocal((c) => c.setMemberId(memberId));
  return restored;
}

const lastIndexOf = (s: PersistedState) => s.entries.at(-1)?.index ?? s.snapshot.index;

/**
 * kv.db may hold entries the log lost in a power cut: a leader applies entries
 * its followers made durable before its own fsync returns, and a checkpoint can
 * keep that apply while the log loses its unsynced tail. Everything kv.db applied
 * was committed, so the log restarts at a snapshot of kv.db's state; otherwise
 * this member could later append other entries at indexes kv.db already holds.
 * (kv.db ahead of the commit index but not of the last entry needs no change:
 * the member skips those entries when they are applied again.)
 */
function alignLogWithKv(storage: RaftStorage, state: PersistedState, kv: KvStore, log: Logger): PersistedState {
  const applied = kv.appliedIndex();
  if (applied <= lastIndexOf(state)) return state;
  // The log is about to rely on kv.db's state: make it durable first.
  kv.makeDurable();
  const byId = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);
  const members = kv.cluster.members();
  const ids = (learner: boolean) =>
    members
      .filter((m) => m.isLearner === learner)
      .map((m) => m.id)
      .sort(byId);
  const term = kv.appliedTerm();
  const hs = state.hardState;
  const aligned: PersistedState = {
    snapshot: { index: applied, term, conf: { voters: ids(false), learners: ids(true) } },
    entries: [],
    hardState: hs.term >= term ? { ...hs, commit: applied } : { term, vote: NONE, commit: applied },
  };
  log.warn(
    { kvApplied: applied, logLastIndex: lastIndexOf(state), commit: hs.commit },
    "kv.db is ahead of the raft log (a power cut): the log restarts at kv.db's applied index",
  );
  storage.rewrite(aligned);
  return aligned;
}

/**
 * Before campaigning or serving, ask every peer we can reach who they are: if our
 * cluster was replaced (a recovery) or we were removed, stop for good. Bounded by
 * one election timeout.
 */
async function checkNotSuperseded(cfg: ServerConfig, kv: KvStore, memberId: bigint, clusterId: bigint, log: Logger): Promise<void> {
  const peers = kv.cluster.members().filter((m) => m.id !== memberId);
  const timeout = Math.max(cfg.electionMs, 1000);
  const credentials = peerCredentialsFor(cfg, log);
  const answers = await Promise.allSettled(
    peers.flatMap((p) => p.peerURLs.slice(0, 1).map((url) => PeerTransport.identity(url, { clusterId, from: memberId }, timeout, credentials))),
  );
  for (const a of answers) {
    if (a.status !== 'fulfilled') continue;
    if (a.value.superseded) {
      const msg = `cluster superseded by ${formatId(BigInt(a.value.cluster_id))}`;
      log.warn({ supersededBy: formatId(BigInt(a.value.cluster_id)) }, msg);
      writeMarker(cfg.dataDir, 'superseded', `${new Date().toISOString()} ${msg}\n`);
      throw new MemberExit(78, `${msg}; this member's cluster was replaced by a recovery, do not restart it`);
    }
    if (a.value.removed) {
      log.warn({}, REMOVED);
      writeMarker(cfg.dataDir, 'removed', `${new Date().toISOString()} ${REMOVED}\n`);
      throw new MemberExit(78, REMOVED);
    }
  }
}

/**
 * A force that stopped after kv.db took the new cluster and before the data dir did
 * (a crash, a failed fsync): kv.db names this data dir's cluster as its parent. The
 * next --force-new-cluster finishes it with that cluster ID instead of refusing the
 * only copy of the data as foreign.
 */
function interruptedForce(kv: KvStore, meta: MemberMeta): bigint | undefined {
  const kvCluster = kv.cluster.clusterId();
  if (kvCluster === undefined || kvCluster === meta.clusterId) return undefined;
  return kv.cluster.parentClusterId() === meta.clusterId ? kvCluster : undefined;
}

/**
 * --force-new-cluster: this member alone, with every entry of its log kept, a new
 * cluster ID recording its parent, and a marker so it is never applied twice.
 */
async function forceNewCluster(cfg: ServerConfig, log: Logger): Promise<Member> {
  const opened = RaftStorage.open(cfg.dataDir);
  const { storage, member } = opened;
  let { state } = opened;
  let kv: KvStore | undefined;
  let resumed: bigint | undefined;
  try {
    kv = openKv(cfg);
    resumed = interruptedForce(kv, member);
    checkKvIdentity(cfg, kv, member, resumed);
    kv = await ensureKvCovers(cfg, storage.latestSnapshot(), kv, state, member.memberId);
    state = alignLogWithKv(storage, state, kv, log);
  } catch (e) {
    kv?.close();
    storage.close();
    throw e;
  }
  // kv.db holds this cluster, none yet, or (resumed) the one it is being forced to: checkKvIdentity.
  const oldClusterId = member.clusterId;
  const ancestors = [kv.cluster.parentClusterId()].filter((x): x is bigint => x !== undefined && x !== 0n);
  const clusterId = resumed ?? newClusterId(oldClusterId, member.memberId, ancestors);
  const forced = forceNewClusterState(state, member.memberId, { discardUncommitted: false });
  storage.rewrite(forced);
  const self = kv.cluster.member(member.memberId);
  kv.writeLocal((c) => {
    c.setParentClusterId(oldClusterId);
    c.setClusterId(clusterId);
    c.clearMembers();
    c.putMember({ id: member.memberId, name: self?.name ?? '', peerURLs: cfg.initialAdvertisePeerUrls, clientURLs: self?.clientURLs ?? [], isLearner: false });
  });
  storage.setClusterId(clusterId);
  writeMarker(cfg.dataDir, 'forced', `${new Date().toISOString()} forced new cluster ${formatId(clusterId)} from ${formatId(oldClusterId)}\n`);
  const l = log.child({ member: formatId(member.memberId), cluster: formatId(clusterId) });
  l.warn({ parent: formatId(oldClusterId), keptEntries: forced.entries.length }, 'forced a new cluster from this data dir');
  return new Member({ cfg, log: l, storage, kv, raft: raftFor(cfg, member.memberId, forced, kv.appliedIndex()), memberId: member.memberId });
}
