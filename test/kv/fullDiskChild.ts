// Child process of fullDisk.test.ts (not a test itself: without arguments it exits),
// run on a small tmpfs of its own (unshare -m) so that it can fill the disk:
//
//   node fullDiskChild.js <dir> room|fill|spill
//
// It opens a store as a member does (applies held in one open transaction, the
// WAL checkpointed from the worker), applies and checkpoints k=v1, then, with the
// disk filled (`fill`, `spill`) or not (`room`), applies k=v2 (held, as a member
// answers a put). Then `room` and `fill` have a checkpoint commit it; `spill`
// applies a batch too large for SQLite's page cache, whose spill finds no room.
// One JSON line on stdout:
//   { step: 'ok' | error of the checkpoint or the batch, told: message | null, read: value | error,
//     alarms: how many alarms the cluster meta lists | error }

import fs from 'node:fs';
import path from 'node:path';
import { KvStore } from '../../src/kv/kvStore.js';
import { AlarmType } from '../../src/kv/types.js';
import { report } from '../storage/fixtures.js';

const [dir, mode] = process.argv.slice(2);

function fillDisk(file: string): void {
  const fd = fs.openSync(file, 'w');
  const chunk = Buffer.alloc(64 * 1024, 1);
  try {
    // Bounded by the tmpfs's size; then page by page to the last free byte.
    for (const size of [chunk.length, 4096, 1]) {
      for (;;) {
        try {
          fs.writeSync(fd, chunk, 0, size);
        } catch (e) {
          if ((e as NodeJS.ErrnoException).code === 'ENOSPC') break;
          throw e;
        }
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

async function main(): Promise<void> {
  const kv = KvStore.open(path.join(dir, 'kv.db'), { autoCheckpoint: false, commitDelayMs: 60_000 });
  let told: string | null = null;
  kv.onCommitFailure = (e) => (told = e.message);
  const key = Buffer.from('k');
  kv.batch(() => kv.applyRequest(1, 1, { put: { key, value: Buffer.from('v1') } }));
  await kv.checkpointAsync();
  if (mode === 'fill') fillDisk(path.join(dir, 'filler'));
  // Larger than the WAL the first commit left, smaller than SQLite's page cache: it is
  // held in memory until the commit, which needs new blocks of the disk.
  // With a cluster change in the same held transaction (an alarm, as a NOSPACE alarm applies).
  kv.batch(() => {
    kv.applyRequest(2, 1, { put: { key, value: Buffer.alloc(512 * 1024, 'v2') } });
    kv.apply(3, 1, (w) => w.cluster.activateAlarm({ memberId: 7n, alarm: AlarmType.NoSpace }));
  });
  let step: string;
  if (mode === 'spill') {
    try {
      // Beyond the 64 MiB page cache (kvSchema.ts): pages spill to the WAL before the commit.
      kv.batch(() => kv.applyRequest(4, 1, { put: { key: Buffer.from('big'), value: Buffer.alloc(80 * 1024 * 1024, 'x') } }));
      step = 'ok';
    } catch (e) {
      step = (e as Error).message;
    }
  } else {
    step = await kv.checkpointAsync().then(
      () => 'ok',
      (e: Error) => e.message,
    );
  }
  let read: string;
  try {
    read = kv.range({ key }).kvs[0]?.value.subarray(0, 2).toString() ?? 'absent';
  } catch (e) {
    read = `error: ${(e as Error).message}`;
  }
  let alarms: string;
  try {
    alarms = String(kv.cluster.alarms().length);
  } catch (e) {
    alarms = `error: ${(e as Error).message}`;
  }
  report(JSON.stringify({ step, told, read, alarms }));
  // The store may be unusable: leave without closing it (the tmpfs goes with the namespace).
  process.exit(0);
}

if (dir && ['room', 'fill', 'spill'].includes(mode)) await main();
