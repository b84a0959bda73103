// Read-only inspection of a stopped member's data dir: who it was, how far its
// log and KV got, what lies past the commit index, and any damage found. The
// JSON form is complete enough for `recover plan --from-inspect` on another host.
import fs from 'node:fs';
import path from 'node:path';
import { KvStore } from '../kv/index.js';
import { decodeConfChange } from '../raft/confChange.js';
import { EntryType } from '../raft/types.js';
import { kvPath, parseSnapshotName, snapDir, walDir } from '../storage/layout.js';
import { RaftStorage } from '../storage/raftStorage.js';
import { StorageError } from '../storage/errors.js';
import { readMarker } from '../storage/markers.js';

export interface InspectedMember {
  id: string;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

/** Everything `recover plan` compares between survivors. IDs are hex strings. */
export interface DataDirReport {
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
  uncommitted: { count: number; from?: number; to?: number; confChanges: number };
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

/**
 * Inspects a data dir without changing it. The member must be stopped: a running
 * one holds the lock and the error says so.
 */
export async function inspectDataDir(dataDir: string): Promise<DataDirReport> {
  if (!fs.existsSync(dataDir)) throw new StorageError(`data dir ${dataDir} does not exist; check the path`);
  const opened = RaftStorage.open(dataDir, { readOnly: true });
  const { storage, state, member, warnings } = opened;
  try {
    if (!fs.existsSync(kvPath(dataDir)))
      throw new StorageError(
        `data dir ${dataDir} has no KV store (${kvPath(dataDir)} is missing); check the path, or recover this member from another member or a snapshot`,
      );
    const kv = KvStore.open(kvPath(dataDir), { readonly: true });
    try {
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
      const count = kv.range({ key: Buffer.from([0]), rangeEnd: Buffer.from([0]), countOnly: true, serializable: true }).count;
      const hashed = await kv.hashKvAsync(0);
      const parent = kv.cluster.parentClusterId();
      return {
        dataDir: path.resolve(dataDir),
        memberId: hex(member.memberId),
        clusterId: hex(kv.cluster.clusterId() ?? member.clusterId),
        ...(parent && parent !== 0n ? { parentClusterId: hex(parent) } : {}),
        members: kv.cluster.members().map((m) => ({ id: hex(m.id), name: m.name, peerURLs: m.peerURLs, clientURLs: m.clientURLs, isLearner: m.isLearner })),
        voters: [...conf.voters].map(hex),
        learners: [...conf.learners].map(hex),
        lastTerm: last?.term ?? state.snapshot.term,
        lastIndex: last?.index ?? state.snapshot.index,
        firstIndex: state.snapshot.index + 1,
        snapshotIndex: state.snapshot.index,
        commitIndex: hs.commit,
        appliedIndex: kv.appliedIndex(),
        uncommitted: {
          count: past.length,
          ...(past.length > 0 ? { from: past[0].index, to: past[past.length - 1].index } : {}),
          confChanges: past.filter((e) => e.type === EntryType.ConfChange).length,
        },
        kvRevision: kv.currentRevision(),
        compactRevision: kv.compactRevision(),
        keyCount: count,
        hash: hashed.hash,
        lastWrite: newestLogWrite(dataDir),
        ...(newestSnapshotAt(dataDir) ? { snapshotTakenAt: newestSnapshotAt(dataDir) } : {}),
        markers: (['removed', 'superseded', 'forced'] as const).filter((m) => readMarker(dataDir, m) !== undefined),
        damage: warnings.map((w) => `${w.msg}${'file' in w ? ` (${String((w as { file?: string }).file)})` : ''}`),
      };
    } finally {
      kv.close();
    }
  } finally {
    storage.close();
  }
}
