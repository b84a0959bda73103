// A migration's progress, kept on disk so an interrupted `lifeboat migrate` goes
// on where it stopped: written whole (temp file, fsync, rename, fsync of the
// directory), with a sha256 over its content that is checked when it is read
// back, and locked while a migration uses it.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { RefusedError } from '../common/errors.js';
import { writeFileDurably } from '../storage/atomicFile.js';
import { DirLock } from '../storage/dirLock.js';
import { NodeFileSystem } from '../storage/fileSystem.js';
import type { StorageWarning } from '../storage/warning.js';

export interface MigrationProgress {
  /** what the migration is: a record made for other endpoints or prefixes is refused */
  sourcePrefix: string;
  destPrefix: string;
  /** hex cluster IDs of both sides when the migration started */
  sourceCluster: string;
  destCluster: string;
  /** 'copy' until the consistent copy is complete, then 'follow' */
  phase: 'copy' | 'follow';
  /** the source revision the copy reads at */
  copyRevision: number;
  /** the last source key copied (base64), absent before the first batch */
  copiedThrough?: string;
  copiedKeys: number;
  /** every source change at or below this revision is in the destination */
  appliedRevision: number;
  /** the last revision at which both sides were verified equal (0: never) */
  verifiedRevision: number;
  updatedAt: string;
}

const fs = new NodeFileSystem();

export function recordExists(file: string): boolean {
  return fs.exists(file);
}

/** Reads the record at `file`, or undefined if there is none. Throws on damage, naming the file. */
export function readProgress(file: string): MigrationProgress | undefined {
  if (!fs.exists(file)) return undefined;
  const text = fs.readFile(file).toString('utf8');
  let parsed: { sha256?: unknown; progress?: unknown };
  try {
    parsed = JSON.parse(text) as typeof parsed;
  } catch {
    throw damaged(file, 'not JSON');
  }
  const body = JSON.stringify(parsed.progress);
  if (typeof parsed.sha256 !== 'string' || sha256(body) !== parsed.sha256) throw damaged(file, 'checksum mismatch');
  return parsed.progress as MigrationProgress;
}

export function writeProgress(file: string, p: MigrationProgress): void {
  const progress = { ...p, updatedAt: new Date().toISOString() };
  const body = JSON.stringify(progress);
  fs.mkdirp(path.dirname(file));
  writeFileDurably(fs, file, Buffer.from(JSON.stringify({ sha256: sha256(body), progress }, null, 1) + '\n'));
}

/** Locks the record for this process; a second migration on it is refused (exit 3). */
export function lockProgress(file: string, warnings: StorageWarning[]): { release(): void } {
  fs.mkdirp(path.dirname(file));
  return DirLock.acquireFile(
    fs,
    `${file}.lock`,
    (pid) => new RefusedError(`migration progress ${file} is in use by pid ${pid} (another lifeboat migrate is running); stop it first`),
    warnings,
  );
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function damaged(file: string, why: string): Error {
  return new Error(`migration progress ${file} is damaged (${why}); delete it or pass --restart to copy everything again`);
}
