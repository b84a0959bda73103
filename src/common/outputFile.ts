// A command's named output (a snapshot, an archive, a report) never replaces an
// existing file unless the operator says --force: the file there may be the only
// copy of a backup. Callers check before any work starts and still write to a
// temp path renamed over the target, so with --force the old file is replaced
// only once the new one is complete.
import fs from 'node:fs';
import { InputError, RefusedError } from './errors.js';

export const FORCE_FLAG_DESCRIPTION =
  'replace the output file if it exists (without --force an existing file is refused, exit 3); the old file is replaced only once the new one is complete';

/** Throws RefusedError (exit 3) when `file` exists and `force` is not set; InputError (exit 2) when it is a directory. `what` names the flag or argument. */
export function refuseExistingOutput(file: string, force: boolean, what: string): void {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    return; // nothing there (or nothing we can see: the write itself will say why)
  }
  if (st.isDirectory()) throw new InputError(`${what} ${file} is a directory; give a file path`);
  if (force) return;
  throw new RefusedError(
    `${what} ${file} already exists (${describeExisting(file, st)}); refusing to replace it: pass --force to replace it, or give another path`,
  );
}

/** "FILE already exists (an etcd snapshot, 20512 bytes, modified …)" when something is at `file`; undefined when nothing is. */
export function existingOutput(file: string): string | undefined {
  try {
    const st = fs.statSync(file);
    return `${file} already exists (${st.isDirectory() ? 'a directory' : describeExisting(file, st)})`;
  } catch {
    return undefined;
  }
}

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');
const BOLT_MAGIC = 0xed0cdaed;
const GZIP_MAGIC = Buffer.from([0x1f, 0x8b]);

/** "a Lifeboat snapshot, 20512 bytes, modified 2026-12-01T23:58:00Z": from the size, the time and the first 32 bytes. */
function describeExisting(file: string, st: fs.Stats): string {
  const head = Buffer.alloc(32);
  let n = 0;
  try {
    const fd = fs.openSync(file, 'r');
    try {
      n = fs.readSync(fd, head, 0, head.length, 0);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // unreadable: say what the stat says
  }
  const kind =
    n >= 16 && head.subarray(0, 16).equals(SQLITE_MAGIC)
      ? 'a Lifeboat snapshot, '
      : n >= 20 && head.readUInt32LE(16) === BOLT_MAGIC
        ? 'an etcd snapshot, '
        : n >= 2 && head.subarray(0, 2).equals(GZIP_MAGIC)
          ? 'a gzip archive, '
          : '';
  return `${kind}${st.size} bytes, modified ${st.mtime.toISOString().replace(/\.\d{3}Z$/, 'Z')}`;
}
