// A scripted run's log stays readable: a step reporting progress many times a
// second (wait-caught-up polls every 0.2 s) prints a line when what it says
// changes, and otherwise at most one every 5 s.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ScriptedRenderer } from '../../src/cli/output/scriptedRenderer.js';

test('progress lines are printed on a change of wording, else at most every 5 s', async () => {
  const lines: string[] = [];
  let clock = Date.parse('2026-11-23T08:00:00Z');
  const view = new ScriptedRenderer(
    (l) => lines.push(l),
    () => new Date(clock),
  );
  await view.run([
    {
      kind: 'step',
      id: 'wait',
      title: 'wait',
      run: async (ui) => {
        // 10 s of polls every 0.2 s while the learner catches up, then 3 s caught up.
        for (let i = 0; i < 50; i++, clock += 200) ui.progress(`applied ${1000 + i * 10} of 2000 (${1000 - i * 10} behind)`);
        for (let i = 0; i < 15; i++, clock += 200) ui.progress(`caught up (applied 2000 of 2000); stable for ${(i * 0.2).toFixed(1)}s of 3.0s`);
        await Promise.resolve();
      },
    },
  ]);
  const progress = lines.filter((l) => l.includes('  wait: '));
  // Catching up: at 0 s, 5 s (and not at 10 s: the polls end at 9.8 s); then the change to "caught up".
  assert.deepEqual(
    progress.map((l) => l.slice(9)),
    [
      '  wait: applied 1000 of 2000 (1000 behind)',
      '  wait: applied 1250 of 2000 (750 behind)',
      '  wait: caught up (applied 2000 of 2000); stable for 0.0s of 3.0s',
    ],
  );
});
