// Reads of a store's history beside its ranges (kvApplier.applyRange): a watch's
// events between two revisions, and a key as of one revision (a watch event's prev_kv).

import { keyRange } from './mvccTxn.js';
import type { KeyRange, RevisionTables } from './revisionTables.js';
import type { Revisions } from './mvccTxn.js';
import { EventType, type HistoryBatch, type KeyValue, type KvEvent } from './types.js';

const EMPTY = Buffer.alloc(0);

/** See KvStore.history. */
export function readHistory(
  tables: RevisionTables,
  revs: Revisions,
  range: KeyRange | null,
  from: number,
  to: number,
  limits: { rows: number; bytes: number },
): HistoryBatch {
  const { rows, through } = tables.history(range, from, Math.min(to, revs.current), limits.rows, limits.bytes);
  const events = rows.map((r): KvEvent => {
    const key = Buffer.from(r[0], 'hex');
    if (r[6] === 1) {
      return { type: EventType.Delete, kv: { key, createRevision: 0, modRevision: r[1], version: 0, value: EMPTY, lease: 0n } };
    }
    const kv = {
      key,
      modRevision: r[1],
      createRevision: r[3],
      version: r[4],
      lease: r[5] === 0 ? 0n : BigInt(r[5]),
      value: r[7] ? Buffer.from(r[7], 'hex') : EMPTY,
    };
    return { type: EventType.Put, kv };
  });
  return { events, through: Math.min(through, revs.current) };
}

/** See KvStore.keyAt. */
export function readKeyAt(tables: RevisionTables, revs: Revisions, key: Buffer, rev: number): KeyValue | undefined {
  if (rev <= 0 || rev < revs.compacted || rev > revs.current) return undefined;
  return tables.rangeAt(keyRange(key), rev, rev === revs.current, 1, false)[0];
}
