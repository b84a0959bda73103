// Runs fuzz cases off the test's main thread, so a case that hangs can be cut off
// by terminating the worker. Each case: the base file with one byte changed,
// scanned (and for some, imported into a new KV); reports the outcome per case.
import fs from 'node:fs';
import path from 'node:path';
import { parentPort, workerData } from 'node:worker_threads';
import { scanEtcdDb } from '../../src/etcdfile/index.js';
import { importEtcdDb } from '../../src/recovery/etcdImport.js';

export interface FuzzCase {
  offset: number;
  xor: number;
  /** Also import into a new Lifeboat KV. */
  importToo: boolean;
}

export interface FuzzOutcome {
  index: number;
  ok: boolean;
  errorName?: string;
  message?: string;
  /** For a read that completed: the figures, for consistency checks. */
  totalKey?: number;
  bucketEntries?: number;
  revisions?: number;
  liveKeys?: number;
  importedKeys?: number;
}

const { base, cases, dir } = workerData as { base: string; cases: FuzzCase[]; dir: string };
const bytes = fs.readFileSync(base);
const file = path.join(dir, 'fuzz.db');

cases.forEach((c, index) => {
  parentPort!.postMessage({ started: index });
  const b = Buffer.from(bytes);
  b[c.offset] ^= c.xor;
  fs.writeFileSync(file, b);
  let out: FuzzOutcome;
  try {
    const s = scanEtcdDb(file);
    out = { index, ok: true, totalKey: s.totalKey, bucketEntries: s.buckets.reduce((n, x) => n + x.entries, 0), revisions: s.revisions, liveKeys: s.liveKeys };
    if (c.importToo) {
      const kvDb = path.join(dir, `import-${index}.db`);
      try {
        const r = importEtcdDb(file, kvDb);
        out.importedKeys = r.summary.revisions;
      } finally {
        for (const f of [kvDb, `${kvDb}-wal`, `${kvDb}-shm`]) fs.rmSync(f, { force: true });
      }
    }
  } catch (err) {
    const e = err as Error;
    out = { index, ok: false, errorName: e?.name, message: String(e?.message ?? e) };
  }
  parentPort!.postMessage(out);
});
