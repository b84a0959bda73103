// The deterministic simulation as part of `npm test`: 200 seeds x 1000 ticks of
// message loss, duplication, reordering, partitions, crashes (also in the middle
// of handling a Ready), restarts and membership changes, every invariant checked
// as events happen, then a liveness phase per seed. A failure prints the seed,
// the invariant, the trace and the command that replays it.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Stats } from './cluster.js';
import { addStats, emptyStats, runSeed, type RunOptions, type RunResult } from './run.js';

const SEEDS = 200;
const STEPS = 1000;
const NODES = 5;

function describeFailure(r: RunResult): string {
  const f = r.failure!;
  return [
    `seed ${r.seed} broke ${f.invariant} at tick ${f.tick}: ${f.detail}`,
    `profile: ${r.profile}`,
    ...f.trace.map((l) => `  ${l}`),
    ...(f.stack ? [f.stack] : []),
    `replay: ${f.replay}`,
  ].join('\n');
}

/** Every kind of fault and event the simulator claims to exercise. */
const MUST_HAPPEN: (keyof Stats)[] = [
  'messagesDropped',
  'messagesDuplicated',
  'partitions',
  'crashes',
  'crashesMidReady',
  'writesInFlight',
  'crashesMidWrite',
  'restarts',
  'confChangesApplied',
  'membersAdded',
  'membersRemoved',
  'leaderChanges',
  'entriesCommitted',
  'snapshotsSent',
  'snapshotsApplied',
  'compactions',
  'readsServed',
  'transfers',
  'appendsFolded',
  'acksFolded',
  'commitOnlyUnacked',
];

test(`${SEEDS} seeds x ${STEPS} steps (${NODES} nodes): safety after every step, liveness after healing, every fault exercised`, (t) => {
  const total = emptyStats();
  const failures: string[] = [];
  const started = performance.now();
  for (let seed = 1; seed <= SEEDS; seed++) {
    const r = runSeed({ seed, steps: STEPS, nodes: NODES });
    addStats(total, r.stats);
    if (!r.ok) failures.push(describeFailure(r));
  }
  const secs = (performance.now() - started) / 1000;
  t.diagnostic(`${SEEDS} seeds in ${secs.toFixed(1)}s (${(SEEDS / secs).toFixed(1)} seeds/s)`);
  t.diagnostic(`exercised: ${MUST_HAPPEN.map((k) => `${k}=${total[k]}`).join(' ')}`);
  assert.equal(failures.length, 0, `${failures.length} seed(s) failed:\n\n${failures.join('\n\n')}`);
  for (const k of MUST_HAPPEN) assert.ok(total[k] > 0, `no ${k} in ${SEEDS} seeds: the simulator no longer exercises it`);
  assert.equal(total.livenessPassed, SEEDS, 'every seed must pass its liveness phase');
});

test('a seed replays exactly: same events, same trace, same outcome', () => {
  const o: RunOptions = { seed: 4242, steps: 400, nodes: 5, traceLines: 200 };
  const a = runSeed(o);
  const b = runSeed(o);
  assert.deepEqual(b.stats, a.stats);
  assert.equal(b.profile, a.profile);
  assert.equal(b.ok, a.ok);
  assert.equal(b.fingerprint, a.fingerprint);
  assert.ok(a.stats.messagesDelivered > 0);
});

/**
 * Seeds that found defects in the core, since fixed (scenarios.test.ts has
 * hand-built versions of some): regression tests, failing `npm test` if one breaks again.
 */
const CORE_BUGS: { what: string; o: RunOptions }[] = [
  {
    what: 'a leader that removes itself steps down before the others learn the commit: quorum lost for good',
    o: { seed: 337, steps: STEPS, nodes: NODES, asyncWrite: 0 },
  },
  { what: 'same, the removed leader stays up but rejects votes (longer log) and cannot campaign', o: { seed: 751, steps: STEPS, nodes: NODES, asyncWrite: 0 } },
  { what: 'a ReadIndex forwarded back to its origin makes step() throw NotLeader', o: { seed: 2315, steps: STEPS, nodes: NODES, asyncWrite: 0 } },
];

for (const { what, o } of CORE_BUGS) {
  test(`core bug (seed ${o.seed}): ${what}`, () => {
    const r = runSeed(o);
    assert.ok(r.ok, r.ok ? '' : describeFailure(r));
  });
}
