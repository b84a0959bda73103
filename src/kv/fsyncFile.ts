import { closeSync, fsyncSync, openSync } from 'node:fs';
import { failFsyncAt } from '../common/failpoint.js';

/** fsync a file by path; a file that does not exist (no WAL yet) has nothing to sync. */
export function fsyncFile(path: string): void {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    failFsyncAt('kv-fsync-eio', path);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
