// A data dir's KV read from a copy: SQLite opening a WAL-mode kv.db, even
// read-only, creates kv.db-wal and kv.db-shm beside it when they are absent (a
// cleanly stopped member leaves neither), so reading the survivor's own file
// would write into the data dir we recover from.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KvStore } from '../kv/index.js';
import { kvPath, memberDir } from '../storage/layout.js';

/** Copies kv.db and its WAL, if any (a member stopped uncleanly leaves committed transactions there). */
function copyKv(fromDb: string, toDb: string): void {
  fs.copyFileSync(fromDb, toDb, fs.constants.COPYFILE_FICLONE);
  if (fs.existsSync(`${fromDb}-wal`)) fs.copyFileSync(`${fromDb}-wal`, `${toDb}-wal`, fs.constants.COPYFILE_FICLONE);
}

/** Copies `dataDir`'s KV into the data dir `into` (restore: the copy becomes the new member's store). */
export function copyKvFiles(dataDir: string, into: string): void {
  fs.mkdirSync(memberDir(into), { recursive: true });
  copyKv(kvPath(dataDir), kvPath(into));
}

/** Copies kv.db (and kv.db-wal) into a private temp dir, opens the copy, and removes it after. */
export async function withKvCopy<T>(dataDir: string, use: (kv: KvStore) => Promise<T>): Promise<T> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-kv-copy-'));
  try {
    const copy = path.join(tmp, 'kv.db');
    copyKv(kvPath(dataDir), copy);
    const kv = KvStore.open(copy, { readonly: true });
    try {
      return await use(kv);
    } finally {
      kv.close();
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}
