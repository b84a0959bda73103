// The record `datadir fence` leaves in an old data dir (lifeboat-fence.json), read
// on its own (fs only) so the lean snapshot-restore bundle can name a fenced dir
// without loading the fencing code.
import fs from 'node:fs';
import path from 'node:path';
import type { RuntimeName } from '../common/memberCommand.js';

export const RECORD = 'lifeboat-fence.json';

export interface FenceRecord {
  runtime: RuntimeName;
  supersededBy: string;
  at: string;
  /** etcd: where member/ was moved (relative to the data dir) */
  movedTo?: string;
}

export function recordPath(dir: string): string {
  return path.join(dir, RECORD);
}

export function readFenceRecord(dir: string): FenceRecord | undefined {
  try {
    return JSON.parse(fs.readFileSync(recordPath(dir), 'utf8')) as FenceRecord;
  } catch {
    return undefined;
  }
}

/**
 * One line for a fenced data dir met where a member's data dir is expected: whose
 * it was, by which cluster and when it was superseded, and how to undo it; undefined
 * when `dir` holds no fence record.
 */
export function fencedDataDirProblem(dir: string): string | undefined {
  const fenced = fenceDescription(dir);
  return fenced && `data dir ${dir} is ${fenced}; if it must be used again, run 'lifeboat datadir unfence ${dir}' first`;
}

/** "fenced (an old etcd member's, superseded by cluster … on …; see …/lifeboat-fence.json)", from the record; undefined without one. */
export function fenceDescription(dir: string): string | undefined {
  const r = readFenceRecord(dir);
  if (!r) return undefined;
  const moved = r.movedTo ? `, its member/ moved to ${r.movedTo}/` : '';
  return `fenced (an old ${r.runtime} member's, superseded by cluster ${r.supersededBy} on ${r.at}${moved}; see ${recordPath(dir)})`;
}
