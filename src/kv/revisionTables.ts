// Prepared statements over the `kv` and `live` tables: the only place that spells
// their SQL. Everything above works in revisions and key ranges.

import type Database from 'better-sqlite3';
import type { KeyValue } from './types.js';

/** The current revision of an existing key, without its value. */
export interface LiveEntry {
  main: number;
  sub: number;
  createRevision: number;
  version: number;
  lease: bigint;
}

export interface KeyRange {
  key: Buffer;
  /** Exclusive end; null = every key >= key. */
  end: Buffer | null;
}

const EMPTY = Buffer.alloc(0);

// Leases are int64 IDs usually above 2^53: read them as text so no precision is
// lost, without switching whole statements to BigInt (0 stays a cheap number).
const LEASE = (t: string) => `iif(${t}.lease = 0, 0, CAST(${t}.lease AS TEXT))`;

// Keys and values of range results cross as hex text: better-sqlite3 allocates a
// separate ArrayBuffer per blob, while Buffer.from(hex) uses Node's pool (10k-key
// ranges measured 1.5x faster).
type Row = [string, number, number, number, number | string, string | null];

/** A history row: hex(key), main, sub, create, version, lease, tombstone, hex(value). */
export type HistoryRow = [string, number, number, number, number, number | string, number, string];

function toKeyValue(r: Row): KeyValue {
  return {
    key: Buffer.from(r[0], 'hex'),
    modRevision: r[1],
    createRevision: r[2],
    version: r[3],
    lease: r[4] === 0 ? 0n : BigInt(r[4]),
    value: r[5] ? Buffer.from(r[5], 'hex') : EMPTY,
  };
}

export class RevisionTables {
  private readonly insertRevisionStmt: Database.Statement;
  private readonly liveGetStmt: Database.Statement;
  private readonly liveUpsertStmt: Database.Statement;
  private readonly liveDeleteStmt: Database.Statement;
  private readonly compactStmt: Database.Statement;
  private readonly cache = new Map<string, Database.Statement>();

  constructor(private readonly db: Database.Database) {
    this.insertRevisionStmt = db.prepare(`INSERT INTO kv (key, main, sub, create_rev, version, lease, tombstone, value) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
    this.liveGetStmt = db.prepare(`SELECT main, sub, create_rev, version, ${LEASE('live')} FROM live WHERE key = ?`).raw(true);
    this.liveUpsertStmt = db.prepare(
      `INSERT INTO live (key, main, sub, create_rev, version, lease) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (key) DO UPDATE SET main = excluded.main, sub = excluded.sub,
         create_rev = excluded.create_rev, version = excluded.version, lease = excluded.lease`,
    );
    this.liveDeleteStmt = db.prepare(`DELETE FROM live WHERE key = ?`);
    // Compaction at @rev keeps, per key, only its last revision <= @rev, and not even
    // that when it is a tombstone. Keys not written since the previous compaction
    // (@prev) are already in that shape, so only keys written in (@prev, @rev] are visited.
    this.compactStmt = db.prepare(
      `DELETE FROM kv WHERE key IN (SELECT DISTINCT key FROM kv WHERE main > @prev AND main <= @rev)
         AND main <= @rev
         AND (tombstone = 1 OR EXISTS (SELECT 1 FROM kv n
               WHERE n.key = kv.key AND (n.main, n.sub) > (kv.main, kv.sub) AND n.main <= @rev))`,
    );
  }

  /** Physically removes what a compaction at `rev` makes unreachable; returns the rows removed. */
  compact(prevCompacted: number, rev: number): number {
    return this.compactStmt.run({ prev: prevCompacted, rev }).changes;
  }

  live(key: Buffer): LiveEntry | undefined {
    const r = this.liveGetStmt.get(key) as [number, number, number, number, number | string] | undefined;
    if (!r) return undefined;
    return { main: r[0], sub: r[1], createRevision: r[2], version: r[3], lease: r[4] === 0 ? 0n : BigInt(r[4]) };
  }

  /** Records a put: the new revision row, and the key's live entry. */
  writePut(key: Buffer, main: number, sub: number, createRev: number, version: number, lease: bigint, value: Buffer): void {
    const l = lease === 0n ? 0 : lease;
    this.insertRevisionStmt.run(key, main, sub, createRev, version, l, 0, value);
    this.liveUpsertStmt.run(key, main, sub, createRev, version, l);
  }

  /** Records a delete: a tombstone revision; the key leaves `live`. */
  writeTombstone(key: Buffer, main: number, sub: number): void {
    this.insertRevisionStmt.run(key, main, sub, 0, 0, 0, 1, EMPTY);
    this.liveDeleteStmt.run(key);
  }

  /** Existing keys in the range, in key order (what a DeleteRange deletes). */
  liveKeys(r: KeyRange): Buffer[] {
    const s = this.stmt(`liveKeys:${r.end ? 'b' : 'u'}`, () => `SELECT key FROM live WHERE key >= @key ${r.end ? 'AND key < @end' : ''} ORDER BY key`);
    return s.pluck().all(binds(r)) as Buffer[];
  }

  /**
   * The key-values of the range as of revision `rev`, in key order. `latest` says
   * `rev` is the current revision, so `live` answers; otherwise each key's latest
   * revision <= rev is found in `kv` (and skipped when it is a tombstone).
   */
  rangeAt(r: KeyRange, rev: number, latest: boolean, limit: number, keysOnly: boolean): KeyValue[] {
    const bounded = r.end !== null;
    // Without a limit the statement has no LIMIT clause: a bound LIMIT (even -1) made
    // a one-key read from `live` cost twice as much inside SQLite (25 against 12 µs).
    const limited = limit > 0;
    const name = `range:${latest ? 'l' : 'h'}${bounded ? 'b' : 'u'}${keysOnly ? 'k' : 'v'}${limited ? 'n' : ''}`;
    const s = this.stmt(name, () => {
      const limitClause = limited ? 'LIMIT @limit' : '';
      if (latest) {
        const value = keysOnly ? 'NULL' : `(SELECT hex(k.value) FROM kv k WHERE k.key = l.key AND k.main = l.main AND k.sub = l.sub)`;
        return `SELECT hex(l.key), l.main, l.create_rev, l.version, ${LEASE('l')}, ${value} FROM live l
          WHERE l.key >= @key ${bounded ? 'AND l.key < @end' : ''} ORDER BY l.key ${limitClause}`;
      }
      return `SELECT hex(k.key), k.main, k.create_rev, k.version, ${LEASE('k')}, ${keysOnly ? 'NULL' : 'hex(k.value)'} FROM kv k
        WHERE ${HISTORICAL(bounded)} ORDER BY k.key ${limitClause}`;
    });
    const rows = s.raw(true).all({ ...binds(r), ...(latest ? {} : { rev }), ...(limited ? { limit } : {}) }) as Row[];
    return rows.map(toKeyValue);
  }

  /** How many keys exist in the range at revision `rev`. */
  countAt(r: KeyRange, rev: number, latest: boolean): number {
    const bounded = r.end !== null;
    const s = this.stmt(`count:${latest ? 'l' : 'h'}${bounded ? 'b' : 'u'}`, () =>
      latest ? `SELECT count(*) FROM live WHERE key >= @key ${bounded ? 'AND key < @end' : ''}` : `SELECT count(*) FROM kv k WHERE ${HISTORICAL(bounded)}`,
    );
    return s.pluck().get({ ...binds(r), ...(latest ? {} : { rev }) }) as number;
  }

  /**
   * Stored revisions with from <= main <= to, in revision order, of the keys in `r`
   * (every key when null): watch history. Stops once `maxRows` rows or `maxBytes` of
   * keys and values are read, but never inside a revision; `through` is the last
   * revision the rows are complete for (`to` when nothing was left out). Rows at or
   * below a compaction may be gone; the caller checks the compacted revision first.
   */
  history(r: KeyRange | null, from: number, to: number, maxRows: number, maxBytes: number): { rows: HistoryRow[]; through: number } {
    const name = `history:${r === null ? 'a' : r.end ? 'b' : 'u'}`;
    const s = this.stmt(
      name,
      () =>
        `SELECT hex(k.key), k.main, k.sub, k.create_rev, k.version, ${LEASE('k')}, k.tombstone, hex(k.value) FROM kv k
       WHERE k.main >= @from AND k.main <= @to ${r === null ? '' : `AND k.key >= @key ${r.end ? 'AND k.key < @end' : ''}`}
       ORDER BY k.main, k.sub`,
    ).raw(true);
    const rows: HistoryRow[] = [];
    let bytes = 0;
    let stopAt = -1;
    for (const row of s.iterate({ from, to, ...(r === null ? {} : binds(r)) }) as IterableIterator<HistoryRow>) {
      if (stopAt >= 0 && row[1] !== stopAt) {
        return { rows, through: stopAt };
      }
      rows.push(row);
      bytes += (row[0].length + row[7].length) / 2;
      if (stopAt < 0 && (rows.length >= maxRows || bytes >= maxBytes)) stopAt = row[1];
    }
    return { rows, through: to };
  }

  /** Existing keys attached to a lease, in key order. */
  keysWithLease(lease: bigint): Buffer[] {
    return this.stmt('keysWithLease', () => `SELECT key FROM live WHERE lease = ? ORDER BY key`)
      .pluck()
      .all(lease) as Buffer[];
  }

  /** Whether any key exists at revision `rev`. */
  anyKeyAt(rev: number, latest: boolean): boolean {
    return this.rangeAt({ key: EMPTY, end: null }, rev, latest, 1, true).length > 0;
  }

  /**
   * Stored revisions with main <= upTo in revision order (what HashKV hashes), in
   * pages of text rows "main,sub,create,version,lease,tombstone,hex(key),hex(value)".
   * Text crosses from SQLite to JS several times faster than blobs and columns do,
   * which is most of the cost of hashing a large store. Revisions with main <=
   * hideAtOrBelow are left out when a later revision <= upTo supersedes them:
   * etcd's "keep" set after a compaction.
   */
  *revisionPages(upTo: number, hideAtOrBelow: number, pageSize = 5000): Generator<string[]> {
    const s = this.stmt(
      'revisionPages',
      () =>
        `SELECT concat_ws(',', k.main, k.sub, k.create_rev, k.version, k.lease, k.tombstone, hex(k.key), hex(k.value)) FROM kv k
       WHERE k.main <= @upTo AND (k.main, k.sub) > (@afterMain, @afterSub)
         AND NOT (k.main <= @hide AND (k.tombstone = 1 OR EXISTS (SELECT 1 FROM kv n
           WHERE n.key = k.key AND (n.main, n.sub) > (k.main, k.sub) AND n.main <= @upTo)))
       ORDER BY k.main, k.sub LIMIT @pageSize`,
    ).pluck();
    let afterMain = -1;
    let afterSub = -1;
    for (;;) {
      const rows = s.all({ upTo, hide: hideAtOrBelow, afterMain, afterSub, pageSize }) as string[];
      if (rows.length === 0) return;
      yield rows;
      const last = rows[rows.length - 1].split(',', 2);
      afterMain = Number(last[0]);
      afterSub = Number(last[1]);
    }
  }

  private stmt(name: string, sql: () => string): Database.Statement {
    let s = this.cache.get(name);
    if (!s) {
      s = this.db.prepare(sql());
      this.cache.set(name, s);
    }
    return s;
  }
}

// A row is a key's state at @rev when it is the key's last revision <= @rev.
const HISTORICAL = (bounded: boolean) => `k.key >= @key ${bounded ? 'AND k.key < @end' : ''}
  AND k.main <= @rev AND k.tombstone = 0
  AND NOT EXISTS (SELECT 1 FROM kv n WHERE n.key = k.key AND (n.main, n.sub) > (k.main, k.sub) AND n.main <= @rev)`;

function binds(r: KeyRange): { key: Buffer; end?: Buffer } {
  return r.end ? { key: r.key, end: r.end } : { key: r.key };
}
