import { closeSync, fsyncSync, openSync, promises as fsp } from 'node:fs';
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
    if (__LIFEBOAT_FAULTS__) failFsyncAt('kv-fsync-eio', path);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** The same in libuv's thread pool, off the event loop. */
export async function fsyncFileAsync(path: string): Promise<void> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(path, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  try {
    if (__LIFEBOAT_FAULTS__) failFsyncAt('kv-fsync-eio', path);
    await fh.sync();
  } finally {
    await fh.close();
  }
}
