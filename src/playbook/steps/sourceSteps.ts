// Steps that look at what survived and build the new cluster's first member:
// inspect-sources, fence-old-members, verify-snapshot, restore. A backup point
// (STORE@POINT) is the snapshot materialize-backup made of it (backupSourceSteps.ts).
import fs from 'node:fs';
import { writeFileDurably } from '../../common/durableFile.js';
import path from 'node:path';
import { DataDirLockedError } from '../../storage/errors.js';
import { RefusedError } from '../../common/errors.js';
import { formatId, parseHexId, parseIdText } from '../../common/ids.js';
import { probeOldMembers, type OldMember } from '../../recovery/fence.js';
import { fenceDataDir, readFenceRecord } from '../../recovery/fenceDataDir.js';
import { inspectDataDir } from '../../recovery/inspect.js';
import { restoreDataDir, restoreSnapshot, type RestoreOptions } from '../../recovery/restore.js';
import { snapshotKind, snapshotStatus } from '../../recovery/snapshotFormat.js';
import type { RuntimeName } from '../../common/memberCommand.js';
import { parseRuntimeChoice, resolveRuntime, runtimeOfDataDir, type RuntimeChoice } from '../../ops/runtime.js';
import { restoreEtcdDataDir, restoreEtcdSnapshotFile } from '../../recovery/etcdRestore.js';
import { SafetyCheckError, type StepContext, type StepDefinition } from '../stepTypes.js';
import { planRevisionBump, DEFAULT_MAX_BUMP_WRITES, type BumpPlan } from '../../recovery/revisionBump.js';
import { etcdRestoreMarksCompacted } from '../../recovery/etcdRestore.js';
import { etcdDbFile } from '../../etcdfile/etcdDataDir.js';
import { scanEtcdDb } from '../../etcdfile/index.js';
import { backupRecordOf, type BackupRecord } from './backupSourceSteps.js';

type Source = { kind: 'data-dir' | 'snapshot'; path: string; walDir?: string; backup?: BackupRecord };

const walDirParam = { type: 'string' as const, default: '', description: "an etcd source's separate WAL directory (its --wal-dir)" };

/** The source named by a step's `source` (and `wal-dir`) parameters; a backup point, the snapshot this run materialized of it. */
function sourceOf(p: Record<string, unknown>, ctx: Pick<StepContext, 'runDir'>): Source {
  const file = String(p.source);
  const backup = backupRecordOf(file, ctx);
  if (backup) return { kind: 'snapshot', path: backup.snapshot, backup };
  if (!fs.existsSync(file)) throw new Error(`source ${file} does not exist`);
  const walDir = typeof p['wal-dir'] === 'string' && p['wal-dir'] !== '' ? path.resolve(p['wal-dir']) : undefined;
  return { kind: fs.statSync(file).isDirectory() ? 'data-dir' : 'snapshot', path: path.resolve(file), ...(walDir ? { walDir } : {}) };
}

/** inspectDataDir of a data-dir source, with its separate WAL directory if it has one. */
function inspectSource(src: Source): ReturnType<typeof inspectDataDir> {
  return inspectDataDir(src.path, src.walDir ? { walDir: src.walDir } : {});
}

/** The old cluster's members, as the source recorded them. */
async function oldMembersOf(src: Source): Promise<{ clusterId: string; memberId?: string; members: OldMember[] }> {
  // A store keeps the cluster's ID, not its membership (the snapshot's is the replay member's).
  if (src.backup) return { clusterId: src.backup.clusterId, members: [] };
  if (src.kind === 'snapshot') {
    const s = await snapshotStatus(src.path);
    return { clusterId: s.clusterId, members: s.members };
  }
  const r = await inspectSource(src);
  return { clusterId: r.clusterId, memberId: r.memberId, members: r.members };
}

/** The old cluster (before) and the restored one-member cluster (after), as the run records them. */
function recoveryIds(old: { clusterId: string; members: OldMember[] }, clusterId: string, memberId: string): Record<string, unknown> {
  return { clusterIdBefore: old.clusterId, memberIdsBefore: old.members.map((m) => m.id), clusterIdAfter: clusterId, memberIdsAfter: [memberId] };
}

/**
 * A source with etcd's auth enabled gives a new cluster with auth enabled, whose
 * member calls (add, promote) are root's: the credentials are asked for (or
 * refused for want of them) here, before anything changes.
 */
async function requireRootCredentials(authEnabled: boolean, ctx: StepContext): Promise<void> {
  if (!authEnabled) return;
  const creds = ctx.connection.credentials;
  if (!creds)
    throw new SafetyCheckError(
      "the source has etcd's auth enabled, so the recovered cluster will too and its member calls need root's credentials: run again with --user root (the password from --password, LIFEBOAT_PASSWORD or ETCDCTL_PASSWORD, or asked on a terminal)",
    );
  if (typeof creds.password === 'function') await creds.password();
  ctx.event('note', `the source has etcd's auth enabled: member calls run as ${creds.user}`);
}

/**
 * The old data dirs to fence must be the source's cluster's: another cluster's
 * member is not superseded by this recovery, and fencing it would stop a cluster
 * nobody meant to touch. Refused here, before anything changes. A dir already
 * fenced (a resumed run) or unreadable is left to the fence step.
 */
async function refuseOtherClusters(source: string, sourceCluster: string, oldDirs: string[], ctx: StepContext): Promise<void> {
  const id = (text: string) => {
    const v = parseHexId(text);
    return v === undefined || v === 0n ? null : formatId(v);
  };
  const mine = id(sourceCluster);
  const byCluster = new Map<string, string[]>();
  for (const d of oldDirs) {
    const dir = path.resolve(d);
    if (!fs.existsSync(dir) || readFenceRecord(dir)) continue;
    const r = await inspectDataDir(dir).catch(() => undefined);
    const theirs = r ? id(r.clusterId) : null;
    if (theirs === null) continue;
    if (mine !== null && theirs !== mine)
      throw new SafetyCheckError(
        `old data dir ${dir} is of cluster ${theirs}, not the source's cluster ${mine} (${source}): another cluster's member is never fenced by this recovery; take it out of old-data-dirs`,
      );
    byCluster.set(theirs, [...(byCluster.get(theirs) ?? []), dir]);
  }
  if (byCluster.size > 1)
    throw new SafetyCheckError(
      `old-data-dirs span ${byCluster.size} clusters (${[...byCluster].map(([c, dirs]) => `${c}: ${dirs.join(', ')}`).join('; ')}) and the source's cluster is unknown: give only the source's cluster's old data dirs`,
    );
  if (mine === null && byCluster.size === 1)
    ctx.event('warning', `the source's cluster is unknown: the old data dirs (cluster ${[...byCluster.keys()][0]}) are taken to be its cluster's`);
}

export const inspectSources: StepDefinition = {
  type: 'inspect-sources',
  description: "Read the recovery source (a stopped survivor's data dir or a snapshot) and report what it holds; refuse old data dirs of another cluster.",
  params: {
    source: { type: 'path', required: true, description: 'data dir or snapshot file', check: 'source' },
    'wal-dir': walDirParam,
    'old-data-dirs': { type: 'list', default: [], description: "other old data dirs on this host: each must be the source's cluster's" },
  },
  describe: (p) => [`read ${String(p.source)} (read-only)`],
  async run(p, ctx) {
    const src = sourceOf(p, ctx);
    const oldDirs = (p['old-data-dirs'] as string[] | undefined) ?? [];
    if (src.kind === 'snapshot') {
      const s = await snapshotStatus(src.path);
      if (src.backup) {
        await refuseOtherClusters(src.backup.source, src.backup.clusterId, oldDirs, ctx);
        await requireRootCredentials(s.etcd?.authEnabled === true, ctx);
        ctx.progress(`backup point: ${s.etcd?.liveKeys ?? s.totalKeys} keys at revision ${src.backup.revision}, cluster ${src.backup.clusterId}`);
        return { kind: 'backup', clusterId: src.backup.clusterId, revision: src.backup.revision, keys: s.etcd?.liveKeys ?? s.totalKeys, members: 0 };
      }
      await refuseOtherClusters(src.path, s.clusterId, oldDirs, ctx);
      await requireRootCredentials(s.etcd?.authEnabled === true, ctx);
      ctx.progress(`snapshot: ${s.totalKeys} keys at revision ${s.revision}, cluster ${s.clusterId}`);
      return { kind: src.kind, clusterId: s.clusterId, revision: s.revision, keys: s.totalKeys, members: s.members.length };
    }
    let r;
    try {
      r = await inspectSource(src);
    } catch (e) {
      if (e instanceof DataDirLockedError) throw new SafetyCheckError(`${e.message}: the source member must be stopped before recovery`);
      throw e;
    }
    await refuseOtherClusters(src.path, r.clusterId, oldDirs, ctx);
    await requireRootCredentials(r.authEnabled === true, ctx);
    ctx.progress(`data dir: last term ${r.lastTerm} index ${r.lastIndex}, commit ${r.commitIndex}, ${r.keyCount} keys at revision ${r.kvRevision}`);
    if (r.uncommitted.count > 0)
      ctx.event('note', `${r.uncommitted.count} entries past the commit index (${r.uncommitted.from}..${r.uncommitted.to})`, r.uncommitted);
    for (const d of r.damage) ctx.event('warning', `${src.path}: ${d}`);
    const me = r.members.find((m) => m.id === r.memberId);
    return {
      kind: src.kind,
      clusterId: r.clusterId,
      memberId: r.memberId,
      name: me?.name ?? '',
      peerUrl: me?.peerURLs[0] ?? '',
      revision: r.kvRevision,
      keys: r.keyCount,
      lastIndex: r.lastIndex,
      commitIndex: r.commitIndex,
      uncommitted: r.uncommitted.count,
    };
  },
};

export const fenceOldMembers: StepDefinition = {
  type: 'fence-old-members',
  description:
    "Probe every old member's peer and client URLs; refuse to go on if any answers (--assume-dead names the ones to treat as dead anyway). A resumed run probes again until it has started a member.",
  recheckOnResume: { until: ['start-member', 'add-learner'] },
  params: {
    source: { type: 'path', required: true, description: 'the recovery source (its member list is the old cluster)' },
    'assume-dead': { type: 'list', default: [], description: 'old member IDs (hex) or names to treat as dead even if they answer' },
    'skip-urls': { type: 'list', default: [], description: 'URLs not to probe (e.g. the survivor peer URL the recovered member will take over)' },
    'wal-dir': walDirParam,
  },
  describe: (p) => [
    `probe the peer and client URLs of every member of ${String(p.source)}'s old cluster${(p['assume-dead'] as string[]).length ? `, treating ${(p['assume-dead'] as string[]).join(', ')} as dead` : ''}`,
  ],
  async run(p, ctx) {
    const src = sourceOf(p, ctx);
    if (src.kind === 'data-dir') {
      // The survivor itself must be stopped: its data dir is locked while it runs.
      try {
        await inspectSource(src);
      } catch (e) {
        if (e instanceof DataDirLockedError) throw new SafetyCheckError(`${e.message}: stop the source member first`);
        throw e;
      }
    }
    const old = await oldMembersOf(src);
    const skip = new Set(p['skip-urls'] as string[]);
    const members = old.members.map((m) => ({ ...m, peerURLs: m.peerURLs.filter((u) => !skip.has(u)), clientURLs: m.clientURLs.filter((u) => !skip.has(u)) }));
    if (src.backup) ctx.progress(`the store does not record cluster ${old.clusterId}'s members: none to probe (stop the old members yourself)`);
    else ctx.progress(`probing ${members.length} old members of cluster ${old.clusterId}`);
    const r = await probeOldMembers(members, p['assume-dead'] as string[]);
    for (const a of r.assumedDead)
      ctx.event('override', `--assume-dead ${a.member.id} (${a.member.name || 'unnamed'}): it answered at ${a.url} but the operator declared it dead`, {
        member: a.member.id,
        url: a.url,
      });
    if (r.alive.length > 0) {
      const who = r.alive.map((a) => `${a.member.name || a.member.id} (${a.member.id}) answers at ${a.url}`).join('; ');
      throw new SafetyCheckError(
        `old members are alive: ${who}. Stop them, or if they are truly gone, pass assume-dead=${r.alive.map((a) => a.member.id).join(',')}`,
        'assume-dead',
      );
    }
    return { probed: r.probed, alive: 0, assumedDead: r.assumedDead.map((a) => a.member.id) };
  },
};

export const verifySnapshot: StepDefinition = {
  type: 'verify-snapshot',
  description: "Check a snapshot file's sha256 trailer and read its revision, keys and members.",
  params: { file: { type: 'path', required: true, description: 'the snapshot file' } },
  describe: (p) => [`verify ${String(p.file)} (read-only)`],
  async run(p, ctx) {
    const s = await snapshotStatus(String(p.file));
    ctx.progress(`sha256 verified; revision ${s.revision}, ${s.totalKeys} keys`);
    return { revision: s.revision, keys: s.totalKeys, sha256: s.sha256, clusterId: s.clusterId };
  },
};

export const restore: StepDefinition = {
  type: 'restore',
  description: 'Build a new data dir from the source: a one-member cluster with a new cluster ID recording its parent.',
  params: {
    source: { type: 'path', required: true, description: 'data dir or snapshot file', check: 'source' },
    'data-dir': { type: 'path', required: true, description: 'the new data dir (must not exist or be empty)', check: 'new-data-dir' },
    name: { type: 'string', required: true, description: "the recovered member's name" },
    'peer-url': { type: 'url', required: true, description: "the recovered member's peer URL (keep the survivor's so old members learn they were superseded)" },
    'initial-cluster-token': { type: 'string', default: 'etcd-cluster', description: 'token for the member ID' },
    'discard-uncommitted': { type: 'bool', default: false, description: "drop the entries past the survivor's commit index" },
    'bump-revision': { type: 'int', default: 0, description: 'raise the revision (with mark-compacted) so watchers relist' },
    'mark-compacted': { type: 'bool', default: false, description: 'mark the revisions before the new one compacted' },
    'last-revision': {
      type: 'int',
      default: 0,
      description:
        "the cluster's last recorded revision known beside the source (a survivor's); a backup point's store gives its own: an older snapshot source gets the revision bump",
    },
    'old-data-dir': {
      type: 'string',
      default: '',
      description:
        "a stopped etcd member's old data dir whose revision, read when the restore starts, also counts as the cluster's last recorded one (the kubeadm and Debian recoveries: it kept serving until they stopped it)",
    },
    'max-bump-writes': {
      type: 'int',
      default: DEFAULT_MAX_BUMP_WRITES,
      description: 'the largest revision bump reached by writes on a runtime without mark-compacted (etcd 3.4)',
    },
    runtime: {
      type: 'string',
      default: 'auto',
      description:
        "the new member's runtime: auto (the source's: an etcd data dir or etcd snapshot gives etcd), lifeboat (an etcd snapshot can become a Lifeboat member), etcd",
    },
    'etcd-bin': { type: 'string', default: '', description: 'the etcd binary (default: etcd on PATH); etcdctl or etcdutl beside it restores' },
    'wal-dir': walDirParam,
  },
  describe: (p) => [
    `create ${String(p['data-dir'])} from ${String(p.source)}: member ${String(p.name)} at ${String(p['peer-url'])}, alone, with a new cluster ID`,
  ],
  async run(p, ctx) {
    const target = String(p['data-dir']);
    const src = sourceOf(p, ctx);
    const runtime = restoreRuntime(src, parseRuntimeChoice(typeof p.runtime === 'string' ? p.runtime : 'auto', 'runtime'));
    if (runtime === 'etcd') return restoreIntoEtcd(p, ctx, src);
    if (fs.existsSync(target) && fs.readdirSync(target).length > 0) {
      // Done before (an interrupted run resumed): accept it if it came from this source.
      const old = await oldMembersOf(src);
      const done = await inspectDataDir(target).catch(() => undefined);
      if (done && done.parentClusterId === old.clusterId) {
        ctx.progress(`${target} was already restored from ${src.path}; keeping it`);
        ctx.event('ids', `cluster ${done.clusterId} (member ${done.memberId}) replaces ${old.clusterId}`, recoveryIds(old, done.clusterId, done.memberId));
        return {
          clusterId: done.clusterId,
          parentClusterId: done.parentClusterId,
          memberId: done.memberId,
          revision: done.kvRevision,
          keys: done.keyCount,
          reused: true,
          runtime: 'lifeboat',
          'bump-to': 0,
          'bumped-to': 0,
        };
      }
    }
    const bump = await revisionBumpOf(p, src, 'lifeboat', ctx);
    const opts = withBump(restoreOptions(p), bump, src);
    const old = await oldMembersOf(src);
    const r = src.kind === 'snapshot' ? await restoreSnapshot(src.path, opts) : await restoreDataDir(src.path, opts);
    if (src.backup) fs.rmSync(src.path, { force: true });
    ctx.progress(`restored ${r.keys} keys at revision ${r.revision}: cluster ${r.clusterId} (parent ${r.parentClusterId})`);
    ctx.event('note', `new cluster ${r.clusterId} replaces ${r.parentClusterId}`, {
      clusterId: r.clusterId,
      parent: r.parentClusterId,
      memberId: r.memberId,
      ...recoveryIds(old, r.clusterId, r.memberId),
    });
    return {
      clusterId: r.clusterId,
      parentClusterId: r.parentClusterId,
      memberId: r.memberId,
      revision: r.revision,
      keys: r.keys,
      uncommittedKept: r.uncommittedKept,
      reused: false,
      runtime,
      'bump-to': 0,
      'bumped-to': bumpedTo(bump),
      ...(bump ? { 'revision-bump': bump.line } : {}),
    };
  },
};

/**
 * The revision bump rule (revisionBump.ts) for a snapshot or backup source older
 * than the cluster's last recorded revision: the store's for a backup point, and
 * the `last-revision` given (a survivor's). Not applied when the operator set
 * bump-revision himself, nor to a data dir (the survivor is the newest there is).
 * Said in the run's audit record.
 */
/** The revision of a stopped etcd data dir's db, read without etcd; 0 when there is none or it cannot be read. */
function etcdDataDirRevision(dir: string): number {
  if (!dir || !fs.existsSync(etcdDbFile(dir))) return 0;
  try {
    return scanEtcdDb(etcdDbFile(dir)).currentRevision;
  } catch {
    return 0;
  }
}

async function revisionBumpOf(p: Record<string, unknown>, src: Source, runtime: RuntimeName, ctx: StepContext): Promise<BumpPlan | undefined> {
  if (src.kind !== 'snapshot' || Number(p['bump-revision'] ?? 0) > 0) return undefined;
  // The old member was stopped after last-revision was read: what it wrote since counts too.
  const given = Math.max(
    Number(p['last-revision'] ?? 0),
    etcdDataDirRevision(typeof p['old-data-dir'] === 'string' && p['old-data-dir'] ? path.resolve(p['old-data-dir']) : ''),
  );
  const stored = src.backup?.lastRevision ?? 0;
  if (given <= 0 && stored <= 0) return undefined;
  const sourceRevision = src.backup?.revision ?? (await snapshotStatus(src.path)).revision;
  let plan: BumpPlan;
  try {
    plan = planRevisionBump({
      sourceRevision,
      lastRevision: Math.max(given, stored),
      lastFrom: stored >= given ? 'in the backup store' : 'a survivor',
      markCompacted: runtime === 'lifeboat' || etcdRestoreMarksCompacted(typeof p['etcd-bin'] === 'string' && p['etcd-bin'] ? p['etcd-bin'] : undefined),
      maxWrites: Number(p['max-bump-writes'] ?? DEFAULT_MAX_BUMP_WRITES),
    });
  } catch (e) {
    // A gap too large for writes: refused before the data dir is made (exit 3); max-bump-writes overrides it.
    if (e instanceof RefusedError) throw new SafetyCheckError(e.message, 'max-bump-writes');
    throw e;
  }
  ctx.progress(plan.line);
  ctx.event('note', plan.line, { revisionBump: { ...plan } });
  return plan;
}

/** The revision the bump raises the cluster to (in the restore, or by writes once it serves); 0 without one. */
const bumpedTo = (bump: BumpPlan | undefined) => (bump && bump.method !== 'none' ? bump.target : 0);

/** The restore's options with a mark-compacted bump, and the old cluster's ID for a backup point. */
function withBump<T extends RestoreOptions>(o: T, bump: BumpPlan | undefined, src: Source): T {
  return {
    ...o,
    ...(bump?.method === 'mark-compacted' ? { bumpRevision: bump.bump, markCompacted: true } : {}),
    ...(src.backup ? { parentClusterId: BigInt(`0x${src.backup.clusterId}`) } : {}),
  };
}

/** The restore step's parameters as the restore functions of either runtime take them. */
function restoreOptions(p: Record<string, unknown>): RestoreOptions {
  return {
    dataDir: String(p['data-dir']),
    name: String(p.name),
    initialAdvertisePeerUrls: [String(p['peer-url'])],
    initialClusterToken: String(p['initial-cluster-token']),
    discardUncommitted: !!p['discard-uncommitted'],
    bumpRevision: Number(p['bump-revision'] ?? 0),
    markCompacted: !!p['mark-compacted'],
  };
}

/** The new member's runtime: the source's unless forced; only an etcd snapshot may become either. */
function restoreRuntime(src: Source, choice: RuntimeChoice): RuntimeName {
  if (src.backup)
    return src.backup.runtime === 'etcd'
      ? choice === 'lifeboat'
        ? 'lifeboat'
        : 'etcd'
      : resolveRuntime(choice, 'lifeboat', `the backup ${src.backup.source} (of a Lifeboat cluster)`);
  if (src.kind === 'data-dir') return resolveRuntime(choice, runtimeOfDataDir(src.path), `the source data dir ${src.path}`);
  const kind = snapshotKind(src.path);
  if (kind.format === 'etcd') return choice === 'lifeboat' ? 'lifeboat' : 'etcd';
  return resolveRuntime(choice, 'lifeboat', `the snapshot ${src.path} (a Lifeboat snapshot)`);
}

/**
 * The etcd path of restore: etcd's own tools build the data dir. Its result is
 * kept in the run's directory, so a resumed run finds a restore it already made.
 */
async function restoreIntoEtcd(p: Record<string, unknown>, ctx: StepContext, src: Source): Promise<Record<string, unknown>> {
  const target = String(p['data-dir']);
  const record = path.join(ctx.runDir, `restore-${String(p.name)}.json`);
  const old = await oldMembersOf(src);
  if (fs.existsSync(target) && fs.readdirSync(target).length > 0 && fs.existsSync(record)) {
    const done = JSON.parse(fs.readFileSync(record, 'utf8')) as Record<string, unknown>;
    if (done.dataDir === path.resolve(target)) {
      ctx.progress(`${target} was already restored from ${src.path}; keeping it`);
      return { ...done, reused: true };
    }
  }
  const bump = await revisionBumpOf(p, src, 'etcd', ctx);
  const opts = {
    ...withBump(restoreOptions(p), bump, src),
    ...(p['etcd-bin'] ? { etcdBin: p['etcd-bin'] as string } : {}),
    ...(src.walDir ? { walDir: src.walDir } : {}),
    onProgress: (t: string) => ctx.progress(t),
    onWarning: (t: string) => ctx.event('warning', t),
  };
  const r =
    src.kind === 'snapshot'
      ? await restoreEtcdSnapshotFile(src.path, opts)
      : await restoreEtcdDataDir(src.path, { ...opts, parentClusterId: BigInt(`0x${old.clusterId || '0'}`) });
  ctx.progress(`restored ${r.keys} keys at revision ${r.revision} into etcd ${r.etcdVersion}: cluster ${r.clusterId} (parent ${r.parentClusterId})`);
  ctx.event('note', `new etcd cluster ${r.clusterId} replaces ${r.parentClusterId} (token ${r.initialClusterToken})`, {
    clusterId: r.clusterId,
    parent: r.parentClusterId,
    memberId: r.memberId,
    initialClusterToken: r.initialClusterToken,
    ...recoveryIds(old, r.clusterId, r.memberId),
  });
  const out = {
    clusterId: r.clusterId,
    parentClusterId: r.parentClusterId,
    memberId: r.memberId,
    revision: r.revision,
    keys: r.keys,
    uncommittedKept: r.uncommittedKept,
    runtime: 'etcd',
    'initial-cluster-token': r.initialClusterToken,
    dataDir: r.dataDir,
    'bump-to': bump?.method === 'writes' ? bump.target : 0,
    'bumped-to': bumpedTo(bump),
    ...(bump ? { 'revision-bump': bump.line } : {}),
  };
  fs.mkdirSync(ctx.runDir, { recursive: true });
  // The record first, durably: a resumed run must find the restore made once the replayed snapshot is gone.
  await writeFileDurably(record, `${JSON.stringify(out)}\n`);
  if (src.backup) fs.rmSync(src.path, { force: true });
  return { ...out, reused: false };
}

/** Old member IDs as hex without leading zeros, for matching however they were written. */
function idKey(id: string): string {
  return id.toLowerCase().replace(/^0x/, '').replace(/^0+/, '');
}

export const fenceOldDataDirs: StepDefinition = {
  type: 'fence-old-data-dirs',
  description:
    "After the new cluster is verified: fence the old data dirs on this host (the source's and the others given) so their members never serve again (reversible: 'datadir unfence'); for every other old member print the command to run on its host and wait for the operator to confirm it (scripted: fenced=NAME,...).",
  params: {
    source: { type: 'path', required: true, description: 'the recovery source (fenced if it is a data dir; its member list is the old cluster)' },
    'superseded-by': { type: 'string', required: true, description: 'the new cluster ID (hex, or decimal with more than 16 digits)' },
    'old-data-dirs': { type: 'list', default: [], description: 'other old data dirs on this host' },
    fenced: { type: 'list', default: [], description: 'old members (names or IDs) the operator has fenced on their own hosts' },
    'assume-dead': { type: 'list', default: [], description: 'old members that cannot be reached at all: not asked about, recorded as unfenced' },
    'wal-dir': walDirParam,
  },
  describe: (p) => [
    `fence ${[String(p.source), ...(p['old-data-dirs'] as string[])].join(', ')} (superseded by ${String(p['superseded-by'])}); ask for the other old members`,
  ],
  async run(p, ctx) {
    const src = sourceOf(p, ctx);
    const by = parseIdText(String(p['superseded-by']));
    if (by === undefined || by === 0n) throw new Error(`superseded-by ${String(p['superseded-by'])} is not a cluster ID`);
    // Who the old members were, read before the source is fenced (fenced, it no longer reads).
    const fencedRecord = src.kind === 'data-dir' ? readFenceRecord(src.path) : undefined;
    const old = fencedRecord ? undefined : await oldMembersOf(src).catch(() => undefined);
    // Checked again before fencing anything: `resume --set old-data-dirs=...` may have changed them.
    if (old) await refuseOtherClusters(src.path, old.clusterId, p['old-data-dirs'] as string[], ctx);
    const dirs = [...(src.kind === 'data-dir' ? [src.path] : []), ...(p['old-data-dirs'] as string[]).map((d) => path.resolve(d))];
    const covered = new Set<string>();
    const done: string[] = [];
    for (const dir of dirs) {
      const who = readFenceRecord(dir) ? undefined : await inspectDataDir(dir).catch(() => undefined);
      if (who) covered.add(idKey(who.memberId));
      const r = fenceDataDir(dir, by);
      done.push(dir);
      ctx.progress(r.alreadyFenced ? `${dir} was already fenced` : `fenced ${dir} (${r.runtime})${r.movedTo ? `: member/ moved to ${r.movedTo}/` : ''}`);
      ctx.event('fence', `fenced ${dir} (${r.runtime}, superseded by ${r.supersededBy})`, {
        dataDir: dir,
        runtime: r.runtime,
        movedTo: r.movedTo ?? null,
        member: who?.memberId ?? null,
        name: who?.members.find((m) => m.id === who.memberId)?.name ?? null,
      });
    }
    const confirmed = new Set((p.fenced as string[]).map((x) => x.toLowerCase()));
    const dead = new Set((p['assume-dead'] as string[]).map((x) => x.toLowerCase()));
    const matches = (set: Set<string>, m: OldMember) => set.has(m.name.toLowerCase()) || [...set].some((x) => idKey(x) === idKey(m.id));
    const remote: string[] = [];
    for (const m of old?.members ?? []) {
      if (covered.has(idKey(m.id)) || (old?.memberId && idKey(old.memberId) === idKey(m.id))) continue;
      const who = `${m.name || 'unnamed'} (${m.id})`;
      const host = m.peerURLs[0] ? new URL(m.peerURLs[0]).hostname : 'its host';
      const cmd = `lifeboat datadir fence <its data dir> --superseded-by ${String(p['superseded-by'])}`;
      if (matches(confirmed, m)) {
        ctx.event('fence', `${who}: fenced on ${host} by the operator (fenced=${m.name || m.id})`, { member: m.id, name: m.name, host, by: 'operator' });
        remote.push(m.id);
        continue;
      }
      if (matches(dead, m)) {
        ctx.event('warning', `${who} is assumed dead and was not fenced: if it ever comes back, run on ${host}: ${cmd}`, { member: m.id, name: m.name, host });
        continue;
      }
      ctx.progress(`on ${host}, run: ${cmd}`);
      ctx.event('note', `fence ${who} on ${host} with: ${cmd}`, { member: m.id, name: m.name, host, command: cmd });
      if (!(await ctx.confirm(`Has ${who} been fenced on ${host} (${cmd})?`)))
        throw new SafetyCheckError(`${who} is not fenced: run on ${host}: ${cmd}, then resume`, 'fenced');
      ctx.event('fence', `${who}: fenced on ${host}, as the operator confirmed`, { member: m.id, name: m.name, host, by: 'confirmation' });
      remote.push(m.id);
    }
    return { fenced: done, confirmed: remote };
  },
};
