// Worker thread body for readJob.ts.

import { parentPort, workerData } from 'node:worker_threads';
import { fsyncFile } from './fsyncFile.js';
import Database from 'better-sqlite3';
import { KvError } from './errors.js';
import { hashKv, hashStore } from './kvHash.js';
import type { ReadJob, ReadJobReply } from './readJob.js';
import type { KvSnapshotInfo } from './types.js';
import type { HashKvResult } from './types.js';
import { RevisionTables } from './revisionTables.js';
import { writeSnapshotSync } from './snapshotFile.js';

function run(job: ReadJob): KvSnapshotInfo | HashKvResult | number {
  if (job.kind === 'snapshot') return writeSnapshotSync(job.dbPath, job.dest);
  if (job.kind === 'checkpoint') return checkpoint(job.dbPath);
  const db = new Database(job.dbPath, { fileMustExist: true });
  try {
    db.pragma('cache_size = -65536');
    // One read transaction: every page read sees the same committed state.
    return db
      .transaction(() => {
        const s = db.prepare('SELECT current_revision, compact_revision FROM state').get() as {
          current_revision: number;
          compact_revision: number;
        };
        const revs = { current: s.current_revision, compacted: s.compact_revision };
        const tables = new RevisionTables(db);
        return job.kind === 'hashKv' ? hashKv(tables, revs, job.revision) : hashStore(db, tables, revs);
      })
      .deferred();
  } finally {
    db.close();
  }
}

/**
 * Copies WAL pages into the database file, then fsyncs both files, so every
 * transaction committed before the call is durable; returns the applied index
 * read before the checkpoint (its transaction is among those).
 */
function checkpoint(dbPath: string): number {
  const db = new Database(dbPath, { fileMustExist: true });
  try {
    const applied = db.prepare('SELECT applied_index FROM state').pluck().get() as number;
    db.pragma('wal_checkpoint(PASSIVE)');
    fsyncFile(`${dbPath}-wal`);
    fsyncFile(dbPath);
    return applied;
  } finally {
    db.close();
  }
}

let reply: ReadJobReply;
try {
  reply = { result: run(workerData as ReadJob) };
} catch (err) {
  reply = err instanceof KvError ? { kvError: err.kind } : { error: err instanceof Error ? err.message : String(err) };
}
parentPort!.postMessage(reply);
