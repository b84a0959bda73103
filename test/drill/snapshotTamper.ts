// Damaged snapshots for the drill's tests. A Lifeboat snapshot is the KV's SQLite
// database followed by the sha256 of those bytes (src/kv/snapshotFile.ts), so a
// snapshot with one altered value and a *valid* checksum is: the database cut
// out, one value changed with SQLite, the sha256 written after it again. A
// truncated one loses bytes from its end, so its trailer no longer matches.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import Database from 'better-sqlite3';

const TRAILER = 32;

/** Copies `src` to `dest` with the newest value of `key` replaced by `value`, and a correct sha256 trailer. */
export function alterSnapshotValue(src: string, dest: string, key: string, value: string): void {
  const bytes = fs.readFileSync(src);
  const db = `${dest}.sqlite`;
  fs.writeFileSync(db, bytes.subarray(0, bytes.length - TRAILER));
  const conn = new Database(db);
  try {
    const k = Buffer.from(key);
    const row = conn.prepare('SELECT main, sub FROM kv WHERE key = ? ORDER BY main DESC, sub DESC LIMIT 1').get(k) as { main: number; sub: number } | undefined;
    if (!row) throw new Error(`no key ${key} in ${src}`);
    conn.prepare('UPDATE kv SET value = ? WHERE key = ? AND main = ? AND sub = ?').run(Buffer.from(value), k, row.main, row.sub);
  } finally {
    conn.close();
  }
  const body = fs.readFileSync(db);
  fs.rmSync(db);
  if (body.length % 512 !== 0) throw new Error(`the altered database is ${body.length} bytes, not a multiple of 512`);
  fs.writeFileSync(dest, Buffer.concat([body, createHash('sha256').update(body).digest()]));
}

/** Copies `src` to `dest` without its last `cut` bytes (default one 4 KiB page: the size still looks like a snapshot's). */
export function truncateSnapshot(src: string, dest: string, cut = 4096): void {
  const bytes = fs.readFileSync(src);
  fs.writeFileSync(dest, bytes.subarray(0, bytes.length - cut));
}
