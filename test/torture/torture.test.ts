// The fault suite's short version (the long one: `npm run torture -- --minutes 10`).
// A healthy cluster passes 60 s of faults of every kind; a member with a planted
// bug (linearizable reads served from its local state) is caught.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { tempDir } from '../storage/fixtures.js';
import { FAULT_KINDS } from './nemesis.js';
import { torture } from './torture.js';

const lines: string[] = [];
const log = (line: string) => lines.push(line);

describe('the fault suite', () => {
  test('60 s of kills, pauses, partitions, a full disk, failing fsyncs and churn: linearizable, every member back, equal HashKV', async () => {
    // A run that ends early says why with the faults so far.
    const r = await torture({ seconds: 60, seed: 11, members: 3, log }).catch((e: Error) => assert.fail(`${e.message}\n${lines.join('\n')}`));
    const counts = FAULT_KINDS.map((k) => `${k} ${r.faults.get(k) ?? 0}`).join(', ');
    console.log(
      `torture (60 s): ${r.ops} ops; faults: ${counts}; ok ops/s quiet ${r.opsPerSecQuiet.toFixed(1)}, faulty ${r.opsPerSecFaulty.toFixed(1)}; verdict ${r.verdict}`,
    );
    assert.deepEqual(r.problems, [], lines.join('\n'));
    assert.equal(r.verdict, 'ok', `${r.window ?? ''}\n${lines.join('\n')}`);
    for (const k of FAULT_KINDS) assert.ok((r.faults.get(k) ?? 0) >= 1, `no ${k} fault was injected: ${counts}`);
  });

  test('a member that serves linearizable reads from its local state is caught', async () => {
    const out = tempDir('torture-planted');
    try {
      const r = await torture({
        seconds: 40,
        seed: 12,
        members: 3,
        planted: 'stale-local-reads',
        kinds: ['isolate', 'isolate-leader', 'pause'],
        outDir: out.dir,
        log,
      });
      assert.equal(r.verdict, 'violation', `the planted bug went unseen: ${r.verdict}\n${lines.join('\n')}`);
      assert.ok(r.windowFile, 'no window file');
    } finally {
      out.cleanup();
    }
  });
});
