// Marker files in <data-dir>/member that outlive the process: a member that was
// removed or whose cluster was superseded must never run again on this data dir,
// and --force-new-cluster must not be applied twice.
import fs from 'node:fs';
import path from 'node:path';

export type Marker = 'removed' | 'superseded' | 'forced';

function markerPath(dataDir: string, m: Marker): string {
  return path.join(dataDir, 'member', m);
}

export function readMarker(dataDir: string, m: Marker): string | undefined {
  try {
    return fs.readFileSync(markerPath(dataDir, m), 'utf8');
  } catch {
    return undefined;
  }
}

/** Writes the marker durably: temp file, fsync, rename, fsync of the directory. */
export function writeMarker(dataDir: string, m: Marker, text: string): void {
  const dir = path.join(dataDir, 'member');
  fs.mkdirSync(dir, { recursive: true });
  const tmp = markerPath(dataDir, m) + '.tmp';
  const fd = fs.openSync(tmp, 'w');
  try {
    fs.writeSync(fd, text);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(tmp, markerPath(dataDir, m));
  const dfd = fs.openSync(dir, 'r');
  try {
    fs.fsyncSync(dfd);
  } finally {
    fs.closeSync(dfd);
  }
}
