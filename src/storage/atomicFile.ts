import path from 'node:path';
import type { FileSystem } from './fileSystem.js';
import { TEMP_SUFFIX } from './layout.js';

/**
 * Writes a whole file so that a crash leaves either the old file or the complete
 * new one: temp name, fsync, rename, fsync of the directory.
 */
export function writeFileDurably(fs: FileSystem, file: string, data: Uint8Array): void {
  const tmp = file + TEMP_SUFFIX;
  if (fs.exists(tmp)) fs.unlink(tmp);
  const fh = fs.create(tmp);
  try {
    fs.write(fh, data, 0);
    fs.fsync(fh);
  } finally {
    fs.close(fh);
  }
  fs.rename(tmp, file);
  fs.fsyncDir(path.dirname(file));
}
