import { closeSync, fsyncSync, openSync } from 'node:fs';
import { failpointSet } from '../common/failpoint.js';

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
    if (failpointSet('kv-fsync-eio')) throw Object.assign(new Error(`EIO: i/o error, fsync '${path}'`), { code: 'EIO' });
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}
