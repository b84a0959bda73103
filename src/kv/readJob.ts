// Long reads (snapshots, hashes of a large store) and WAL checkpoints (which
// fsync) run in a worker thread on their own SQLite connection: WAL gives a
// consistent view while the member's connection keeps applying, and the event
// loop (Raft ticks, heartbeats) is not blocked for the time they take.

import { Worker } from 'node:worker_threads';
import { kvErrorOf, type KvErrorKind } from './errors.js';
import type { HashKvResult } from './types.js';
import type { KvSnapshotInfo } from './types.js';

export type ReadJob =
  | { kind: 'snapshot'; dbPath: string; dest: string }
  | { kind: 'hashKv'; dbPath: string; revision: number }
  | { kind: 'hash'; dbPath: string }
  | { kind: 'checkpoint'; dbPath: string };

export type ReadJobReply = { result: KvSnapshotInfo | HashKvResult | number } | { kvError: KvErrorKind } | { error: string };

// The store's errors cross the thread boundary by kind and come back as the shared constants.

export function runReadJob(job: ReadJob): Promise<KvSnapshotInfo | HashKvResult | number> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL('./readWorker.js', import.meta.url), { workerData: job });
    let settled = false;
    worker.once('message', (m: ReadJobReply) => {
      settled = true;
      if ('result' in m) resolve(m.result);
      else if ('kvError' in m) reject(kvErrorOf(m.kvError));
      else reject(new Error(m.error));
    });
    worker.once('error', (err) => {
      settled = true;
      reject(err);
    });
    worker.once('exit', (code) => {
      if (!settled) reject(new Error(`kv ${job.kind} worker exited with code ${code} before reporting`));
    });
  });
}
