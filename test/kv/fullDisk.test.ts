// A full disk under the KV: a commit of held applies that fails (SQLite undoes the
// transaction) must stop the member whoever committed, and reads must refuse from
// then on rather than answer from the undone state. A checkpoint's commit once only
// logged the failure, and the member answered reads from before acknowledged puts
// (the fault suite's disk-full fault caught it); a batch whose pages spill on a full
// disk can make SQLite undo the whole held transaction, the batches before it too.
// A child (fullDiskChild.ts) runs on a small tmpfs in a mount namespace of its own;
// needs root, as CI and the fault suite.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../storage/fixtures.js';

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fullDiskChild.js');

interface ChildReport {
  step: string;
  told: string | null;
  read: string;
  alarms: string;
}

function onSmallDisk(mode: 'room' | 'fill' | 'spill'): Promise<ChildReport> {
  const d = tempDir('kv-full-disk');
  const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const script = `mount -t tmpfs -o size=8m tmpfs ${q(d.dir)} && exec ${q(process.execPath)} ${q(CHILD)} ${q(d.dir)} ${mode}`;
  return new Promise<ChildReport>((resolve, reject) => {
    execFile('unshare', ['-m', '--propagation', 'private', 'sh', '-c', script], { timeout: 30_000 }, (err, stdout, stderr) => {
      d.cleanup();
      if (err) return reject(new Error(`child (${mode}) failed: ${err.message}\n${stderr}`));
      resolve(JSON.parse(stdout.trim()) as ChildReport);
    });
  });
}

describe('the KV on a full disk', () => {
  it('with room, the checkpoint commits the held put and reads see it', async () => {
    const r = await onSmallDisk('room');
    assert.deepEqual(r, { step: 'ok', told: null, read: 'v2', alarms: '1' });
  });

  it("a checkpoint's failed commit is fatal at once, and reads refuse instead of going back in time", async () => {
    const r = await onSmallDisk('fill');
    assert.match(r.step, /kv: commit of 1 applied batches .* failed/);
    assert.match(r.told ?? '', /kv: commit of 1 applied batches .* failed/, 'the member was not told: it would carry on');
    assert.match(r.read, /^error: kv: commit of 1 applied batches/);
    assert.match(r.alarms, /^error: kv: commit of 1 applied batches/, 'cluster records answered from the undone state');
  });

  it('a batch whose spill finds the disk full makes SQLite undo the held ones before it: fatal at once, and reads refuse', async () => {
    const r = await onSmallDisk('spill');
    assert.match(r.step, /kv: 1 applied batches held for commit .* were undone: database or disk is full/);
    assert.equal(r.told, r.step, 'the member was not told: it would carry on');
    assert.match(r.read, /^error: kv: 1 applied batches held/);
    assert.match(r.alarms, /^error: kv: 1 applied batches held/, 'cluster records answered from the undone state');
  });
});
