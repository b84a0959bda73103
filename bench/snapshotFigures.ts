// Snapshot save and restore through each system's own CLI (etcdctl vs lifeboat),
// timed as an operator would see them: the whole command, process start included.
import fs from 'node:fs';
import path from 'node:path';
import type { BenchCluster } from './systems.js';

export interface SnapshotFigures {
  keys: number;
  bytes: number;
  saveSeconds: number;
  saveMBps: number;
  restoreSeconds: number;
  restoreMBps: number;
}

export async function measureSnapshot(sys: BenchCluster, endpoint: string, keys: number, scratch: string): Promise<SnapshotFigures> {
  const file = path.join(scratch, `${sys.name}-${keys}.db`);
  const dataDir = path.join(scratch, `${sys.name}-${keys}-restored`);
  const saved = await sys.snapshotSave(endpoint, file);
  if (saved.code !== 0) throw new Error(`${sys.name} snapshot save failed (exit ${saved.code}): ${saved.stderr.trim().split('\n').slice(-2).join(' | ')}`);
  const bytes = fs.statSync(file).size;
  const restored = await sys.snapshotRestore(file, dataDir);
  if (restored.code !== 0)
    throw new Error(`${sys.name} snapshot restore failed (exit ${restored.code}): ${restored.stderr.trim().split('\n').slice(-2).join(' | ')}`);
  // Free the disk at once: a 1M-key snapshot and its restore are several hundred MB.
  fs.rmSync(file, { force: true });
  fs.rmSync(dataDir, { recursive: true, force: true });
  const mb = bytes / 1e6;
  return {
    keys,
    bytes,
    saveSeconds: saved.ms / 1000,
    saveMBps: mb / (saved.ms / 1000),
    restoreSeconds: restored.ms / 1000,
    restoreMBps: mb / (restored.ms / 1000),
  };
}
