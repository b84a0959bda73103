// Read-only inspection of a stopped member's data dir, Lifeboat's or etcd's: who it
// was, how far its log and KV got, what lies past the commit index, and any damage
// found. The JSON form is complete enough for `recover plan --from-inspect` on
// another host.
//
// Read-only means not a byte changes, not even a directory's modification time:
// the lock is checked, never taken (a stale one stays); kv.db (SQLite in WAL mode,
// which creates kv.db-shm even when opened read-only) is read from a private copy
// of kv.db and kv.db-wal in a temp dir; etcd's files are opened for reading only.
import fs from 'node:fs';
import path from 'node:path';
import { InputError, RefusedError } from '../common/errors.js';
import { fencedDataDirProblem } from './fenceRecord.js';
import { runtimeOfDataDir } from '../ops/runtime.js';
import { etcdDataDirLock, kvText, readEtcdDataDir, type EntryDescription } from '../etcdfile/index.js';
import { decodeRequest } from '../kv/requestCodec.js';
import { decodeConfChange } from '../raft/confChange.js';
import { EntryType, type Entry } from '../raft/types.js';
import { kvPath, lockPath, memberDir, metaPath, parseSnapshotName, snapDir, walDir } from '../storage/layout.js';
import { RaftStorage } from '../storage/raftStorage.js';
import { DirLock } from '../storage/dirLock.js';
import { NodeFileSystem } from '../storage/fileSystem.js';
import { InspectMemo } from './inspectMemo.js';
import { withKvCopy } from './kvCopy.js';
import { DataDirLockedError, StorageError } from '../storage/errors.js';
import type { KvStore } from '../kv/index.js';
import { readMarker } from '../storage/markers.js';

export interface InspectedMember {
  id: string;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

/** One entry past the commit index, in one line (never a value or a password). */
export interface ListedEntry {
  index: number;
  term: number;
  kind: string;
  text: string;
}

/** What only an etcd data dir has. */
export interface EtcdDataDirFacts {
  walDir: string;
  dbFile: string;
  /** The backend's consistent index (the last entry applied to it; = appliedIndex). */
  consistentIndex: number;
  clusterVersion?: string;
  walSegments: number;
  /** The .snap file the log starts after, if any. */
  snapshotFile?: string;
  /** Entries replaced by a later entry at the same index (an old leader's uncommitted tail). */
  overwrittenEntries: number;
  /** v2-API data, which a v3 restore (etcdctl's or Lifeboat's) leaves behind. */
  v2: {
    /** v2 requests in the WAL after the snapshot: etcd's own (/0: members, version) and clients' (/1). */
    walRequests: number;
    /** Of those, on clients' v2 keys (/1/...): lost by a v3 restore. */
    walKeyRequests: number;
    /** Keys in the snapshot file's v2 store (under /1), lost by a v3 restore; null: no snapshot file. */
    snapshotKeys: number | null;
  };
}

/** Entries listed in the report at most (the count and range cover all of them). */
export const MAX_LISTED_ENTRIES = 200;

/** Everything `recover plan` compares between survivors. IDs are hex strings. */
export interface DataDirReport {
  /** Whose data dir: Lifeboat's (member/meta + kv.db) or etcd's (member/snap/db). Absent in older inspect files: Lifeboat. */
  runtime: 'lifeboat' | 'etcd';
  /** etcd's auth is enabled in the backend: the recovered cluster's member calls need root's credentials */
  authEnabled?: boolean;
  dataDir: string;
  memberId: string;
  clusterId: string;
  parentClusterId?: string;
  members: InspectedMember[];
  voters: string[];
  learners: string[];
  lastTerm: number;
  lastIndex: number;
  firstIndex: number;
  snapshotIndex: number;
  commitIndex: number;
  appliedIndex: number;
  /** Entries past the commit index: the old leader may have acknowledged them. */
  uncommitted: {
    count: number;
    from?: number;
    to?: number;
    confChanges: number;
    /** How many of each kind: put, delete, txn, member change, ... */
    kinds?: Record<string, number>;
    /** The first MAX_LISTED_ENTRIES of them. */
    entries?: ListedEntry[];
  };
  kvRevision: number;
  compactRevision: number;
  keyCount: number;
  hash: number;
  /** Time of the newest write to the log (file modification time). */
  lastWrite?: string;
  /** When the newest Raft snapshot file was written (absent: none yet). */
  snapshotTakenAt?: string;
  /** removed | superseded | forced markers, if any. */
  markers: string[];
  /** Warnings (a torn tail cut off) and problems found; empty when healthy. */
  damage: string[];
  etcd?: EtcdDataDirFacts;
}

export interface InspectOptions {
  /** etcd's --wal-dir: the WAL of an etcd data dir lives there instead of member/wal. */
  walDir?: string;
}

function hex(id: bigint): string {
  return id.toString(16);
}

function newestLogWrite(dataDir: string): string | undefined {
  let newest = 0;
  try {
    for (const f of fs.readdirSync(walDir(dataDir))) newest = Math.max(newest, fs.statSync(path.join(walDir(dataDir), f)).mtimeMs);
  } catch {
    return undefined;
  }
  return newest > 0 ? new Date(newest).toISOString() : undefined;
}

/** Modification time of the newest (highest index) Raft snapshot file. */
function newestSnapshotAt(dataDir: string): string | undefined {
  let newest: { index: number; file: string } | undefined;
  try {
    for (const f of fs.readdirSync(snapDir(dataDir))) {
      const n = parseSnapshotName(f);
      if (n && (!newest || n.index > newest.index)) newest = { index: n.index, file: path.join(snapDir(dataDir), f) };
    }
    return newest ? fs.statSync(newest.file).mtime.toISOString() : undefined;
  } catch {
    return undefined;
  }
}

function countKinds(list: readonly ListedEntry[]): Record<string, number> {
  const kinds: Record<string, number> = {};
  for (const e of list) kinds[e.kind] = (kinds[e.kind] ?? 0) + 1;
  return kinds;
}

/** A Lifeboat log entry in one line. */
function describeLifeboatEntry(e: Entry): ListedEntry {
  const base = { index: e.index, term: e.term };
  try {
    if (e.type === EntryType.ConfChange) {
      const cc = decodeConfChange(e.data);
      return { ...base, kind: 'member change', text: `${cc.type} ${cc.nodeId.toString(16)}` };
    }
    if (e.data.length === 0) return { ...base, kind: 'empty', text: 'empty (a new leader’s first entry)' };
    const req = decodeRequest(e.data);
    if (req.kv) return { ...base, ...kvText(req.kv) };
    if (req.server) {
      const kind = Object.keys(req.server)[0] ?? 'other';
      return { ...base, kind: kind === 'leaseGrant' || kind === 'leaseRevoke' ? 'lease' : kind, text: kind };
    }
    return { ...base, kind: 'other', text: 'no request' };
  } catch (err) {
    return { ...base, kind: 'other', text: `does not decode (${(err as Error).message})` };
  }
}

function uncommittedOf(listed: ListedEntry[], confChanges: number): DataDirReport['uncommitted'] {
  return {
    count: listed.length,
    ...(listed.length > 0 ? { from: listed[0].index, to: listed[listed.length - 1].index } : {}),
    confChanges,
    kinds: countKinds(listed),
    entries: listed.slice(0, MAX_LISTED_ENTRIES),
  };
}

/** Lifeboat's (member/meta, kv.db), etcd's (member/snap/db), or neither (an error saying so). */
/** The runtime whose data dir this is (by layout); neither is a usage error naming both. */
export function dataDirRuntime(dataDir: string): 'lifeboat' | 'etcd' {
  const runtime = runtimeOfDataDir(dataDir);
  if (runtime) return runtime;
  // An etcd data dir once fenced has only an empty member/ and proxy/ left: say so, not "check the path".
  const fenced = fencedDataDirProblem(dataDir);
  if (fenced) throw new RefusedError(fenced);
  throw new StorageError(
    `data dir ${dataDir} is neither Lifeboat's (no ${metaPath(dataDir)}) nor etcd's (no ${path.join(memberDir(dataDir), 'snap', 'db')}); check the path`,
  );
}

/**
 * Inspects a data dir without changing it. The member must be stopped: a running
 * one holds its lock (Lifeboat: member/lock; etcd: its WAL and db locks) and the
 * error (DataDirLockedError) says so.
 */
export async function inspectDataDir(dataDir: string, opts: InspectOptions = {}): Promise<DataDirReport> {
  if (!fs.existsSync(dataDir)) throw new InputError(`data dir ${dataDir} does not exist; check the path`);
  const runtime = dataDirRuntime(dataDir);
  if (runtime === 'etcd') {
    const dirs = opts.walDir === undefined ? [memberDir(dataDir)] : [memberDir(dataDir), opts.walDir];
    return memo.get(
      dirs,
      () => refuseLockedEtcd(dataDir, opts),
      () => inspectEtcdDataDir(dataDir, opts),
    );
  }
  if (opts.walDir !== undefined) throw new InputError(`--wal-dir is for etcd data dirs; ${dataDir} is a Lifeboat data dir, whose log is in ${walDir(dataDir)}`);
  return memo.get(
    [memberDir(dataDir)],
    () => DirLock.check(new NodeFileSystem(), dataDir),
    () => inspectLifeboatDataDir(dataDir),
    // Taken and released by restore (the survivor must not start meanwhile); checked at every call.
    [lockPath(dataDir)],
  );
}

const memo = new InspectMemo<DataDirReport>();

async function inspectLifeboatDataDir(dataDir: string): Promise<DataDirReport> {
  // A running member's dir is refused before any work (RaftStorage.open checks again).
  DirLock.check(new NodeFileSystem(), dataDir);
  // The KV is copied, opened and hashed (in its worker thread) while this thread
  // reads the Raft log: the two took about as long as each other, one after the other.
  const kvWork = fs.existsSync(kvPath(dataDir)) ? withKvCopy(dataDir, kvFacts) : undefined;
  // Whatever the log's reading throws, the KV's work is let finish (its copy removed) first.
  kvWork?.catch(() => undefined);
  let opened: ReturnType<typeof RaftStorage.open>;
  try {
    opened = RaftStorage.open(dataDir, { readOnly: true, lock: 'check' });
  } catch (err) {
    await kvWork?.catch(() => undefined);
    throw err;
  }
  const { storage, state, member, warnings } = opened;
  try {
    if (!kvWork)
      throw new StorageError(
        `data dir ${dataDir} has no KV store (${kvPath(dataDir)} is missing); check the path, or recover this member from another member or a snapshot`,
      );
    const kv = await kvWork;
    const hs = state.hardState;
    const last = state.entries.at(-1);
    const past = state.entries.filter((e) => e.index > hs.commit);
    const conf = { voters: new Set(state.snapshot.conf.voters), learners: new Set(state.snapshot.conf.learners) };
    for (const e of state.entries) {
      if (e.type !== EntryType.ConfChange || e.index > hs.commit) continue;
      const cc = decodeConfChange(e.data);
      if (cc.type === 'addVoter' || cc.type === 'promote') {
        conf.learners.delete(cc.nodeId);
        conf.voters.add(cc.nodeId);
      } else if (cc.type === 'addLearner') conf.learners.add(cc.nodeId);
      else if (cc.type === 'remove') {
        conf.voters.delete(cc.nodeId);
        conf.learners.delete(cc.nodeId);
      }
    }
    return {
      runtime: 'lifeboat' as const,
      dataDir: path.resolve(dataDir),
      memberId: hex(member.memberId),
      clusterId: hex(kv.clusterId ?? member.clusterId),
      ...(kv.parentClusterId && kv.parentClusterId !== 0n ? { parentClusterId: hex(kv.parentClusterId) } : {}),
      members: kv.members,
      voters: [...conf.voters].map(hex),
      learners: [...conf.learners].map(hex),
      lastTerm: last?.term ?? state.snapshot.term,
      lastIndex: last?.index ?? state.snapshot.index,
      firstIndex: state.snapshot.index + 1,
      snapshotIndex: state.snapshot.index,
      commitIndex: hs.commit,
      appliedIndex: kv.appliedIndex,
      uncommitted: uncommittedOf(past.map(describeLifeboatEntry), past.filter((e) => e.type === EntryType.ConfChange).length),
      kvRevision: kv.revision,
      compactRevision: kv.compactRevision,
      keyCount: kv.keyCount,
      hash: kv.hash,
      lastWrite: newestLogWrite(dataDir),
      ...(newestSnapshotAt(dataDir) ? { snapshotTakenAt: newestSnapshotAt(dataDir) } : {}),
      markers: (['removed', 'superseded', 'forced'] as const).filter((m) => readMarker(dataDir, m) !== undefined),
      damage: warnings.map((w) => `${w.msg}${'file' in w ? ` (${String((w as { file?: string }).file)})` : ''}`),
    };
  } finally {
    storage.close();
  }
}

/** What an inspection reports of a (copied) KV store. */
async function kvFacts(kv: KvStore) {
  const keyCount = kv.range({ key: Buffer.from([0]), rangeEnd: Buffer.from([0]), countOnly: true, serializable: true }).count;
  const { hash } = await kv.hashKvAsync(0);
  return {
    keyCount,
    hash,
    clusterId: kv.cluster.clusterId(),
    parentClusterId: kv.cluster.parentClusterId(),
    members: kv.cluster.members().map(inspectedMember),
    appliedIndex: kv.appliedIndex(),
    revision: kv.currentRevision(),
    compactRevision: kv.compactRevision(),
  };
}

/** A member record (Lifeboat's KV or etcd's db) as the report lists it: the ID in hex. */
function inspectedMember(m: { id: bigint; name: string; peerURLs: string[]; clientURLs: string[]; isLearner: boolean }): InspectedMember {
  return { id: hex(m.id), name: m.name, peerURLs: m.peerURLs, clientURLs: m.clientURLs, isLearner: m.isLearner };
}

function listed(d: EntryDescription): ListedEntry {
  return { index: d.index, term: d.term, kind: d.kind, text: d.text };
}

/** A running etcd holds its WAL and db locks: its data dir is not read. */
function refuseLockedEtcd(dataDir: string, opts: InspectOptions): void {
  const held = etcdDataDirLock(dataDir, opts);
  if (held) throw new DataDirLockedError(dataDir, held.pid ?? 0, `etcd${held.pid ? ` pid ${held.pid}` : ''} via ${held.file}`);
}

function inspectEtcdDataDir(dataDir: string, opts: InspectOptions): DataDirReport {
  refuseLockedEtcd(dataDir, opts);
  const s = readEtcdDataDir(dataDir, opts);
  const last = s.entries.at(-1);
  const confChanges = s.pastCommit.filter((d) => d.kind === 'member change').length;
  const snapshotKeys = s.v2.snapshotKeys;
  return {
    runtime: 'etcd',
    authEnabled: s.db.authEnabled,
    dataDir: s.dataDir,
    memberId: hex(s.memberId),
    clusterId: hex(s.clusterId),
    members: s.db.members.map(inspectedMember),
    voters: s.voters.map(hex),
    learners: s.learners.map(hex),
    lastTerm: last?.term ?? s.start.term,
    lastIndex: last?.index ?? s.start.index,
    firstIndex: s.start.index + 1,
    snapshotIndex: s.start.index,
    commitIndex: s.hardState.commit,
    appliedIndex: s.db.consistentIndex ?? 0,
    uncommitted: uncommittedOf(s.pastCommit.map(listed), confChanges),
    kvRevision: s.db.currentRevision,
    compactRevision: Math.max(0, s.db.compactRevision),
    keyCount: s.db.liveKeys ?? 0,
    hash: s.hashKv,
    ...(s.lastWrite ? { lastWrite: s.lastWrite } : {}),
    ...(s.snapshot ? { snapshotTakenAt: s.snapshot.mtime } : {}),
    markers: [],
    damage: s.damage,
    etcd: {
      walDir: s.walDir,
      dbFile: s.dbFile,
      consistentIndex: s.db.consistentIndex ?? 0,
      ...(s.db.clusterVersion ? { clusterVersion: s.db.clusterVersion } : {}),
      walSegments: s.walSegments.length,
      ...(s.snapshot ? { snapshotFile: s.snapshot.file } : {}),
      overwrittenEntries: s.overwritten,
      v2: { walRequests: s.v2.walRequests, walKeyRequests: s.v2.walKeyRequests, snapshotKeys },
    },
  };
}

/** Entry lines shown by the text form (-w json lists up to MAX_LISTED_ENTRIES). */
const TEXT_ENTRIES = 20;

function kindsText(kinds: Record<string, number> | undefined): string {
  const parts = Object.entries(kinds ?? {}).map(([k, n]) => `${n} ${k}`);
  return parts.length > 0 ? `: ${parts.join(', ')}` : '';
}

/** The text form of `datadir inspect`. */
export function formatDataDirReport(r: DataDirReport): string {
  const pad = (id: string) => id.padStart(16, '0');
  const u = r.uncommitted;
  const lines = [
    `data dir        ${r.dataDir} (${r.runtime ?? 'lifeboat'})`,
    `member          ${pad(r.memberId)}`,
    `cluster         ${pad(r.clusterId)}${r.parentClusterId ? ` (parent ${pad(r.parentClusterId)})` : ''}`,
    `voters          ${r.voters.map(pad).join(', ') || '-'}`,
    `learners        ${r.learners.map(pad).join(', ') || '-'}`,
    ...r.members.map((m) => `  member        ${pad(m.id)} ${m.name || '(unstarted)'} ${m.peerURLs.join(',')}${m.isLearner ? ' learner' : ''}`),
    `last term/index ${r.lastTerm}/${r.lastIndex} (log from ${r.firstIndex})`,
    `commit index    ${r.commitIndex}`,
    `applied index   ${r.appliedIndex}${r.etcd ? ' (the backend’s consistent index)' : ''}`,
    `past commit     ${u.count === 0 ? 'none' : `${u.count} entries (${u.from}..${u.to})${kindsText(u.kinds)}`}`,
    ...(u.entries ?? []).slice(0, TEXT_ENTRIES).map((e) => `  ${e.index} term ${e.term}  ${e.text}`),
    ...(u.count > TEXT_ENTRIES ? [`  … ${u.count - TEXT_ENTRIES} more (-w json lists ${Math.min(u.count, MAX_LISTED_ENTRIES)})`] : []),
    `kv revision     ${r.kvRevision} (compacted at ${r.compactRevision})`,
    `keys            ${r.keyCount}`,
    `hash            ${r.hash}`,
    `last write      ${r.lastWrite ?? 'unknown'}`,
    `snapshot        ${r.snapshotTakenAt ? `index ${r.snapshotIndex}, taken ${r.snapshotTakenAt}` : 'no Raft snapshot yet'}`,
  ];
  if (r.etcd) {
    const e = r.etcd;
    const v2 = e.v2;
    lines.push(
      `etcd wal        ${e.walDir} (${e.walSegments} segments${e.overwrittenEntries ? `; ${e.overwrittenEntries} entries overwritten by a later leader` : ''})`,
      `etcd backend    ${e.dbFile} (consistent index ${e.consistentIndex}${e.clusterVersion ? `, cluster version ${e.clusterVersion}` : ''})`,
      `etcd v2 data    ${v2.walRequests} v2 requests in the WAL (${v2.walKeyRequests} on v2 keys); ${v2.snapshotKeys === null ? 'no snapshot file' : `${v2.snapshotKeys} v2 keys in the snapshot file`}${v2.walKeyRequests + (v2.snapshotKeys ?? 0) > 0 ? ': lost by a v3 restore' : ''}`,
    );
  }
  lines.push(`markers         ${r.markers.join(', ') || 'none'}`, `damage          ${r.damage.join('; ') || 'none found'}`);
  return lines.join('\n');
}
