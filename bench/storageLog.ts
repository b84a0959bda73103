// Raft log appends with fsync: the segment-file log (src/storage) against the
// SQLite layout it was chosen over. Each batch is one group commit: the entries
// plus a hard state, one write, one fsync.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import hdr from 'hdr-histogram-js';
import { EntryType, type Entry, type HardState } from '../src/raft/types.js';
import { RaftStorage, type OpenOptions } from '../src/storage/raftStorage.js';
import type { BenchSection, StorageBenchOptions } from './storage.js';

/** Something that persists one batch durably. */
interface LogUnderTest {
  save(entries: Entry[], hs: HardState): void;
  close(): void;
}

function segmentLog(dir: string, opts: OpenOptions): LogUnderTest {
  const { storage } = RaftStorage.open(dir, { identity: { memberId: 1n, clusterId: 1n }, ...opts });
  return {
    save: (entries, hardState) => storage.save({ entries, hardState }, { sync: true }),
    close: () => storage.close(),
  };
}

/** The alternative: entries and hard state as SQLite rows, WAL journal, synchronous=FULL (an fsync per commit). */
function sqliteLog(dir: string): LogUnderTest {
  const db = new Database(path.join(dir, 'log.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(`CREATE TABLE entries (idx INTEGER PRIMARY KEY, term INTEGER NOT NULL, type INTEGER NOT NULL, data BLOB NOT NULL);
           CREATE TABLE hard_state (id INTEGER PRIMARY KEY CHECK (id = 0), term INTEGER, vote INTEGER, commit_index INTEGER);`);
  const put = db.prepare('INSERT OR REPLACE INTO entries (idx, term, type, data) VALUES (?, ?, ?, ?)');
  const hs = db.prepare('INSERT OR REPLACE INTO hard_state (id, term, vote, commit_index) VALUES (0, ?, ?, ?)');
  const batch = db.transaction((entries: Entry[], h: HardState) => {
    for (const e of entries) put.run(e.index, e.term, e.type, e.data);
    hs.run(h.term, h.vote, h.commit);
  });
  return { save: (entries, h) => batch(entries, h), close: () => db.close() };
}

/** Bytes this process has handed to write(2) so far (Linux), to compare write amplification. */
function writtenBytes(): number | undefined {
  try {
    const m = /^wchar: (\d+)$/m.exec(fs.readFileSync('/proc/self/io', 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** One candidate at one batch size, measured over interleaved rounds. */
class Runner {
  private next = 1;
  private readonly data: Uint8Array;
  readonly hist = hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 10_000_000, numberOfSignificantValueDigits: 3 });
  /** Batches per second of each round. */
  readonly rates: number[] = [];
  /** Totals over all rounds: batches, CPU microseconds, bytes written (undefined: not measurable here). */
  batches = 0;
  cpuMicros = 0;
  written: number | undefined = 0;

  constructor(
    private readonly log: LogUnderTest,
    private readonly batch: number,
    entryBytes: number,
  ) {
    this.data = new Uint8Array(entryBytes).fill(0x5a);
    for (let i = 0; i < 20; i++) this.saveOne(); // warm up: first segment, first pages
  }

  private saveOne(): void {
    const entries: Entry[] = [];
    for (let i = 0; i < this.batch; i++) entries.push({ index: this.next + i, term: 1, type: EntryType.Normal, data: this.data });
    this.next += this.batch;
    this.log.save(entries, { term: 1, vote: 1n, commit: this.next - 1 });
  }

  round(seconds: number): void {
    let batches = 0;
    const cpu = process.cpuUsage();
    const wrote = writtenBytes();
    const start = performance.now();
    const deadline = start + seconds * 1000;
    for (let t = start; t < deadline && batches < 1_000_000; batches++) {
      this.saveOne();
      const now = performance.now();
      this.hist.recordValue(Math.max(1, Math.round((now - t) * 1000)));
      t = now;
    }
    this.rates.push(batches / ((performance.now() - start) / 1000));
    const used = process.cpuUsage(cpu);
    this.cpuMicros += used.user + used.system;
    const after = writtenBytes();
    this.written = this.written === undefined || wrote === undefined || after === undefined ? undefined : this.written + after - wrote;
    this.batches += batches;
  }

  median(): number {
    const sorted = [...this.rates].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)];
  }

  close(): void {
    this.log.close();
    this.hist.destroy();
  }
}

const CANDIDATES: { name: string; open(dir: string): LogUnderTest }[] = [
  { name: 'segment log (default)', open: (dir) => segmentLog(dir, {}) },
  { name: 'segment log, always prealloc', open: (dir) => segmentLog(dir, { largeWriteBytes: Infinity }) },
  { name: 'segment log, no prealloc', open: (dir) => segmentLog(dir, { preallocBytes: 0 }) },
  { name: 'sqlite (WAL, synchronous=FULL)', open: sqliteLog },
];

export const logAppendSection: BenchSection = {
  name: 'log',
  title: 'raft log appends, fsync per batch',
  run(opts: StorageBenchOptions) {
    const rows: string[][] = [];
    const root = opts.dir ?? os.tmpdir();
    for (const batch of opts.batches) {
      const dirs = CANDIDATES.map(() => fs.mkdtempSync(path.join(root, 'lifeboat-bench-')));
      try {
        const runners = CANDIDATES.map((c, i) => new Runner(c.open(dirs[i]), batch, opts.entryBytes));
        // Interleaved rounds, so that a disk that is busy now and then hurts every candidate alike.
        for (let r = 0; r < opts.rounds; r++) for (const runner of runners) runner.round(opts.seconds / opts.rounds);
        runners.forEach((runner, i) => {
          const rate = runner.median();
          const entriesPerSec = rate * batch;
          rows.push([
            String(batch),
            CANDIDATES[i].name,
            rate.toFixed(0),
            entriesPerSec.toFixed(0),
            ((entriesPerSec * opts.entryBytes) / 1e6).toFixed(1),
            (runner.hist.getValueAtPercentile(50) / 1000).toFixed(2),
            (runner.hist.getValueAtPercentile(99) / 1000).toFixed(2),
            (runner.cpuMicros / runner.batches).toFixed(0),
            runner.written === undefined ? '-' : (runner.written / (runner.batches * batch)).toFixed(0),
          ]);
          runner.close();
        });
      } finally {
        for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
      }
    }
    return Promise.resolve({
      head: ['batch', 'layout', 'fsyncs/s', 'entries/s', 'MB/s', 'p50 ms', 'p99 ms', 'CPU µs/batch', 'written B/entry'],
      rows,
      note: `${opts.entryBytes}-byte entries plus a hard state per batch; ${opts.seconds} s per row in ${opts.rounds} interleaved rounds (median); MB/s counts entry payload; written B/entry: bytes passed to write(2), preallocation included`,
    });
  },
};
