// KV store benchmark: apply throughput, range latency, hashing, and snapshot
// save/restore throughput. `--quick` uses 100k keys instead of 1M for the
// snapshot section. Run: node dist/bench/kvStore.js [--quick]

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { KvStore, restoreSnapshot, type KvEntry } from '../src/kv/index.js';

const VALUE = Buffer.alloc(100, 'v'); // etcdctl check perf writes 1 KiB; 100 B is closer to config data

const keyOf = (i: number) => Buffer.from(`bench/key/${String(i).padStart(8, '0')}`);

function line(name: string, value: string): void {
  console.log(`  ${name.padEnd(44)} ${value}`);
}

function rate(n: number, ms: number): string {
  return `${Math.round((n / ms) * 1000).toLocaleString('en-US')}/s`;
}

/** Applies puts of keys [from, to) in batches; returns the next log index. */
function fill(kv: KvStore, from: number, to: number, batch: number, index: number): number {
  for (let i = from; i < to; i += batch) {
    const entries: KvEntry[] = [];
    for (let j = i; j < Math.min(to, i + batch); j++) entries.push({ index: index++, term: 1, request: { put: { key: keyOf(j), value: VALUE } } });
    kv.applyBatch(entries);
  }
  return index;
}

export async function kvBenchSections(args: readonly string[] = process.argv.slice(2)): Promise<void> {
  const quick = args.includes('--quick');
  const snapshotKeys = quick ? 100_000 : 1_000_000;
  const dir = mkdtempSync(join(tmpdir(), 'lifeboat-kvbench-'));
  try {
    console.log(`KV store (better-sqlite3, WAL, synchronous=NORMAL)${quick ? ' --quick' : ''}`);

    // Applies: one entry per transaction, and 1000 entries per transaction; with
    // SQLite's own WAL checkpoints (on this thread) and with checkpoints in a worker.
    for (const autoCheckpoint of [true, false]) {
      const kv = KvStore.open(join(dir, `apply-${autoCheckpoint}.db`), { autoCheckpoint });
      const how = autoCheckpoint ? 'auto checkpoint' : 'checkpointAsync';
      let t = performance.now();
      let index = 1;
      const single = quick ? 5_000 : 20_000;
      for (let i = 0; i < single; i++) kv.applyRequest(index++, 1, { put: { key: keyOf(i), value: VALUE } });
      line(`puts applied, batch 1 (${how})`, rate(single, performance.now() - t));
      const batched = quick ? 100_000 : 200_000;
      t = performance.now();
      index = fill(kv, single, single + batched, 1000, index);
      line(`puts applied, batch 1000 (${how})`, rate(batched, performance.now() - t));
      if (!autoCheckpoint) {
        t = performance.now();
        await kv.checkpointAsync();
        line('  then checkpointAsync (worker, fsyncs)', `${(performance.now() - t).toFixed(0)} ms`);
      }
      kv.close();
    }

    // The snapshot-sized store: ranges, hashes, snapshot save and restore.
    const kv = KvStore.open(join(dir, 'kv.db'), { autoCheckpoint: false });
    let index = fill(kv, 0, snapshotKeys, 1000, 1);
    // Overwrite 10% so ranges at an old revision have history to skip.
    const oldRev = kv.currentRevision();
    index = fill(kv, 0, snapshotKeys / 10, 1000, index);
    await kv.checkpointAsync();
    line(`store of ${snapshotKeys.toLocaleString('en-US')} keys`, `${(kv.dbSize() / 1e6).toFixed(1)} MB`);

    /** Median of 5 reads of 10k keys. */
    const range = (revision: number) => {
      const from = snapshotKeys / 20;
      const times: number[] = [];
      for (let i = 0; i < 5; i++) {
        const t = performance.now();
        const r = kv.range({ key: keyOf(from), rangeEnd: keyOf(from + 10_000), revision });
        times.push(performance.now() - t);
        if (r.kvs.length !== 10_000) throw new Error(`range returned ${r.kvs.length} keys`);
      }
      return times.sort((a, b) => a - b)[2];
    };
    line('range of 10k keys, current revision', `${range(0).toFixed(1)} ms`);
    line('range of 10k keys, historical revision', `${range(oldRev).toFixed(1)} ms`);
    let t = performance.now();
    kv.range({ key: keyOf(0), rangeEnd: Buffer.from('\0'), countOnly: true });
    line('count of all keys', `${(performance.now() - t).toFixed(1)} ms`);

    t = performance.now();
    await kv.hashKvAsync();
    line('HashKV (worker thread)', `${(performance.now() - t).toFixed(0)} ms`);

    // Snapshot save while applies continue on this thread.
    const delay = monitorEventLoopDelay({ resolution: 5 });
    delay.enable();
    t = performance.now();
    let done = false;
    let during = 0;
    const saving = kv.saveSnapshot(join(dir, 'snap.db')).finally(() => (done = true));
    while (!done) {
      kv.applyRequest(index++, 1, { put: { key: Buffer.from(`during/${during++}`), value: VALUE } });
      if (during % 50 === 0) await new Promise((r) => setImmediate(r));
    }
    const info = await saving;
    const saveMs = performance.now() - t;
    delay.disable();
    line(
      'snapshot save (VACUUM INTO, worker)',
      `${(saveMs / 1000).toFixed(2)} s, ${(info.size / 1e6 / (saveMs / 1000)).toFixed(0)} MB/s, ${(info.size / 1e6).toFixed(1)} MB`,
    );
    line(
      '  puts applied meanwhile, batch 1',
      `${during.toLocaleString('en-US')} (${rate(during, saveMs)}), event loop p99 ${(delay.percentile(99) / 1e6).toFixed(1)} ms`,
    );
    kv.close();

    t = performance.now();
    const restored = await restoreSnapshot(info.path, join(dir, 'restored.db'));
    const restoreMs = performance.now() - t;
    line('snapshot restore (verify sha256, install)', `${(restoreMs / 1000).toFixed(2)} s, ${(restored.size / 1e6 / (restoreMs / 1000)).toFixed(0)} MB/s`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** bench/index.ts convention: `npm run bench -- kvStore [--quick]`. */
export const run = kvBenchSections;

if (import.meta.url === `file://${process.argv[1]}`) await kvBenchSections();
