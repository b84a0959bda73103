// What a snapshot file is, and its status: a Lifeboat snapshot (the KV's SQLite
// database followed by its sha256, 512-byte aligned as etcdctl expects) or a
// real etcd one (bbolt: a snapshot with its sha256 trailer, or a raw member/snap/db),
// read by src/etcdfile.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AuthState, KvStore, restoreSnapshot, verifySnapshot } from '../kv/index.js';
import { InputError, RefusedError } from '../common/errors.js';
import { fencedDataDirProblem } from './fenceRecord.js';
import { boltTruncation, checkTrailer, looksLikeBolt, scanEtcdDb, type EtcdDbSummary } from '../etcdfile/index.js';
import { clusterIdFor } from '../storage/identity.js';

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
const BBOLT_MAGIC = 0xed0cdaed;

export interface SnapshotKind {
  format: 'lifeboat' | 'etcd' | 'unknown';
  size: number;
  /** Ends in a 32-byte sha256 of the rest (size % 512 == 32). */
  hasTrailer: boolean;
  detail: string;
  /** Set when the file is shorter than its own header says: how much shorter. */
  truncated?: string;
}

/**
 * A SQLite file's size from its header (page size × page count, when the count is
 * valid: its change counter equals the version-valid-for number) against the file's.
 */
function sqliteTruncation(head: Buffer, size: number): string | undefined {
  if (head.length < 100) return undefined;
  const raw = head.readUInt16BE(16);
  const pageSize = raw === 1 ? 65536 : raw;
  const pages = head.readUInt32BE(28);
  if (pageSize < 512 || pages === 0 || head.readUInt32BE(24) !== head.readUInt32BE(92)) return undefined;
  const want = pageSize * pages;
  return size < want ? `its header says ${pages} pages of ${pageSize} bytes (${want} bytes), the file has ${size} bytes` : undefined;
}

/** A directory given where a snapshot file is expected: a fenced data dir says so (exit 3), any other is bad input (exit 2). */
export function refuseDirectory(file: string): void {
  if (!fs.statSync(file).isDirectory()) return;
  const fenced = fencedDataDirProblem(file);
  if (fenced) throw new RefusedError(`${file} is a directory, not a snapshot file: ${fenced}`);
  throw new InputError(
    `${file} is a directory, not a snapshot file; give the file itself (an etcd data dir's is ${path.join(file, 'member', 'snap', 'db')}; for a data dir use 'lifeboat datadir inspect ${file}')`,
  );
}

/** The error for a truncated snapshot: what is missing and what to do, one line. */
export function truncatedSnapshotError(file: string, kind: SnapshotKind): Error {
  return new Error(`snapshot ${file} is truncated (${kind.truncated ?? `${kind.size} bytes`}); copy it again or save a new one`);
}

export function snapshotKind(file: string): SnapshotKind {
  const size = fs.statSync(file).size;
  const fd = fs.openSync(file, 'r');
  const head = Buffer.alloc(100);
  let bolt = false;
  let truncated: string | undefined;
  try {
    const n = fs.readSync(fd, head, 0, head.length, 0);
    // meta page 0 damaged: meta page 1 may still say bbolt
    bolt = head.readUInt32LE(16) === BBOLT_MAGIC || (!head.subarray(0, 16).equals(SQLITE_MAGIC) && looksLikeBolt(fd, size));
    // Shorter than its header says: a cut-off copy, not a raw database without a trailer.
    truncated = bolt ? boltTruncation(fd, file, size) : sqliteTruncation(head.subarray(0, n), size);
  } finally {
    fs.closeSync(fd);
  }
  const hasTrailer = size % 512 === 32;
  const cut = truncated === undefined ? {} : { truncated };
  if (head.subarray(0, 16).equals(SQLITE_MAGIC)) return { format: 'lifeboat', size, hasTrailer, detail: 'Lifeboat snapshot', ...cut };
  if (bolt)
    return {
      format: 'etcd',
      size,
      hasTrailer,
      detail:
        truncated !== undefined
          ? `a truncated etcd (bbolt) snapshot: ${truncated}`
          : hasTrailer
            ? 'etcd (bbolt) snapshot'
            : 'etcd (bbolt) database without a sha256 trailer (a raw member/snap/db?)',
      ...cut,
    };
  return { format: 'unknown', size, hasTrailer, detail: size < 32 ? `only ${size} bytes` : 'neither a Lifeboat nor an etcd snapshot' };
}

export interface SnapshotStatus {
  file: string;
  format: 'lifeboat' | 'etcd';
  /** Whole-store hash (Maintenance.Hash's), in hex. etcd: `etcdctl snapshot status`'s CRC-32C. */
  hash: string;
  revision: number;
  /** etcd: etcdctl's totalKey (every element of every bucket); see etcd.liveKeys. */
  totalKeys: number;
  /** etcd: etcdctl's totalSize (meta.pgid × page size). */
  totalSize: number;
  /** etcd: sha256 of the bbolt bytes, what the trailer must hold (see etcd.trailer). */
  sha256: string;
  /** etcd: consistent_index. */
  appliedIndex: number;
  /** etcd: not stored in the file; derived from the members (see etcd.clusterIdDerived). */
  clusterId: string;
  parentClusterId?: string;
  members: Array<{ id: string; name: string; peerURLs: string[]; clientURLs: string[]; isLearner: boolean }>;
  /** etcd's auth is on in the file: every restore keeps it (users, roles, the switch), so a restored member enforces it. */
  authEnabled: boolean;
  /** Only for an etcd file. */
  etcd?: EtcdFileStatus;
}

export interface EtcdFileStatus {
  /** The sha256 trailer: verified, absent (a raw member/snap/db), or present and wrong. */
  trailer: 'verified' | 'absent' | 'mismatch';
  storedSha256?: string;
  /** Keys that exist at the last revision. */
  liveKeys: number;
  storedRevisions: number;
  /** finishedCompactRev; -1 when never compacted. */
  compactRevision: number;
  clusterVersion?: string;
  /** How clusterId was found: etcd keeps no cluster ID in its backend. */
  clusterIdDerived: string;
  leases: number;
  removedMembers: string[];
  alarms: Array<{ memberId: string; alarm: string }>;
  authEnabled: boolean;
  pageSize: number;
  /** Which meta page was read, and why the other was not, if damaged. */
  metaPage: number;
  otherMetaInvalid?: string;
}

/**
 * etcd keeps no cluster ID in its backend. At bootstrap etcd derives it from the
 * founding members' IDs (sha1 over them, sorted), so while membership never
 * changed the members bucket gives it back. Returns 0 when the file shows a
 * change (a removed member, a learner) or has no members.
 */
export function derivedEtcdClusterId(s: Pick<EtcdDbSummary, 'members' | 'removedMembers'>): bigint {
  if (s.members.length === 0 || s.removedMembers.length > 0 || s.members.some((m) => m.isLearner)) return 0n;
  return clusterIdFor(s.members.map((m) => m.id));
}

const ALARM_NAMES: Record<number, string> = { 1: 'NOSPACE', 2: 'CORRUPT' };

function etcdStatus(file: string, kind: SnapshotKind): SnapshotStatus {
  const s = scanEtcdDb(file);
  const t = checkTrailer(file);
  const cid = derivedEtcdClusterId(s);
  return {
    file: path.resolve(file),
    format: 'etcd',
    hash: s.hash.toString(16),
    revision: s.revision,
    totalKeys: s.totalKey,
    totalSize: s.totalSize,
    sha256: t.computed,
    appliedIndex: s.consistentIndex ?? 0,
    clusterId: cid.toString(16),
    members: s.members.map((m) => ({ id: m.id.toString(16), name: m.name, peerURLs: m.peerURLs, clientURLs: m.clientURLs, isLearner: m.isLearner })),
    authEnabled: s.authEnabled,
    etcd: {
      trailer: !kind.hasTrailer ? 'absent' : t.matches ? 'verified' : 'mismatch',
      ...(t.stored ? { storedSha256: t.stored } : {}),
      liveKeys: s.liveKeys ?? 0,
      storedRevisions: s.revisions,
      compactRevision: s.compactRevision,
      ...(s.clusterVersion !== undefined ? { clusterVersion: s.clusterVersion } : {}),
      clusterIdDerived:
        cid === 0n
          ? 'unknown: membership changed since bootstrap, or no members recorded'
          : 'derived from the founding members; etcd keeps no cluster ID in its backend',
      leases: s.leases.length,
      removedMembers: s.removedMembers.map((id) => id.toString(16)),
      alarms: s.alarms.map((a) => ({ memberId: a.memberId.toString(16), alarm: ALARM_NAMES[a.alarm] ?? String(a.alarm) })),
      authEnabled: s.authEnabled,
      pageSize: s.pageSize,
      metaPage: s.metaPage,
      ...(s.otherMetaInvalid ? { otherMetaInvalid: s.otherMetaInvalid } : {}),
    },
  };
}

/**
 * Verifies the checksum first, then reads the snapshot's contents. An etcd file is
 * read as `etcdctl snapshot status` reads it (no sha256 check; its trailer is
 * reported, not required).
 */
export async function snapshotStatus(file: string): Promise<SnapshotStatus> {
  if (!fs.existsSync(file)) throw new InputError(`snapshot ${file} does not exist; check the path`);
  refuseDirectory(file);
  const kind = snapshotKind(file);
  if (kind.truncated !== undefined) throw truncatedSnapshotError(file, kind);
  if (kind.format === 'etcd') return etcdStatus(file, kind);
  if (kind.format !== 'lifeboat')
    throw new InputError(
      `${file} is not a snapshot lifeboat can read (${kind.detail}); give a file saved by 'lifeboat snapshot save' or 'etcdctl snapshot save'`,
    );
  if (!kind.hasTrailer)
    throw new Error(
      `snapshot ${file} is truncated or has no sha256 trailer (${kind.size} bytes is not 32 past a multiple of 512); copy it again or save a new one`,
    );
  const { sha256 } = await verifySnapshot(file);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-snapstatus-'));
  try {
    const db = path.join(tmp, 'kv.db');
    await restoreSnapshot(file, db);
    const kv = KvStore.open(db, { readonly: true });
    try {
      const parent = kv.cluster.parentClusterId();
      return {
        file: path.resolve(file),
        format: 'lifeboat',
        hash: (await kv.hashAsync()).toString(16),
        revision: kv.currentRevision(),
        totalKeys: kv.range({ key: Buffer.from([0]), rangeEnd: Buffer.from([0]), countOnly: true, serializable: true }).count,
        totalSize: kind.size,
        sha256,
        appliedIndex: kv.appliedIndex(),
        clusterId: (kv.cluster.clusterId() ?? 0n).toString(16),
        ...(parent && parent !== 0n ? { parentClusterId: parent.toString(16) } : {}),
        members: kv.cluster
          .members()
          .map((m) => ({ id: m.id.toString(16), name: m.name, peerURLs: m.peerURLs, clientURLs: m.clientURLs, isLearner: m.isLearner })),
        authEnabled: new AuthState(kv.cluster).enabled(),
      };
    } finally {
      kv.close();
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
