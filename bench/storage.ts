// `npm run bench -- storage [--seconds 3] [--rounds 5] [--batches 1,64,1024] [--entry-bytes 256] [--dir D] [--only log,...]`
//
// The data directory's figures, one section per table. A section is a module
// exporting a BenchSection; add new ones (KV puts, snapshots) to SECTIONS.

import Table from 'cli-table3';
import { parseArgs } from 'node:util';
import { kvBenchSections } from './kvStore.js';
import { logAppendSection } from './storageLog.js';

export interface StorageBenchOptions {
  /** Seconds of measurement per table row. */
  seconds: number;
  /** Rows measured side by side are split into this many interleaved rounds. */
  rounds: number;
  batches: number[];
  entryBytes: number;
  /** Where the temporary data dirs go (default: the OS temp dir). The disk under it is what is measured. */
  dir?: string;
}

export interface BenchTable {
  head: string[];
  rows: string[][];
  note?: string;
}

export interface BenchSection {
  /** For --only. */
  name: string;
  title: string;
  run(opts: StorageBenchOptions): Promise<BenchTable>;
}

const SECTIONS: BenchSection[] = [logAppendSection];

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      seconds: { type: 'string', default: '3' },
      rounds: { type: 'string', default: '5' },
      batches: { type: 'string', default: '1,64,1024' },
      'entry-bytes': { type: 'string', default: '256' },
      dir: { type: 'string' },
      only: { type: 'string' },
      quick: { type: 'boolean', default: false },
    },
  });
  const opts: StorageBenchOptions = {
    seconds: Number(values.seconds),
    rounds: Number(values.rounds),
    batches: values.batches.split(',').map(Number),
    entryBytes: Number(values['entry-bytes']),
    dir: values.dir,
  };
  const only = values.only?.split(',');
  for (const section of SECTIONS) {
    if (only && !only.includes(section.name)) continue;
    const table = await section.run(opts);
    const out = new Table({ head: table.head, style: { head: [], border: [] } });
    out.push(...table.rows);
    console.log(`\n${section.title}`);
    console.log(out.toString());
    if (table.note) console.log(table.note);
  }
  // The KV half of the data dir: applies, ranges, snapshots (--quick: 100k keys instead of 1M).
  if (!only || only.includes('kv')) {
    console.log('');
    await kvBenchSections(values.quick ? ['--quick'] : []);
  }
}
