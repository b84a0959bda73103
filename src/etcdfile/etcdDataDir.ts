// A stopped etcd 3.4 member's data dir, read without changing a byte:
//
//   member/wal/<seq>-<index>.wal    the Raft log (or --wal-dir DIR)   walRecord.ts, walLog.ts
//   member/snap/<term>-<index>.snap Raft snapshots (the v2 store)     etcdSnapFiles.ts
//   member/snap/db                  the bbolt backend                 etcdDbScan.ts
//
// The WAL gives the member and cluster IDs (its metadata record), the hard state,
// and the log after the newest snapshot; the backend gives the consistent index,
// the revision, the keys and the members' names. Files are only ever opened for
// reading; a member that is running (its files locked) is detected first.

import fs from 'node:fs';
import path from 'node:path';
import { scanEtcdDb, type EtcdDbSummary } from './etcdDbScan.js';
import { etcdHashKv } from './etcdKvHash.js';
import { lockHolder, type LockHolder } from './etcdLock.js';
import { readEtcdSnapFiles, type EtcdSnapFile } from './etcdSnapFiles.js';
import { CONF_CHANGE_TYPE, ENTRY_TYPE, decodeConfChange, type EtcdEntry, type EtcdHardState } from './raftpbCodec.js';
import { describeEntry, type EntryDescription, type EntryKind } from './walEntryKinds.js';
import { EtcdWalError } from './walErrors.js';
import { walEntries, walHeaderFacts } from './walLog.js';
import { listWalSegments, scanWal, type WalTail } from './walRecord.js';

export interface EtcdDataDirOptions {
  /** etcd's --wal-dir: the WAL lives there instead of member/wal. */
  walDir?: string;
}

export interface EtcdDataDirSummary {
  dataDir: string;
  walDir: string;
  dbFile: string;
  memberId: bigint;
  clusterId: bigint;
  hardState: EtcdHardState;
  /** The snapshot the log starts after ({0, 0}: none). */
  start: { index: number; term: number };
  snapshot?: EtcdSnapFile;
  /** Entries after `start`. */
  entries: EtcdEntry[];
  overwritten: number;
  walSegments: Array<{ file: string; size: number; records: number }>;
  /** The newest segment's torn or stray tail, not used. */
  tail?: WalTail;
  db: EtcdDbSummary;
  /** As `etcdctl endpoint hashkv` at the current revision. */
  hashKv: number;
  /** Voters and learners after every committed entry. */
  voters: bigint[];
  learners: bigint[];
  /** Entries past the commit index, described (never a value or a password). */
  pastCommit: EntryDescription[];
  pastCommitKinds: Partial<Record<EntryKind, number>>;
  v2: {
    /** v2 requests in the WAL after the snapshot: etcd's own (/0: members, version) and clients' (/1). */
    walRequests: number;
    walKeyRequests: number;
    /** Keys under /1 in the snapshot's v2 store; null without a snapshot file. */
    snapshotKeys: number | null;
  };
  /** Time of the newest WAL write (segment modification time). */
  lastWrite?: string;
  /** Things found and not used: a torn tail, a damaged .snap file. */
  damage: string[];
}

export function etcdDbFile(dataDir: string): string {
  return path.join(dataDir, 'member', 'snap', 'db');
}

function defaultWalDir(dataDir: string): string {
  return path.join(dataDir, 'member', 'wal');
}

/** An etcd data dir has a bbolt backend at member/snap/db (Lifeboat's has member/meta and kv.db). */
export function isEtcdDataDir(dataDir: string): boolean {
  return fs.existsSync(etcdDbFile(dataDir));
}

/** The WAL segment or backend file a running etcd holds locked, if any. */
export function etcdDataDirLock(dataDir: string, opts: EtcdDataDirOptions = {}): LockHolder | undefined {
  const walDir = opts.walDir ?? defaultWalDir(dataDir);
  let segments: string[] = [];
  try {
    segments = fs
      .readdirSync(walDir)
      .filter((n) => n.endsWith('.wal'))
      .map((n) => path.join(walDir, n));
  } catch {
    // no WAL dir: reported when it is read
  }
  return lockHolder([...segments, etcdDbFile(dataDir)]);
}

function newestMtime(files: readonly string[]): string | undefined {
  let newest = 0;
  for (const f of files) newest = Math.max(newest, fs.statSync(f).mtimeMs);
  return newest > 0 ? new Date(newest).toISOString() : undefined;
}

const sortIds = (s: Set<bigint>) => [...s].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));

export function readEtcdDataDir(dataDir: string, opts: EtcdDataDirOptions = {}): EtcdDataDirSummary {
  const walDir = opts.walDir ?? defaultWalDir(dataDir);
  const dbFile = etcdDbFile(dataDir);
  if (!fs.existsSync(walDir)) {
    throw new Error(`etcd data dir ${dataDir} has no WAL directory ${walDir}; if etcd ran with --wal-dir, give that directory as --wal-dir`);
  }
  const segments = listWalSegments(walDir);
  if (segments.length === 0) throw new Error(`etcd WAL directory ${walDir} holds no segments (<seq>-<index>.wal); check the path`);
  const scan = scanWal(segments);
  const facts = walHeaderFacts(scan.records);
  if (facts.nodeId === undefined || facts.clusterId === undefined) {
    throw new EtcdWalError(segments[0].file, 0, 'no metadata record (member and cluster ID)');
  }
  const damage: string[] = [];
  if (scan.tail) damage.push(`torn tail not used: ${scan.tail.file} at byte offset ${scan.tail.offset} (${scan.tail.bytes} bytes): ${scan.tail.reason}`);

  // The newest snapshot file the WAL has a mark for (etcd: ValidSnapshotEntries).
  const snaps = readEtcdSnapFiles(path.join(dataDir, 'member', 'snap'));
  damage.push(...snaps.damage);
  const marked = snaps.files.find((s) => facts.snapshots.some((m) => m.index === s.index && m.term === s.term) && s.index <= facts.hardState.commit);
  if (snaps.files.length > 0 && !marked) damage.push('no snapshot file matches a snapshot mark in the WAL; the log is read from its first mark');
  const firstMark = facts.snapshots[0];
  const start = marked ? { index: marked.index, term: marked.term } : firstMark ? { index: firstMark.index, term: firstMark.term } : { index: 0, term: 0 };
  const { entries, overwritten } = walEntries(scan.records, start);

  const db = scanEtcdDb(dbFile);
  const hashKv = etcdHashKv(dbFile, db.compactRevision);

  const voters = new Set(marked?.meta.conf.voters ?? []);
  const learners = new Set(marked?.meta.conf.learners ?? []);
  const commit = facts.hardState.commit;
  const pastCommit: EntryDescription[] = [];
  const pastCommitKinds: Partial<Record<EntryKind, number>> = {};
  const v2 = { walRequests: 0, walKeyRequests: 0, snapshotKeys: marked ? marked.v2Keys : null };
  for (const e of entries) {
    if (e.index > commit) {
      const d = describeEntry(e);
      pastCommit.push(d);
      pastCommitKinds[d.kind] = (pastCommitKinds[d.kind] ?? 0) + 1;
    }
    if (e.type === ENTRY_TYPE.normal && e.data.length > 0 && e.index <= commit) {
      const d = describeEntry(e);
      if (d.v2) {
        v2.walRequests++;
        if (d.v2.path.startsWith('/1/')) v2.walKeyRequests++;
      }
    }
    if (e.type === ENTRY_TYPE.confChange && e.index <= commit) {
      const cc = decodeConfChange(e.data);
      if (cc.type === CONF_CHANGE_TYPE.addNode) {
        learners.delete(cc.nodeId);
        voters.add(cc.nodeId);
      } else if (cc.type === CONF_CHANGE_TYPE.addLearnerNode) learners.add(cc.nodeId);
      else if (cc.type === CONF_CHANGE_TYPE.removeNode) {
        voters.delete(cc.nodeId);
        learners.delete(cc.nodeId);
      }
    }
  }
  for (const d of pastCommit) {
    if (!d.v2) continue;
    v2.walRequests++;
    if (d.v2.path.startsWith('/1/')) v2.walKeyRequests++;
  }

  return {
    dataDir: path.resolve(dataDir),
    walDir: path.resolve(walDir),
    dbFile: path.resolve(dbFile),
    memberId: facts.nodeId,
    clusterId: facts.clusterId,
    hardState: facts.hardState,
    start,
    ...(marked ? { snapshot: marked } : {}),
    entries,
    overwritten,
    walSegments: scan.segments.map((s) => ({ file: s.file, size: s.size, records: s.records })),
    ...(scan.tail ? { tail: scan.tail } : {}),
    db,
    hashKv,
    voters: sortIds(voters),
    learners: sortIds(learners),
    pastCommit,
    pastCommitKinds,
    v2,
    lastWrite: newestMtime(segments.map((s) => s.file)),
    damage,
  };
}
