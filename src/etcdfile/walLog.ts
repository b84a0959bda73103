// The Raft state an etcd WAL holds, as etcd's ReadAll builds it (E34 wal/wal.go):
// every metadata record must be the same; the last hard state counts; entries at or
// below the start snapshot are skipped, and an entry overwrites the log from its
// index on (a new leader's entries replace what an old one left uncommitted).

import { decodeEntry, decodeHardState, decodeWalMetadata, decodeWalSnapshot, type EtcdEntry, type EtcdHardState } from './raftpbCodec.js';
import { EtcdWalError } from './walErrors.js';
import { WAL_RECORD, type WalRecord } from './walRecord.js';

export interface WalSnapshotMark {
  index: number;
  term: number;
  file: string;
  offset: number;
}

export interface WalContents {
  nodeId?: bigint;
  clusterId?: bigint;
  hardState: EtcdHardState;
  snapshots: WalSnapshotMark[];
  /** Entries after `start`, in index order. */
  entries: EtcdEntry[];
  /** Entries later overwritten by an entry at the same or a lower index. */
  overwritten: number;
}

/** Everything but the entries: the marks are needed to choose where the log starts. */
export function walHeaderFacts(records: readonly WalRecord[]): Pick<WalContents, 'nodeId' | 'clusterId' | 'hardState' | 'snapshots'> {
  const out: Pick<WalContents, 'nodeId' | 'clusterId' | 'hardState' | 'snapshots'> = { hardState: { term: 0, vote: 0n, commit: 0 }, snapshots: [] };
  let metadata: Buffer | undefined;
  for (const rec of records) {
    const damaged = (detail: string) => new EtcdWalError(rec.file, rec.offset, detail);
    try {
      if (rec.type === WAL_RECORD.metadata) {
        if (metadata && !metadata.equals(rec.data)) throw damaged('metadata record differs from the first one (etcd: ErrMetadataConflict)');
        metadata ??= rec.data;
        const m = decodeWalMetadata(rec.data);
        out.nodeId = m.nodeId;
        out.clusterId = m.clusterId;
      } else if (rec.type === WAL_RECORD.state) {
        out.hardState = decodeHardState(rec.data);
      } else if (rec.type === WAL_RECORD.snapshot) {
        out.snapshots.push({ ...decodeWalSnapshot(rec.data), file: rec.file, offset: rec.offset });
      }
    } catch (err) {
      if (err instanceof EtcdWalError) throw err;
      throw damaged(`record of type ${rec.type} does not decode (${(err as Error).message})`);
    }
  }
  return out;
}

/** The entries after `start` with etcd's overwrite rule. */
export function walEntries(records: readonly WalRecord[], start: { index: number; term: number }): { entries: EtcdEntry[]; overwritten: number } {
  const entries: EtcdEntry[] = [];
  let overwritten = 0;
  let matched = start.index === 0;
  for (const rec of records) {
    if (rec.type === WAL_RECORD.snapshot) {
      const s = decodeWalSnapshot(rec.data);
      if (s.index === start.index) {
        if (s.term !== start.term) {
          throw new EtcdWalError(rec.file, rec.offset, `snapshot mark at index ${s.index} has term ${s.term}, the snapshot file says ${start.term}`);
        }
        matched = true;
      }
      continue;
    }
    if (rec.type !== WAL_RECORD.entry) continue;
    let e: EtcdEntry;
    try {
      e = decodeEntry(rec.data);
    } catch (err) {
      throw new EtcdWalError(rec.file, rec.offset, `entry record does not decode (${(err as Error).message})`);
    }
    if (e.index <= start.index) continue;
    const at = e.index - start.index - 1;
    if (at > entries.length) {
      throw new EtcdWalError(rec.file, rec.offset, `entry ${e.index} leaves a gap: the log so far ends at ${start.index + entries.length}`);
    }
    overwritten += entries.length - at;
    entries.length = at;
    entries.push(e);
  }
  if (!matched) {
    const where = records.at(-1);
    throw new EtcdWalError(
      where?.file ?? '(no WAL)',
      0,
      `no snapshot mark for the snapshot at index ${start.index} term ${start.term} (etcd: ErrSnapshotNotFound)`,
    );
  }
  return { entries, overwritten };
}
