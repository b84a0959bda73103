// Snapshots from the leader are KV databases (database + sha256 trailer) the
// transport writes straight into the member dir as they arrive. What goes through
// Raft, and into the raft snapshot file, is only a reference to that file: the
// database is written once, never held in memory, and moved (not copied) into
// place as kv.db. The file stays until installed, so a crash between recording
// the snapshot and installing it is repaired at restart from the same file.
import fs from 'node:fs';
import path from 'node:path';
import { formatId, parseId } from '../common/ids.js';
import { memberDir } from '../storage/layout.js';

const PREFIX = 'received-';
const REF_MAGIC = 'lifeboat-snapshot-ref/1 ';

/** A new file name in the member dir for a snapshot arriving from `from`. */
export function incomingSnapshotFile(dataDir: string, from: bigint): string {
  return path.join(memberDir(dataDir), `${PREFIX}${formatId(from)}-${Date.now()}.db`);
}

/** Snapshot data that names a received file (in the member dir) instead of holding it. */
export function snapshotRef(file: string): Uint8Array {
  return Buffer.from(REF_MAGIC + path.basename(file));
}

/** The file a snapshot's data refers to, or undefined if the data is the database itself. */
export function referencedFile(dataDir: string, data: Uint8Array): string | undefined {
  if (data.length > 512 || data.length <= REF_MAGIC.length) return undefined;
  const text = Buffer.from(data).toString('utf8');
  if (!text.startsWith(REF_MAGIC)) return undefined;
  const name = text.slice(REF_MAGIC.length);
  if (!name.startsWith(PREFIX) || name.includes('/') || name.includes('\\')) throw new Error(`snapshot names an unexpected file ${JSON.stringify(name)}`);
  return path.join(memberDir(dataDir), name);
}

/** The member a received snapshot file came from (its name says). */
export function senderOf(file: string): bigint | undefined {
  const hex = /^received-([0-9a-f]+)-\d+\.db$/.exec(path.basename(file))?.[1];
  return hex === undefined ? undefined : parseId(hex);
}

const receivedAt = (name: string): number => Number(/-(\d+)\.db(\.tmp)?$/.exec(name)?.[1] ?? 0);

/**
 * Removes received snapshot files Raft never used (installed ones were moved away):
 * all of them at start, or those that arrived no later than `installed` (a later
 * one may still be on its way through Raft).
 */
export function removeReceivedSnapshots(dataDir: string, installed?: string): void {
  const dir = memberDir(dataDir);
  const upTo = installed === undefined ? Infinity : receivedAt(path.basename(installed));
  for (const f of fs.readdirSync(dir)) {
    if (f.startsWith(PREFIX) && receivedAt(f) <= upTo) fs.rmSync(path.join(dir, f), { force: true });
  }
}
