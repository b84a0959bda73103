// member/snap/<term>-<index>.snap: one raft snapshot, its metadata and the opaque
// data blob from the KV, each part with its own CRC-32C so damage is placed.
//
//   magic "LBSNAP01" 8 | memberId u64 | index u64 | term u64 |
//   voter count u32 | learner count u32 | voters u64[] | learners u64[] |
//   data length u64 | crc32c(all header bytes before it) u32
//   data
//   crc32c(data) u32
//
// Written under a temp name, fsynced, renamed, and the directory fsynced, so a
// snapshot file under its final name is always complete.

import path from 'node:path';
import { crc32c } from '../common/crc32c.js';
import type { NodeId, Snapshot, SnapshotMeta } from '../raft/types.js';
import { StorageCorruptError } from './errors.js';
import type { FileSystem } from './fileSystem.js';
import { parseSnapshotName, snapDir, snapshotName, TEMP_SUFFIX } from './layout.js';
import { formatId } from '../common/ids.js';
import { asBuffer, getId, getU64, putId, putU64 } from './u64.js';

const MAGIC = Buffer.from('LBSNAP01');
const FIXED = 40; // magic .. learner count
/** Bound on voters + learners, so a damaged count cannot make us read nonsense. */
const MAX_MEMBERS = 65536;

export interface SnapshotFileInfo {
  name: string;
  file: string;
  term: number;
  index: number;
}

function encodeHeader(memberId: NodeId, meta: SnapshotMeta, dataLength: number): Buffer {
  const { voters, learners } = meta.conf;
  const size = FIXED + 8 * (voters.length + learners.length) + 8 + 4;
  const buf = Buffer.alloc(size);
  MAGIC.copy(buf, 0);
  putId(buf, 8, memberId);
  putU64(buf, 16, meta.index);
  putU64(buf, 24, meta.term);
  buf.writeUInt32LE(voters.length, 32);
  buf.writeUInt32LE(learners.length, 36);
  let off = FIXED;
  for (const id of [...voters, ...learners]) {
    putId(buf, off, id);
    off += 8;
  }
  putU64(buf, off, dataLength);
  buf.writeUInt32LE(crc32c(buf.subarray(0, off + 8)), off + 8);
  return buf;
}

export function listSnapshots(fs: FileSystem, dataDir: string): SnapshotFileInfo[] {
  const dir = snapDir(dataDir);
  const found: SnapshotFileInfo[] = [];
  for (const name of fs.list(dir)) {
    const parsed = parseSnapshotName(name);
    if (parsed) found.push({ name, file: path.join(dir, name), ...parsed });
  }
  return found.sort((a, b) => a.index - b.index || a.term - b.term);
}

/** Writes the snapshot durably and returns its file. */
export function writeSnapshotFile(fs: FileSystem, dataDir: string, memberId: NodeId, snap: Snapshot): string {
  const dir = snapDir(dataDir);
  const file = path.join(dir, snapshotName(snap.meta.term, snap.meta.index));
  const tmp = file + TEMP_SUFFIX;
  if (fs.exists(tmp)) fs.unlink(tmp);
  const fh = fs.create(tmp);
  try {
    const header = encodeHeader(memberId, snap.meta, snap.data.byteLength);
    const trailer = Buffer.alloc(4);
    trailer.writeUInt32LE(crc32c(asBuffer(snap.data)), 0);
    fs.write(fh, header, 0);
    fs.write(fh, snap.data, header.length);
    fs.write(fh, trailer, header.length + snap.data.byteLength);
    fs.fsync(fh);
  } finally {
    fs.close(fh);
  }
  fs.rename(tmp, file);
  fs.fsyncDir(dir);
  return file;
}

/** Decodes and verifies a snapshot file; any damage throws StorageCorruptError. */
export function readSnapshotFile(fs: FileSystem, dataDir: string, info: SnapshotFileInfo, memberId: NodeId): Snapshot {
  const buf = fs.readFile(info.file);
  const corrupt = (offset: number, detail: string) => new StorageCorruptError(dataDir, info.file, offset, detail);
  if (buf.length < FIXED) throw corrupt(buf.length, `file is ${buf.length} bytes, shorter than a snapshot header`);
  if (!buf.subarray(0, 8).equals(MAGIC)) throw corrupt(0, 'not a snapshot file (bad magic)');
  const nVoters = buf.readUInt32LE(32);
  const nLearners = buf.readUInt32LE(36);
  if (nVoters + nLearners > MAX_MEMBERS) throw corrupt(32, `implausible member count ${nVoters + nLearners}`);
  const lenAt = FIXED + 8 * (nVoters + nLearners);
  const dataAt = lenAt + 12;
  if (buf.length < dataAt) throw corrupt(buf.length, `file ends inside the snapshot header (${dataAt} bytes)`);
  if (buf.readUInt32LE(lenAt + 8) !== crc32c(buf.subarray(0, lenAt + 8))) throw corrupt(0, 'snapshot header checksum mismatch');
  const owner = getId(buf, 8);
  if (owner !== memberId) throw corrupt(8, `snapshot belongs to member ${formatId(owner)}, not ${formatId(memberId)} (a file from another data dir?)`);
  const meta: SnapshotMeta = { index: getU64(buf, 16), term: getU64(buf, 24), conf: { voters: [], learners: [] } };
  for (let i = 0; i < nVoters + nLearners; i++) (i < nVoters ? meta.conf.voters : meta.conf.learners).push(getId(buf, FIXED + 8 * i));
  if (meta.index !== info.index || meta.term !== info.term) {
    throw corrupt(16, `snapshot header says index ${meta.index} term ${meta.term}, its name says index ${info.index} term ${info.term}`);
  }
  const dataLength = getU64(buf, lenAt);
  const end = dataAt + dataLength + 4;
  if (buf.length !== end) throw corrupt(Math.min(buf.length, end), `file is ${buf.length} bytes, its header says ${end} (truncated?)`);
  const data = buf.subarray(dataAt, dataAt + dataLength);
  if (buf.readUInt32LE(dataAt + dataLength) !== crc32c(data)) throw corrupt(dataAt, `snapshot data checksum mismatch (${dataLength} bytes)`);
  return { meta, data };
}
