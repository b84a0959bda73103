// Build a fresh one-member data dir from a snapshot or from an old member's
// data dir: the KV state, a new cluster ID recording its parent, this member
// as the only voter. Built in <dir>.part and renamed, so a failure leaves
// nothing half-written where the member would start.
import fs from 'node:fs';
import path from 'node:path';
import { InputError, RefusedError } from '../common/errors.js';
import { KvStore, restoreSnapshot as restoreKvSnapshot } from '../kv/index.js';
import { forceNewClusterState } from '../raft/bootstrap.js';
import type { PersistedState } from '../raft/types.js';
import { formatInitialCluster } from '../common/initialCluster.js';
import { formatId as hex } from '../common/ids.js';
import { memberIdFor, newClusterId } from '../storage/identity.js';
import { kvPath } from '../storage/layout.js';
import { RaftStorage } from '../storage/raftStorage.js';
import { isValidMemberUrl } from '../common/urls.js';
import { requireTrailer, TrailerError } from '../etcdfile/index.js';
import { importEtcdDb } from './etcdImport.js';
import { derivedEtcdClusterId, refuseDirectory, snapshotKind, truncatedSnapshotError } from './snapshotFormat.js';
import { fenceDescription } from './fenceRecord.js';
import { NodeFileSystem } from '../storage/fileSystem.js';
import { copyKvFiles } from './kvCopy.js';

export interface RestoreOptions {
  dataDir: string;
  name: string;
  initialAdvertisePeerUrls: string[];
  initialClusterToken?: string;
  /** etcd's --bump-revision / --mark-compacted: both or neither. */
  bumpRevision?: number;
  markCompacted?: boolean;
  skipHashCheck?: boolean;
  /** The old cluster's ID to record as the parent, when the source's own is not it (a backup point's replay member). */
  parentClusterId?: bigint;
  /** From a data dir: drop the entries past the survivor's commit index. */
  discardUncommitted?: boolean;
  /** bytes of the snapshot copied (Lifeboat) or read (etcd) so far, for a progress bar */
  onBytes?: (copied: number, total: number) => void;
}

export interface RestoreResult {
  dataDir: string;
  memberId: string;
  clusterId: string;
  parentClusterId: string;
  revision: number;
  keys: number;
  appliedIndex: number;
  /** Entries kept past the old commit index (a data-dir restore), applied when the member starts. */
  uncommittedKept: number;
  /** The command line that starts the restored member. */
  serverCommand: string;
  /** From an etcd file: what it holds that the new cluster does not take over. */
  notCarriedOver?: string[];
}

function checkOptions(o: RestoreOptions): void {
  if (!o.name) throw new InputError('--name is required');
  if (o.initialAdvertisePeerUrls.length === 0 || !o.initialAdvertisePeerUrls.every(isValidMemberUrl)) {
    throw new InputError(`--initial-advertise-peer-urls "${o.initialAdvertisePeerUrls.join(',')}" is not a valid URL list; e.g. http://10.0.0.1:2380`);
  }
  const bump = (o.bumpRevision ?? 0) > 0;
  // etcdutl's text, with our flag name (its --revision-bump is our --bump-revision).
  if (bump && !o.markCompacted) throw new InputError('--mark-compacted required if --bump-revision > 0');
  if (!bump && o.markCompacted) throw new InputError('--bump-revision > 0 required with --mark-compacted (it compacts at the bumped revision)');
  if (o.bumpRevision !== undefined && (!Number.isInteger(o.bumpRevision) || o.bumpRevision < 0)) {
    throw new InputError(`--bump-revision ${o.bumpRevision} must be a whole number >= 0`);
  }
  if (fs.existsSync(o.dataDir) && fs.readdirSync(o.dataDir).length > 0) {
    const fenced = fenceDescription(o.dataDir);
    throw new RefusedError(
      `data dir ${o.dataDir} is not empty${fenced ? `: it is ${fenced}` : ''}; restore into a new directory (or move ${o.dataDir} aside first)`,
    );
  }
}

function serverCommand(o: RestoreOptions): string {
  const host = new URL(o.initialAdvertisePeerUrls[0]).hostname;
  const client = `http://${host}:2379`;
  const ic = formatInitialCluster(new Map([[o.name, o.initialAdvertisePeerUrls]]));
  return [
    'lifeboat server',
    `--name ${o.name}`,
    `--data-dir ${o.dataDir}`,
    `--listen-peer-urls ${o.initialAdvertisePeerUrls.join(',')}`,
    `--initial-advertise-peer-urls ${o.initialAdvertisePeerUrls.join(',')}`,
    `--listen-client-urls ${client}`,
    `--advertise-client-urls ${client}`,
    `--initial-cluster ${ic}`,
  ].join(' ');
}

/**
 * Opens the store installed at <part>/member/kv.db for `use`, and closes it after:
 * once per restore. `quickCheck`: SQLite's page check, false where this restore
 * checked the file already (restoreSnapshot opens the copy it installs); at 100k
 * keys a check is about 0.1 s.
 */
function withStore<T>(part: string, quickCheck: boolean, use: (kv: KvStore) => T): T {
  const kv = KvStore.open(kvPath(part), { quickCheck });
  try {
    return use(kv);
  } finally {
    kv.close();
  }
}

/** Writes the new data dir's Raft state (`state`, read once the store is changed) and cluster identity around its open KV store. */
function finish(o: RestoreOptions, storage: RaftStorage, memberId: bigint, kv: KvStore, state: () => PersistedState, uncommittedKept: number): RestoreResult {
  const oldCluster = o.parentClusterId ?? kv.cluster.clusterId() ?? 0n;
  const ancestors = [kv.cluster.parentClusterId()].filter((x): x is bigint => x !== undefined && x !== 0n);
  const clusterId = newClusterId(oldCluster, memberId, ancestors);
  kv.writeLocal((c) => {
    c.setParentClusterId(oldCluster === 0n ? undefined : oldCluster);
    c.setClusterId(clusterId);
    c.setMemberId(memberId);
    c.clearMembers();
    c.putMember({ id: memberId, name: o.name, peerURLs: o.initialAdvertisePeerUrls, clientURLs: [], isLearner: false });
  });
  if ((o.bumpRevision ?? 0) > 0) kv.bumpRevision(o.bumpRevision!, !!o.markCompacted);
  storage.rewrite(state());
  storage.setClusterId(clusterId);
  kv.makeDurable();
  const keys = kv.range({ key: Buffer.from([0]), rangeEnd: Buffer.from([0]), countOnly: true, serializable: true }).count;
  return {
    dataDir: path.resolve(o.dataDir),
    memberId: hex(memberId),
    clusterId: hex(clusterId),
    parentClusterId: hex(oldCluster),
    revision: kv.currentRevision(),
    keys,
    appliedIndex: kv.appliedIndex(),
    uncommittedKept,
    serverCommand: serverCommand(o),
  };
}

/** Builds <dataDir>.part with `build`, then renames it into place. */
async function buildAtomically(o: RestoreOptions, build: (part: string) => Promise<RestoreResult> | RestoreResult): Promise<RestoreResult> {
  const target = path.resolve(o.dataDir);
  const part = `${target}.part`;
  fs.rmSync(part, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(target), { recursive: true });
  try {
    const result = await build(part);
    if (fs.existsSync(target)) fs.rmdirSync(target); // checked empty above
    fs.renameSync(part, target);
    new NodeFileSystem().fsyncDir(path.dirname(target));
    return result;
  } catch (e) {
    fs.rmSync(part, { recursive: true, force: true });
    throw e;
  }
}

/** `snapshot restore`: a Lifeboat snapshot file (SQLite database + sha256 trailer), or an etcd one. */
export async function restoreSnapshot(file: string, o: RestoreOptions): Promise<RestoreResult> {
  checkOptions(o);
  if (!fs.existsSync(file)) throw new InputError(`snapshot ${file} does not exist; check the path`);
  refuseDirectory(file);
  const kind = snapshotKind(file);
  // Before the trailer checks: a cut-off copy has no trailer either, but --skip-hash-check is not the answer.
  if (kind.truncated !== undefined) throw truncatedSnapshotError(file, kind);
  if (kind.format === 'etcd') return restoreEtcdFile(file, o);
  if (kind.format !== 'lifeboat')
    throw new InputError(
      `${file} is not a snapshot lifeboat can read (${kind.detail}); give a file saved by 'lifeboat snapshot save' or 'etcdctl snapshot save'`,
    );
  if (!kind.hasTrailer && !o.skipHashCheck) throw new InputError(`snapshot ${file} has no sha256 trailer; use --skip-hash-check for a raw kv.db copy`);
  const memberId = memberIdFor(o.initialAdvertisePeerUrls, o.initialClusterToken ?? 'etcd-cluster');
  return buildAtomically(o, async (part) => {
    const { storage } = RaftStorage.open(part, { identity: { memberId, clusterId: 0n } });
    try {
      if (kind.hasTrailer) {
        await restoreKvSnapshot(file, kvPath(part), o.onBytes);
      } else {
        fs.copyFileSync(file, kvPath(part));
      }
      // restoreSnapshot checked the copy it installed; a raw kv.db copy is checked as it is opened.
      return withStore(part, !kind.hasTrailer, (kv) => finish(o, storage, memberId, kv, () => singleVoterState(kv, memberId), 0));
    } finally {
      storage.close();
    }
  });
}

/**
 * An etcd snapshot or raw member/snap/db (bbolt), checked as etcdctl checks it
 * (sha256 trailer unless --skip-hash-check). Every stored revision, the revision and
 * compaction point, and the leases carry over. The parent cluster ID recorded is
 * the one etcd derived from its founding members, when the file shows membership
 * never changed; otherwise 0 (etcd does not store its cluster ID in the backend).
 */
async function restoreEtcdFile(file: string, o: RestoreOptions): Promise<RestoreResult> {
  try {
    requireTrailer(file, !!o.skipHashCheck);
  } catch (err) {
    if (err instanceof TrailerError && err.kind === 'missing') throw new InputError(err.message);
    throw err;
  }
  const memberId = memberIdFor(o.initialAdvertisePeerUrls, o.initialClusterToken ?? 'etcd-cluster');
  return buildAtomically(o, (part) => {
    const { storage } = RaftStorage.open(part, { identity: { memberId, clusterId: 0n } });
    try {
      const { summary, notCarriedOver } = importEtcdDb(file, kvPath(part), o.onBytes);
      const parent = derivedEtcdClusterId(summary);
      const result = withStore(part, true, (kv) => {
        if (parent !== 0n) kv.writeLocal((c) => c.setClusterId(parent));
        return finish(o, storage, memberId, kv, () => singleVoterState(kv, memberId), 0);
      });
      return { ...result, notCarriedOver };
    } finally {
      storage.close();
    }
  });
}

/** A snapshot-only Raft state at the KV's applied index, with this member the only voter. */
function singleVoterState(kv: KvStore, memberId: bigint): PersistedState {
  const index = kv.appliedIndex();
  const term = kv.appliedTerm();
  return { hardState: { term, vote: 0n, commit: index }, snapshot: { index, term, conf: { voters: [memberId], learners: [] } }, entries: [] };
}

/** The survivor's forced state around its KV: entries the KV already holds are dropped; the rest are replayed at start. */
function forcedState(kv: KvStore, forced: PersistedState, memberId: bigint): PersistedState {
  if (kv.appliedIndex() < forced.snapshot.index)
    throw new Error(`the survivor's KV (applied ${kv.appliedIndex()}) is behind its log's snapshot (${forced.snapshot.index})`);
  const entries = forced.entries.filter((e) => e.index > kv.appliedIndex());
  const base = entries.length > 0 ? entries[0].index - 1 : Math.max(kv.appliedIndex(), forced.snapshot.index);
  const baseTerm = kv.appliedIndex() === base ? kv.appliedTerm() : forced.snapshot.term;
  return {
    hardState: { term: Math.max(forced.hardState.term, baseTerm), vote: 0n, commit: entries.at(-1)?.index ?? base },
    snapshot: { index: base, term: baseTerm, conf: { voters: [memberId], learners: [] } },
    entries,
  };
}

/**
 * Recovery from an old member's data dir: its KV state and every entry of its log
 * (past the commit index too, unless discardUncommitted), replayed when the new
 * member starts. The survivor keeps its member ID when it keeps its peer URLs.
 */
export async function restoreDataDir(src: string, o: RestoreOptions): Promise<RestoreResult> {
  checkOptions(o);
  if (path.resolve(src) === path.resolve(o.dataDir)) throw new InputError('the new data dir must differ from the source data dir');
  const opened = RaftStorage.open(src, { readOnly: true });
  const { storage: source, state, member } = opened;
  try {
    return await buildAtomically(o, (part) => {
      // The survivor's KV (kv.db and its WAL, under the source's lock: consistent)
      // copied straight into the new data dir, where it is opened, checked and
      // changed; nothing is opened, and so nothing written, in the source dir (kvCopy.ts).
      copyKvFiles(src, part);
      return withStore(part, true, (kv) => {
        const survivor = kv.cluster.member(member.memberId);
        const sameUrls = survivor && [...survivor.peerURLs].sort().join(',') === [...o.initialAdvertisePeerUrls].sort().join(',');
        const memberId = sameUrls ? member.memberId : memberIdFor(o.initialAdvertisePeerUrls, o.initialClusterToken ?? 'etcd-cluster');
        const forced = forceNewClusterState(state, memberId, { discardUncommitted: !!o.discardUncommitted });
        const kept = forced.entries.filter((e) => e.index > state.hardState.commit).length;
        const { storage } = RaftStorage.open(part, { identity: { memberId, clusterId: 0n } });
        try {
          return finish(o, storage, memberId, kv, () => forcedState(kv, forced, memberId), kept);
        } finally {
          storage.close();
        }
      });
    });
  } finally {
    source.close();
  }
}
