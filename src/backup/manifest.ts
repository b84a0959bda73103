// The sidecar manifest of every stored object, written LAST: it is the commit
// marker, so an object without its manifest does not exist for readers (a
// crash between the two leaves garbage for prune, never a half-visible backup).
// JSON, because a person reading a store should be able to read these; the
// bytes they describe are checked against the two sha256 sums they carry.
import os from 'node:os';
import type { Compression, ObjectKind } from './layout.js';

export const MANIFEST_FORMAT = 1;

export interface StoredBytes {
  /** the data object's key (under the store's prefix) */
  object: string;
  compression: Compression;
  /** age recipients (public keys) the object is encrypted to; empty: not encrypted */
  recipients: string[];
  storedSize: number;
  storedSha256: string;
  plainSize: number;
  plainSha256: string;
}

/** A HashKV the agent read from the live cluster: what a replay must reproduce. */
export interface HashPoint {
  revision: number;
  hash: number;
  compactRevision: number;
}

export interface ManifestCommon {
  format: typeof MANIFEST_FORMAT;
  kind: ObjectKind;
  /** 16 hex digits */
  clusterId: string;
  fromRevision: number;
  toRevision: number;
  createdAt: string;
  agent: { host: string; pid: number };
}

export interface FullManifest extends ManifestCommon, StoredBytes {
  kind: 'full';
  runtime: 'etcd' | 'lifeboat';
  /** the member that served the snapshot */
  member: { id: string; name: string; endpoint: string };
  /** the snapshot's own revision (read from the file), = fromRevision = toRevision */
  revision: number;
  compactRevision: number;
  keyCount: number;
  /** when the snapshot was taken (the agent's clock) */
  takenAt: string;
  hashPoints: HashPoint[];
}

export interface SegmentManifest extends ManifestCommon, StoredBytes {
  kind: 'segment';
  runtime: 'etcd' | 'lifeboat';
  /** the member whose watch stream delivered it */
  member: { endpoint: string };
  revisions: number;
  events: number;
  leaseRecords: number;
  /** the window of the first revision starts here: the agent was last confirmed current at this time */
  windowStart: string;
  /** when the agent saw the first and the last revision */
  firstSeenAt: string;
  lastSeenAt: string;
  hashPoints: HashPoint[];
}

export type GapReason = 'compacted' | 'watch-cancelled' | 'new-cluster-id' | 'restore';

export interface GapManifest extends ManifestCommon {
  kind: 'gap';
  reason: GapReason;
  detail: string;
}

export type Manifest = FullManifest | SegmentManifest | GapManifest;

export function agentIdentity(): { host: string; pid: number } {
  return { host: os.hostname(), pid: process.pid };
}

export function serializeManifest(m: Manifest): Buffer {
  return Buffer.from(`${JSON.stringify(m, null, 2)}\n`);
}

export class ManifestError extends Error {
  constructor(key: string, why: string) {
    super(`manifest ${key}: ${why}`);
    this.name = 'ManifestError';
  }
}

const isRev = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isHex = (v: unknown, len?: number) => typeof v === 'string' && /^[0-9a-f]+$/.test(v) && (len === undefined || v.length === len);

/** Parse and check a manifest's shape (not the object's bytes: see objectCodec.ts). */
export function parseManifest(key: string, bytes: Buffer): Manifest {
  let m: Record<string, unknown>;
  try {
    m = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>;
  } catch (e) {
    throw new ManifestError(key, `not JSON (${(e as Error).message})`);
  }
  const bad = (why: string) => new ManifestError(key, why);
  if (m === null || typeof m !== 'object') throw bad('not a JSON object');
  if (m.format !== MANIFEST_FORMAT) throw bad(`format ${String(m.format)}; this Lifeboat reads format ${MANIFEST_FORMAT}`);
  if (!isHex(m.clusterId, 16)) throw bad('clusterId is not 16 hex digits');
  if (!isRev(m.fromRevision) || !isRev(m.toRevision) || (m.fromRevision as number) > (m.toRevision as number))
    throw bad('fromRevision/toRevision are not a revision range');
  if (m.kind === 'gap') return m as unknown as GapManifest;
  if (m.kind !== 'full' && m.kind !== 'segment') throw bad(`unknown kind ${JSON.stringify(m.kind)}`);
  if (typeof m.object !== 'string' || !m.object) throw bad('no object key');
  if (!isHex(m.storedSha256, 64) || !isHex(m.plainSha256, 64)) throw bad('sha256 sums missing or malformed');
  if (!isRev(m.storedSize) || !isRev(m.plainSize)) throw bad('sizes missing');
  if (!['gzip', 'brotli', 'none'].includes(m.compression as string)) throw bad(`unknown compression ${JSON.stringify(m.compression)}`);
  if (!Array.isArray(m.recipients)) throw bad('recipients missing');
  if (!Array.isArray(m.hashPoints)) throw bad('hashPoints missing');
  return m as unknown as Manifest;
}
