// Each deliberate defect the core can switch on must be caught by the simulator
// within a bounded number of seeds: with every check on (the implementation-level
// ones catch a defect where it happens), and also with the end-to-end checks alone
// (the fault schedule must be nasty enough to turn the defect into a visible
// safety violation: two leaders in a term, a lost committed entry, ...).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PLANTED_BUGS, type PlantedBug } from '../../src/raft/index.js';
import type { CheckLevel } from './invariants.js';
import { runSeed, type RunResult } from './run.js';

const MAX_SEEDS = 300;
const STEPS = 1000;
const NODES = 5;

/** The invariants that may legitimately report each defect. */
const EXPECTED: Record<PlantedBug, string[]> = {
  'learner-counts-toward-commit': ['commit-durability', 'vote-quorum', 'leader-completeness', 'state-machine-safety'],
  'commit-previous-term-by-counting': ['commit-current-term', 'leader-completeness', 'state-machine-safety', 'committed-entry-lost', 'commit-durability'],
  'vote-not-persisted': ['persist-before-send', 'election-safety', 'hard-state', 'vote-quorum'],
  'skip-log-consistency-check': ['log-matching', 'state-machine-safety', 'leader-completeness', 'committed-entry-lost'],
};

function hunt(bug: PlantedBug, checks: CheckLevel): { seeds: number; result?: RunResult } {
  for (let seed = 1; seed <= MAX_SEEDS; seed++) {
    const r = runSeed({ seed, steps: STEPS, nodes: NODES, plantedBug: bug, checks });
    // A liveness failure is not what we hunt for: keep looking for a safety violation.
    if (!r.ok && r.failure!.invariant !== 'liveness') return { seeds: seed, result: r };
  }
  return { seeds: MAX_SEEDS };
}

for (const checks of ['all', 'end-to-end'] as const) {
  describe(`planted bugs are caught within ${MAX_SEEDS} seeds (checks: ${checks})`, () => {
    for (const bug of PLANTED_BUGS) {
      test(bug, (t) => {
        const { seeds, result } = hunt(bug, checks);
        assert.ok(result, `${bug} was not caught in ${MAX_SEEDS} seeds with checks '${checks}'`);
        const f = result.failure!;
        t.diagnostic(`${bug}: caught at seed ${result.seed} (${seeds} seed${seeds === 1 ? '' : 's'} run) by ${f.invariant}: ${f.detail}`);
        t.diagnostic(`replay: ${f.replay}`);
        assert.ok(
          EXPECTED[bug].includes(f.invariant),
          `${bug} was reported as ${f.invariant} (${f.detail}); expected one of ${EXPECTED[bug].join(', ')}\n${f.stack ?? ''}`,
        );
      });
    }
  });
}
