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

/** Write `data` to `file` durably (see the top of this file); `mode` for new files. */
export async function writeFileDurably(file: string, data: Uint8Array | string, mode = 0o644): Promise<void> {
  const tmp = tempPathFor(file);
  try {
    const fh = await fs.open(tmp, 'wx', mode);
    try {
      await fh.writeFile(data);
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

/** Copy `src` to `file` durably (the same guarantees as writeFileDurably). */
export async function copyFileDurably(src: string, file: string): Promise<void> {
  const tmp = tempPathFor(file);
  try {
    await fs.copyFile(src, tmp);
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
