// A data dir's KV read from a private copy: SQLite opening a WAL-mode kv.db, even
// read-only, creates kv.db-wal and kv.db-shm beside it when they are absent (a
// cleanly stopped member leaves neither), so reading the survivor's own file
// would write into the data dir we recover from.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { KvStore } from '../kv/index.js';
import { kvPath } from '../storage/layout.js';

/**
 * Copies kv.db (and kv.db-wal) into a private temp dir under `under` (the system's
 * temp dir by default), opens the copy, and removes it after.
 */
export async function withKvCopy<T>(dataDir: string, use: (kv: KvStore) => Promise<T>, under = os.tmpdir()): Promise<T> {
  const tmp = fs.mkdtempSync(path.join(under, '.lifeboat-kv-copy-'));
  try {
    const copy = path.join(tmp, 'kv.db');
    fs.copyFileSync(kvPath(dataDir), copy, fs.constants.COPYFILE_FICLONE);
    if (fs.existsSync(`${kvPath(dataDir)}-wal`)) fs.copyFileSync(`${kvPath(dataDir)}-wal`, `${copy}-wal`, fs.constants.COPYFILE_FICLONE);
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
