// Consistency hashes. HashKV is etcd's (mvcc/kvstore.go HashByRev): CRC-32C over
// the bucket name "key" and then each (revision key ‖ marshalled KeyValue) with
// revision <= R in revision order, leaving out what a compaction has made
// unreachable. Members that applied the same entries agree on it, whenever each
// compacted. hash() covers the whole store, for Maintenance.Hash.

import { crc32c } from '../common/crc32c.js';
import type Database from 'better-sqlite3';
import { ErrCompacted, ErrFutureRev } from './errors.js';
import { writeRevisionRecordFromRow } from './keyValueCodec.js';
import type { Revisions } from './mvccTxn.js';
import { ProtoWriter } from '../common/protobufWire.js';
import type { RevisionTables } from './revisionTables.js';
import type { HashKvResult } from './types.js';

const CHUNK = 64 * 1024;

function hashRevisions(crc: number, tables: RevisionTables, upTo: number, hideAtOrBelow: number): number {
  const w = new ProtoWriter(CHUNK * 2);
  for (const rows of tables.revisionPages(upTo, hideAtOrBelow)) {
    for (const row of rows) {
      writeRevisionRecordFromRow(w, row);
      if (w.length >= CHUNK) {
        crc = crc32c(w.view(), crc);
        w.reset();
      }
    }
  }
  return w.length > 0 ? crc32c(w.view(), crc) : crc;
}

export function hashKv(tables: RevisionTables, revs: Revisions, revision: number): HashKvResult {
  if (revision > 0 && revision <= revs.compacted) throw ErrCompacted;
  if (revision > 0 && revision > revs.current) throw ErrFutureRev;
  const rev = revision > 0 ? revision : revs.current;
  // etcd hides compacted-away revisions only when its keep set is non-empty, that
  // is, when some key exists at `rev`; otherwise it hashes all that is stored.
  const hide = tables.anyKeyAt(rev, rev === revs.current) ? revs.compacted : -1;
  const hash = hashRevisions(crc32c('key'), tables, rev, hide);
  return { hash, revision: revs.current, compactRevision: revs.compacted };
}

/**
 * CRC-32C over every stored revision and the cluster tables. Leaves out the applied
 * index and term, which legitimately differ between members (as etcd leaves out
 * consistent_index).
 */
export function hashStore(db: Database.Database, tables: RevisionTables, revs: Revisions): number {
  let crc = hashRevisions(crc32c('key'), tables, revs.current, -1);
  crc = crc32c(`revisions:${revs.current}:${revs.compacted}`, crc);
  for (const [table, order] of CLUSTER_TABLES) {
    crc = crc32c(table, crc);
    const rows = db.prepare(`SELECT * FROM ${table} ORDER BY ${order}`).raw(true).safeIntegers(true).all() as unknown[][];
    for (const row of rows) crc = crc32c(JSON.stringify(row, canonical), crc);
  }
  return crc;
}

const CLUSTER_TABLES = [
  ['meta', 'name'],
  ['members', 'id'],
  ['removed_members', 'id'],
  ['leases', 'id'],
  ['alarms', 'member_id, alarm'],
] as const;

function canonical(_key: string, v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (v && typeof v === 'object' && (v as { type?: string }).type === 'Buffer') {
    return Buffer.from((v as { data: number[] }).data).toString('base64');
  }
  return v;
}
