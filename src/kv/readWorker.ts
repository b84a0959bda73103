// Worker thread body for readJob.ts: one SQLite connection, kept open, and the
// jobs run one at a time in the order they arrive.

import { parentPort, workerData } from 'node:worker_threads';
import { fsyncFile } from './fsyncFile.js';
import { failFsyncAt, failpointArg } from '../common/failpoint.js';
import type Database from 'better-sqlite3';
import { openSqlite } from '../common/sqlite.js';
import { KvError } from './errors.js';
import { hashKv, hashStore } from './kvHash.js';
import {
  DurabilityLostError,
  type FromReadWorker,
  type ReadJob,
  type ReadJobReply,
  type ReadJobResult,
  type ReadWorkerData,
  type ToReadWorker,
} from './readJob.js';
import { RevisionTables } from './revisionTables.js';
import { writeSnapshotSync } from './snapshotFile.js';
import { holdSnapshot, releaseAllSnapshots, releaseSnapshot } from './snapshotHold.js';

const port = parentPort;
if (!port) throw new Error('kv: readWorker.js runs only as a worker thread (readJob.ts)');
const closed = new Int32Array((workerData as ReadWorkerData).closed);

/** SQLite's largest mapping (SQLITE_MAX_MMAP_SIZE, 2 GiB, our default quota); a larger file is read past it. */
const SCAN_MMAP_BYTES = 0x7fff0000;

let db: Database.Database | undefined;
let dbPath = '';

function connection(path: string): Database.Database {
  if (db && dbPath === path) return db;
  db?.close();
  db = openSqlite(path, { fileMustExist: true });
  dbPath = path;
  return db;
}

function run(job: ReadJob): ReadJobResult {
  if (job.kind === 'snapshot') return writeSnapshotSync(job.dbPath, job.dest);
  if (job.kind === 'release') {
    releaseSnapshot(job.id);
    return null;
  }
  const conn = connection(job.dbPath);
  if (job.kind === 'defragment') return defragment(conn, job.dbPath);
  if (job.kind === 'hold') return holdSnapshot(conn, job.dbPath);
  // A large cache for the scan (the index pages a compacted store's hash looks up
  // again and again), and the file mapped rather than read page by page: a cold
  // HashKV of 100k keys took 0.87 s with reads, 0.57 s mapped. Both given back after
  // it (the mapped pages would count in the member's memory): the connection stays open.
  // A disk error under the mapping ends the member (SIGBUS), as it ends etcd, whose bbolt reads mapped.
  try {
    conn.pragma('cache_size = -65536');
    conn.pragma(`mmap_size = ${SCAN_MMAP_BYTES}`);
    // One read transaction: every page read sees the same committed state.
    return conn
      .transaction(() => {
        const s = conn.prepare('SELECT current_revision, compact_revision FROM state').get() as {
          current_revision: number;
          compact_revision: number;
        };
        const revs = { current: s.current_revision, compacted: s.compact_revision };
        const tables = new RevisionTables(conn);
        return job.kind === 'hashKv' ? hashKv(tables, revs, job.revision) : hashStore(conn, tables, revs);
      })
      .deferred();
  } finally {
    conn.pragma('mmap_size = 0');
    conn.pragma('cache_size = -2000');
    conn.pragma('shrink_memory');
  }
}

/**
 * Rewrites the database without free pages (VACUUM, through the WAL), then copies
 * the WAL into the file, fsyncs it and only then truncates the WAL: a power cut at
 * any point leaves either the old pages or the new ones whole. Returns null.
 */
function defragment(conn: Database.Database, path: string): null {
  const slowMs = Number(failpointArg('defragment-slow') ?? 0);
  if (slowMs > 0) conn.transaction(() => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, slowMs)).immediate();
  conn.exec('VACUUM');
  // VACUUM committed: from here a failure leaves the file's durability unknown, not the store unchanged.
  try {
    conn.pragma('wal_checkpoint(FULL)');
    failFsyncAt('defragment-fsync-eio', path);
    fsyncFile(path);
  } catch (err) {
    throw new DurabilityLostError(`defragment of ${path} could not make it durable: ${messageOf(err)}`);
  }
  conn.pragma('wal_checkpoint(TRUNCATE)');
  return null;
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

function reply(job: ReadJob): ReadJobReply {
  try {
    return { result: run(job) };
  } catch (err) {
    if (err instanceof KvError) return { kvError: err.kind };
    return err instanceof DurabilityLostError ? { error: err.message, durabilityLost: true } : { error: messageOf(err) };
  }
}

function onMessage(m: ToReadWorker): void {
  if ('close' in m) {
    try {
      releaseAllSnapshots();
      db?.close();
    } finally {
      db = undefined;
      Atomics.store(closed, 0, 1);
      Atomics.notify(closed, 0);
      // Nothing left to wait for: the thread ends once its replies are out.
      port?.off('message', onMessage);
    }
    return;
  }
  port?.postMessage({ id: m.id, reply: reply(m.job) } satisfies FromReadWorker);
}

port.on('message', onMessage);
