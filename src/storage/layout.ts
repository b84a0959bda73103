// Where things live in a data directory. The member owns <data-dir>/member/:
//
//   member/lock                       pid of the process that has the data dir open
//   member/meta                       member ID and cluster ID (checksummed)
//   member/wal/<seq>-<index>.wal      raft log segments (16 hex digits each: sequence, first index)
//   member/snap/<term>-<index>.snap   raft snapshots: metadata + the KV's data blob (newest two kept)
//   member/kv.db                      the KV backend (SQLite; src/kv)
//   member/received-<from>-<ms>.db    a KV snapshot from the leader, until installed as kv.db
//                                     (server/receivedSnapshots.ts; the raft snapshot refers to it)

import path from 'node:path';

export function memberDir(dataDir: string): string {
  return path.join(dataDir, 'member');
}
export function lockPath(dataDir: string): string {
  return path.join(memberDir(dataDir), 'lock');
}
export function metaPath(dataDir: string): string {
  return path.join(memberDir(dataDir), 'meta');
}
export function walDir(dataDir: string): string {
  return path.join(memberDir(dataDir), 'wal');
}
export function snapDir(dataDir: string): string {
  return path.join(memberDir(dataDir), 'snap');
}
export function kvPath(dataDir: string): string {
  return path.join(memberDir(dataDir), 'kv.db');
}

/** Suffix of files being written; a leftover one (a crash mid-write) is removed at open. */
export const TEMP_SUFFIX = '.tmp';

function hex16(n: number): string {
  return n.toString(16).padStart(16, '0');
}

export function segmentName(seq: number, firstIndex: number): string {
  return `${hex16(seq)}-${hex16(firstIndex)}.wal`;
}

export function parseSegmentName(name: string): { seq: number; firstIndex: number } | undefined {
  const m = /^([0-9a-f]{16})-([0-9a-f]{16})\.wal$/.exec(name);
  if (!m) return undefined;
  return { seq: parseInt(m[1], 16), firstIndex: parseInt(m[2], 16) };
}

export function snapshotName(term: number, index: number): string {
  return `${hex16(term)}-${hex16(index)}.snap`;
}

export function parseSnapshotName(name: string): { term: number; index: number } | undefined {
  const m = /^([0-9a-f]{16})-([0-9a-f]{16})\.snap$/.exec(name);
  if (!m) return undefined;
  return { term: parseInt(m[1], 16), index: parseInt(m[2], 16) };
}
