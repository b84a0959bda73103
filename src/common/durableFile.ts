// Whole-file writes that survive a power cut: FILE.<pid>.tmp is written and
// fsynced, renamed over FILE, and the directory fsynced, so FILE is either the
// old bytes or the new ones, never half of either.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

/** The temp name a durable write uses next to `file` (unique per call, so two writers never share one). */
export function tempPathFor(file: string): string {
  return `${file}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
}

/** fsync a directory, so a rename or create inside it is durable. */
export async function syncDir(dir: string): Promise<void> {
  const fh = await fs.open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** Fill a temp file next to `file` with `fill`, fsync it, rename it over `file`, fsync the directory; the temp file is removed on failure. */
async function replaceDurably(file: string, fill: (tmp: string) => Promise<void>): Promise<void> {
  const tmp = tempPathFor(file);
  try {
    await fill(tmp);
    const fh = await fs.open(tmp, 'r+');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.rename(tmp, file);
  } catch (e) {
    await fs.rm(tmp, { force: true });
    throw e;
  }
  await syncDir(path.dirname(file));
}

/** Write `data` to `file` durably (see the top of this file); `mode` for new files. */
export function writeFileDurably(file: string, data: Uint8Array | string, mode = 0o644): Promise<void> {
  return replaceDurably(file, (tmp) => fs.writeFile(tmp, data, { flag: 'wx', mode }));
}

/** Copy `src` to `file` durably (the same guarantees as writeFileDurably). */
export function copyFileDurably(src: string, file: string): Promise<void> {
  return replaceDurably(file, (tmp) => fs.copyFile(src, tmp));
}
