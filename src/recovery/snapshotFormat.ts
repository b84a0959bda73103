// What a snapshot file is, and its status: a Lifeboat snapshot (the KV's SQLite
// database followed by its sha256, 512-byte aligned as etcdctl expects) or a
// real etcd one (bbolt), which only the migration work will read.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KvStore } from '../kv/index.js';
import { InputError } from '../client/errors.js';

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
const BBOLT_MAGIC = 0xed0cdaed;

export interface SnapshotKind {
  format: 'lifeboat' | 'etcd' | 'unknown';
  size: number;
  /** Ends in a 32-byte sha256 of the rest (size % 512 == 32). */
  hasTrailer: boolean;
  detail: string;
}

export async function snapshotKind(file: string): Promise<SnapshotKind> {
  const size = fs.statSync(file).size;
  const fd = fs.openSync(file, 'r');
  const head = Buffer.alloc(32);
  try {
    fs.readSync(fd, head, 0, 32, 0);
  } finally {
    fs.closeSync(fd);
  }
  const hasTrailer = size % 512 === 32;
  if (head.subarray(0, 16).equals(SQLITE_MAGIC)) return { format: 'lifeboat', size, hasTrailer, detail: 'Lifeboat snapshot' };
  if (head.readUInt32LE(16) === BBOLT_MAGIC) return { format: 'etcd', size, hasTrailer, detail: 'etcd (bbolt) snapshot' };
  return { format: 'unknown', size, hasTrailer, detail: size < 32 ? `only ${size} bytes` : 'neither a Lifeboat nor an etcd snapshot' };
}

export interface SnapshotStatus {
  file: string;
  format: 'lifeboat';
  /** Whole-store hash (Maintenance.Hash's), in hex. */
  hash: string;
  revision: number;
  totalKeys: number;
  totalSize: number;
  sha256: string;
  appliedIndex: number;
  clusterId: string;
  parentClusterId?: string;
  members: Array<{ id: string; name: string; peerURLs: string[]; clientURLs: string[]; isLearner: boolean }>;
}

/** Verifies the checksum first, then reads the snapshot's contents. */
export async function snapshotStatus(file: string): Promise<SnapshotStatus> {
  if (!fs.existsSync(file)) throw new InputError(`snapshot ${file} does not exist; check the path`);
  const kind = await snapshotKind(file);
  if (kind.format === 'etcd') {
    throw new InputError(`${file} is a real etcd (bbolt) snapshot; this version of lifeboat cannot read it yet (it comes with the migration work)`);
  }
  if (kind.format !== 'lifeboat') throw new InputError(`${file} is not a snapshot lifeboat can read (${kind.detail})`);
  if (!kind.hasTrailer) throw new Error(`snapshot ${file} is truncated or has no sha256 trailer (${kind.size} bytes is not 32 past a multiple of 512)`);
  const { sha256 } = await KvStore.verifySnapshot(file);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-snapstatus-'));
  try {
    const db = path.join(tmp, 'kv.db');
    await KvStore.restoreSnapshot(file, db);
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
        members: kv.cluster.members().map((m) => ({ id: m.id.toString(16), name: m.name, peerURLs: m.peerURLs, clientURLs: m.clientURLs, isLearner: m.isLearner })),
      };
    } finally {
      kv.close();
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
