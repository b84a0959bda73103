// etcd's MVCC read and write transactions (mvcc/kvstore_txn.go) over our tables.
// A write transaction is one revision: every change in it gets main = beginRev + 1
// and sub = its position among the transaction's changes. The revision becomes
// current when the transaction ends with at least one change.

import { ErrCompacted, ErrFutureRev } from './errors.js';
import type { KeyRange, RevisionTables } from './revisionTables.js';
import type { KeyValue } from './types.js';

/** The revision counters; the store persists them with each apply. */
export interface Revisions {
  current: number;
  /** etcd's compactMainRev: -1 until the first compaction. */
  compacted: number;
}

export interface RangeOptions {
  /** 0: no limit. */
  limit?: number;
  /** 0: the transaction's current revision. */
  rev?: number;
  countOnly?: boolean;
  keysOnly?: boolean;
}

export interface RangeResult {
  kvs: KeyValue[];
  /** Every key in the range at the revision read, whatever the limit. */
  count: number;
  /** The revision the transaction sees as current (etcd's header revision). */
  rev: number;
}

export interface TxnRead {
  /** The revision this transaction reads as current. */
  rev(): number;
  range(r: KeyRange, ro?: RangeOptions): RangeResult;
}

/** etcd's range_end conventions: empty = one key, "\0" = every key >= key. */
export function keyRange(key: Uint8Array, rangeEnd?: Uint8Array): KeyRange {
  const k = asBuffer(key);
  if (!rangeEnd || rangeEnd.length === 0) return { key: k, end: Buffer.concat([k, ZERO]) };
  if (rangeEnd.length === 1 && rangeEnd[0] === 0) return { key: k, end: null };
  return { key: k, end: asBuffer(rangeEnd) };
}

export function asBuffer(b: Uint8Array): Buffer {
  return Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
}

const ZERO = Buffer.from([0]);

function rangeKeys(tables: RevisionTables, r: KeyRange, curRev: number, compacted: number, ro: RangeOptions): RangeResult {
  let rev = ro.rev ?? 0;
  if (rev > curRev) throw ErrFutureRev;
  if (rev <= 0) rev = curRev;
  if (rev < compacted) throw ErrCompacted;
  // `live` holds the newest state, which is curRev inside and outside write txns.
  const latest = rev === curRev;
  if (ro.countOnly) return { kvs: [], count: tables.countAt(r, rev, latest), rev: curRev };
  const limit = ro.limit ?? 0;
  const kvs = tables.rangeAt(r, rev, latest, limit, ro.keysOnly ?? false);
  const count = limit > 0 && kvs.length >= limit ? tables.countAt(r, rev, latest) : kvs.length;
  return { kvs, count, rev: curRev };
}

/** A read at the store's current revision, outside any write. */
export class ReadTxn implements TxnRead {
  constructor(
    private readonly tables: RevisionTables,
    private readonly revs: Revisions,
  ) {}

  rev(): number {
    return this.revs.current;
  }

  range(r: KeyRange, ro: RangeOptions = {}): RangeResult {
    return rangeKeys(this.tables, r, this.revs.current, this.revs.compacted, ro);
  }
}

export class WriteTxn implements TxnRead {
  readonly beginRev: number;
  private changes = 0;

  constructor(
    private readonly tables: RevisionTables,
    private readonly revs: Revisions,
  ) {
    this.beginRev = revs.current;
  }

  get changed(): boolean {
    return this.changes > 0;
  }

  /** Reads inside the transaction see its own earlier changes. */
  rev(): number {
    return this.changes > 0 ? this.beginRev + 1 : this.beginRev;
  }

  range(r: KeyRange, ro: RangeOptions = {}): RangeResult {
    return rangeKeys(this.tables, r, this.rev(), this.revs.compacted, ro);
  }

  /** Returns the revision of the write. */
  put(key: Buffer, value: Buffer, lease: bigint): number {
    const rev = this.beginRev + 1;
    const prev = this.tables.live(key);
    // A key that exists keeps its create revision; one that does not starts a new generation.
    const createRev = prev ? prev.createRevision : rev;
    const version = prev ? prev.version + 1 : 1;
    this.tables.writePut(key, rev, this.changes++, createRev, version, lease, value);
    return rev;
  }

  /** Deletes every existing key in the range; a no-op delete does not use a revision. */
  deleteRange(r: KeyRange): { deleted: number; rev: number } {
    const keys = this.tables.liveKeys(r);
    for (const key of keys) this.tables.writeTombstone(key, this.beginRev + 1, this.changes++);
    if (keys.length > 0 || this.changes > 0) return { deleted: keys.length, rev: this.beginRev + 1 };
    return { deleted: 0, rev: this.beginRev };
  }

  end(): void {
    if (this.changes > 0) this.revs.current = this.beginRev + 1;
  }
}
