// member/meta: which member and cluster a data dir belongs to, so that a data
// dir (or a file) of another member is never used by mistake.

import { crc32c } from '../common/crc32c.js';
import { writeFileDurably } from './atomicFile.js';
import { StorageCorruptError } from './errors.js';
import type { FileSystem } from './fileSystem.js';
import { metaPath } from './layout.js';
import { getId, putId } from './u64.js';

export interface MemberMeta {
  memberId: bigint;
  clusterId: bigint;
}

const MAGIC = Buffer.from('LBMETA01');
// magic 8 | memberId 8 | clusterId 8 | crc32c(bytes 0..24) 4 | reserved 4
const SIZE = 32;

export function encodeMemberMeta(meta: MemberMeta): Buffer {
  const buf = Buffer.alloc(SIZE);
  MAGIC.copy(buf, 0);
  putId(buf, 8, meta.memberId);
  putId(buf, 16, meta.clusterId);
  buf.writeUInt32LE(crc32c(buf.subarray(0, 24)), 24);
  return buf;
}

export function readMemberMeta(fs: FileSystem, dataDir: string): MemberMeta | undefined {
  const file = metaPath(dataDir);
  if (!fs.exists(file)) return undefined;
  const buf = fs.readFile(file);
  const corrupt = (offset: number, detail: string) => new StorageCorruptError(dataDir, file, offset, detail);
  if (buf.length < SIZE) throw corrupt(buf.length, `member meta is ${buf.length} bytes, expected ${SIZE}`);
  if (!buf.subarray(0, 8).equals(MAGIC)) throw corrupt(0, 'not a member meta file (bad magic)');
  if (buf.readUInt32LE(24) !== crc32c(buf.subarray(0, 24))) throw corrupt(0, 'member meta checksum mismatch');
  return { memberId: getId(buf, 8), clusterId: getId(buf, 16) };
}

export function writeMemberMeta(fs: FileSystem, dataDir: string, meta: MemberMeta): void {
  writeFileDurably(fs, metaPath(dataDir), encodeMemberMeta(meta));
}
