// Steps that look at what survived and build the new cluster's first member:
// inspect-sources, fence-old-members, verify-snapshot, restore.
import fs from 'node:fs';
import path from 'node:path';
import { DataDirLockedError } from '../../storage/errors.js';
import { probeOldMembers, type OldMember } from '../../recovery/fence.js';
import { inspectDataDir } from '../../recovery/inspect.js';
import { restoreDataDir, restoreSnapshot } from '../../recovery/restore.js';
import { snapshotStatus } from '../../recovery/snapshotFormat.js';
import { SafetyCheckError, type StepDefinition } from '../stepTypes.js';

type Source = { kind: 'data-dir' | 'snapshot'; path: string };

function sourceOf(p: string): Source {
  if (!fs.existsSync(p)) throw new Error(`source ${p} does not exist`);
  return { kind: fs.statSync(p).isDirectory() ? 'data-dir' : 'snapshot', path: path.resolve(p) };
}

/** The old cluster's members, as the source recorded them. */
async function oldMembersOf(src: Source): Promise<{ clusterId: string; memberId?: string; members: OldMember[] }> {
  if (src.kind === 'snapshot') {
    const s = await snapshotStatus(src.path);
    return { clusterId: s.clusterId, members: s.members };
  }
  const r = await inspectDataDir(src.path);
  return { clusterId: r.clusterId, memberId: r.memberId, members: r.members };
}

/** The old cluster (before) and the restored one-member cluster (after), as the run records them. */
function recoveryIds(old: { clusterId: string; members: OldMember[] }, clusterId: string, memberId: string): Record<string, unknown> {
  return { clusterIdBefore: old.clusterId, memberIdsBefore: old.members.map((m) => m.id), clusterIdAfter: clusterId, memberIdsAfter: [memberId] };
}

export const inspectSources: StepDefinition = {
  type: 'inspect-sources',
  description: "Read the recovery source (a stopped survivor's data dir or a snapshot) and report what it holds.",
  params: { source: { type: 'path', required: true, description: 'data dir or snapshot file' } },
  describe: (p) => [`read ${String(p.source)} (read-only)`],
  async run(p, ctx) {
    const src = sourceOf(String(p.source));
    if (src.kind === 'snapshot') {
      const s = await snapshotStatus(src.path);
      ctx.progress(`snapshot: ${s.totalKeys} keys at revision ${s.revision}, cluster ${s.clusterId}`);
      return { kind: src.kind, clusterId: s.clusterId, revision: s.revision, keys: s.totalKeys, members: s.members.length };
    }
    let r;
    try {
      r = await inspectDataDir(src.path);
    } catch (e) {
      if (e instanceof DataDirLockedError) throw new SafetyCheckError(`${e.message}: the source member must be stopped before recovery`);
      throw e;
    }
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
  description: "Probe every old member's peer and client URLs; refuse to go on if any answers (--assume-dead names the ones to treat as dead anyway).",
  params: {
    source: { type: 'path', required: true, description: 'the recovery source (its member list is the old cluster)' },
    'assume-dead': { type: 'list', default: [], description: 'old member IDs (hex) or names to treat as dead even if they answer' },
    'skip-urls': { type: 'list', default: [], description: 'URLs not to probe (e.g. the survivor peer URL the recovered member will take over)' },
  },
  describe: (p) => [
    `probe the peer and client URLs of every member of ${String(p.source)}'s old cluster${(p['assume-dead'] as string[]).length ? `, treating ${(p['assume-dead'] as string[]).join(', ')} as dead` : ''}`,
  ],
  async run(p, ctx) {
    const src = sourceOf(String(p.source));
    if (src.kind === 'data-dir') {
      // The survivor itself must be stopped: its data dir is locked while it runs.
      try {
        await inspectDataDir(src.path);
      } catch (e) {
        if (e instanceof DataDirLockedError) throw new SafetyCheckError(`${e.message}: stop the source member first`);
        throw e;
      }
    }
    const old = await oldMembersOf(src);
    const skip = new Set(p['skip-urls'] as string[]);
    const members = old.members.map((m) => ({ ...m, peerURLs: m.peerURLs.filter((u) => !skip.has(u)), clientURLs: m.clientURLs.filter((u) => !skip.has(u)) }));
    ctx.progress(`probing ${members.length} old members of cluster ${old.clusterId}`);
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
    source: { type: 'path', required: true, description: 'data dir or snapshot file' },
    'data-dir': { type: 'path', required: true, description: 'the new data dir (must not exist or be empty)' },
    name: { type: 'string', required: true, description: "the recovered member's name" },
    'peer-url': { type: 'url', required: true, description: "the recovered member's peer URL (keep the survivor's so old members learn they were superseded)" },
    'initial-cluster-token': { type: 'string', default: 'etcd-cluster', description: 'token for the member ID' },
    'discard-uncommitted': { type: 'bool', default: false, description: "drop the entries past the survivor's commit index" },
    'bump-revision': { type: 'int', default: 0, description: 'raise the revision (with mark-compacted) so watchers relist' },
    'mark-compacted': { type: 'bool', default: false, description: 'mark the revisions before the new one compacted' },
  },
  describe: (p) => [
    `create ${String(p['data-dir'])} from ${String(p.source)}: member ${String(p.name)} at ${String(p['peer-url'])}, alone, with a new cluster ID`,
  ],
  async run(p, ctx) {
    const target = String(p['data-dir']);
    const src = sourceOf(String(p.source));
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
        };
      }
    }
    const opts = {
      dataDir: target,
      name: String(p.name),
      initialAdvertisePeerUrls: [String(p['peer-url'])],
      initialClusterToken: String(p['initial-cluster-token']),
      discardUncommitted: !!p['discard-uncommitted'],
      bumpRevision: Number(p['bump-revision'] ?? 0),
      markCompacted: !!p['mark-compacted'],
    };
    const old = await oldMembersOf(src);
    const r = src.kind === 'snapshot' ? await restoreSnapshot(src.path, opts) : await restoreDataDir(src.path, opts);
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
    };
  },
};
