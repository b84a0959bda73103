// Marker files in <data-dir>/member that outlive the process: a member that was
// removed or whose cluster was superseded must never run again on this data dir,
// and --force-new-cluster must not be applied twice.
import fs from 'node:fs';
import path from 'node:path';
import { writeFileDurably } from './atomicFile.js';
import { NodeFileSystem } from './fileSystem.js';

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
  fs.mkdirSync(path.join(dataDir, 'member'), { recursive: true });
  writeFileDurably(new NodeFileSystem(), markerPath(dataDir, m), Buffer.from(text));
}
