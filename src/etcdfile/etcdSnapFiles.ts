// An etcd data dir's Raft snapshot files, member/snap/<term>-<index>.snap (16 hex
// digits each): snappb.Snapshot{crc, data} with a CRC-32C over data, which is a
// raftpb.Snapshot whose data, in etcd 3.4, is the v2 store as JSON
// ({"Root": {"Path": "/", "Children": {"0": etcd's own records, "1": v2 keys}}}).
// The newest file that reads cleanly counts (as etcd's snapshotter loads it); a
// damaged one is reported and skipped, never used.

import fs from 'node:fs';
import path from 'node:path';
import { crc32c } from '../common/crc32c.js';
import { decodeRaftSnapshot, decodeSnapFile, type EtcdSnapshotMeta } from './raftpbCodec.js';

export interface EtcdSnapFile {
  file: string;
  term: number;
  index: number;
  meta: EtcdSnapshotMeta;
  mtime: string;
  /** Keys (leaf nodes) under the v2 store's /1: what a v3-only restore leaves behind. */
  v2Keys: number;
}

export interface EtcdSnapFiles {
  /** Newest first. */
  files: EtcdSnapFile[];
  /** One line per file that was not used, naming it. */
  damage: string[];
}

interface V2Node {
  Children?: Record<string, V2Node> | null;
  Dir?: boolean;
}

/** Leaf nodes below `node`; the walk is bounded by the JSON's own size. */
function countLeaves(node: V2Node | undefined): number {
  if (!node) return 0;
  let n = 0;
  const stack: V2Node[] = [node];
  while (stack.length > 0) {
    const cur = stack.pop()!;
    const children = cur.Children;
    if (children && typeof children === 'object') stack.push(...Object.values(children));
    else if (cur !== node) n++;
  }
  return n;
}

export function parseSnapName(name: string): { term: number; index: number } | undefined {
  const m = /^([0-9a-f]{16})-([0-9a-f]{16})\.snap$/.exec(name);
  return m ? { term: parseInt(m[1], 16), index: parseInt(m[2], 16) } : undefined;
}

function readSnapFile(file: string, term: number, index: number): EtcdSnapFile {
  const bytes = fs.readFileSync(file);
  const framed = decodeSnapFile(bytes);
  if (framed.data.length === 0) throw new Error('no snapshot data (etcd: ErrEmptySnapshot)');
  const crc = crc32c(framed.data) >>> 0;
  if (crc !== framed.crc) throw new Error(`CRC mismatch: the file says ${framed.crc.toString(16)}, its data gives ${crc.toString(16)}`);
  const snap = decodeRaftSnapshot(framed.data);
  if (snap.meta.index !== index || snap.meta.term !== term) {
    throw new Error(`holds the snapshot at term ${snap.meta.term} index ${snap.meta.index}, its name says term ${term} index ${index}`);
  }
  let v2Keys = 0;
  if (snap.data.length > 0) {
    const store = JSON.parse(snap.data.toString('utf8')) as { Root?: V2Node };
    v2Keys = countLeaves(store.Root?.Children?.['1'] ?? undefined);
  }
  return { file, term, index, meta: snap.meta, mtime: fs.statSync(file).mtime.toISOString(), v2Keys };
}

export function readEtcdSnapFiles(snapDir: string): EtcdSnapFiles {
  const out: EtcdSnapFiles = { files: [], damage: [] };
  const names = fs.existsSync(snapDir) ? fs.readdirSync(snapDir) : [];
  const snaps = names.flatMap((name) => {
    const p = parseSnapName(name);
    return p ? [{ file: path.join(snapDir, name), ...p }] : [];
  });
  snaps.sort((a, b) => b.term - a.term || b.index - a.index);
  for (const s of snaps) {
    try {
      out.files.push(readSnapFile(s.file, s.term, s.index));
    } catch (err) {
      out.damage.push(`snapshot file ${s.file} at byte offset 0: ${(err as Error).message}; not used`);
    }
  }
  return out;
}
