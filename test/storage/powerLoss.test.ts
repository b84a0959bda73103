// The power-loss model (powerLossModel.ts) over a real member: every generated
// state after a power cut must start and serve every acknowledged write. And the
// model must be able to fail: with a planted bug (the member answers before its
// log's fsync) some state loses an acknowledged write.
// `LIFEBOAT_POWERLOSS_CASES=500 LIFEBOAT_POWERLOSS_SEED=7 node --test dist/test/storage/powerLoss.test.js`
// (or `npm run powerloss`) for the extended run; a failing case prints its seed and number.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePorts } from '../support/ports.js';
import { tempDir } from './fixtures.js';
import { CATEGORIES, capture, describeCase, generate, runCase, type CaptureResult, type Case, type Category } from './powerLossModel.js';

const PER_CATEGORY = Number(process.env.LIFEBOAT_POWERLOSS_CASES ?? 50);
const SEED = Number(process.env.LIFEBOAT_POWERLOSS_SEED ?? 1);
const REQUIRED: Category[] = ['kv above commit', 'kv above last index', 'torn record', 'zero-filled tail'];

async function runAll(cap: CaptureResult, cases: Case[], seed: number, stopAtFirst: boolean): Promise<{ failures: string[]; counts: Map<Category, number> }> {
  const ports = await freePorts(4, `powerloss-run-${cap.root}`);
  const failures: string[] = [];
  const counts = new Map<Category, number>();
  let next = 0;
  // Two restarts at a time: this machine has two cores.
  const lane = async (k: number) => {
    while (next < cases.length && !(stopAtFirst && failures.length > 0)) {
      const c = cases[next++];
      const r = await runCase(cap, c, path.join(cap.root, `case-lane${k}`), [ports[2 * k], ports[2 * k + 1]], seed);
      if (r.error) failures.push(`${describeCase(c)} (seed ${seed}): ${r.error}`);
      else for (const cat of c.categories) counts.set(cat, (counts.get(cat) ?? 0) + 1);
    }
  };
  await Promise.all([lane(0), lane(1)]);
  return { failures, counts };
}

describe('the power-loss model', () => {
  const tmp = tempDir('powerloss');
  after(() => tmp.cleanup());

  describe('a member that fsyncs its log before it answers', () => {
    let cap: CaptureResult;
    before(async () => {
      cap = await capture(path.join(tmp.dir, 'good'), { keys: 2100, every: 100, snapshotCount: 400 });
    });

    test(`restarts from every generated power-loss state and serves every acknowledged write (at least ${PER_CATEGORY} of each kind)`, async () => {
      const cases: Case[] = [];
      for (const cat of CATEGORIES) {
        // Every case counts toward each kind it shows; the last two need fewer of their own.
        const want = REQUIRED.includes(cat) ? PER_CATEGORY : Math.ceil(PER_CATEGORY / 5);
        const made = generate(cap, cat, want, SEED, cases.length);
        assert.equal(made.length, want, `generated only ${made.length} cases of "${cat}" from ${cap.cuts.length} cuts`);
        cases.push(...made);
      }
      const { failures, counts } = await runAll(cap, cases, SEED, false);
      console.log(`power-loss model: ${cases.length} restarts; ${[...counts].map(([k, v]) => `${k}: ${v}`).join(', ')}`);
      assert.deepEqual(failures, []);
      for (const cat of REQUIRED) {
        assert.ok((counts.get(cat) ?? 0) >= PER_CATEGORY, `${cat}: ${counts.get(cat) ?? 0} passing cases`);
      }
    });
  });

  describe('a member with a planted bug: it answers before its log is fsynced', () => {
    let cap: CaptureResult;
    before(async () => {
      cap = await capture(path.join(tmp.dir, 'planted'), { keys: 1200, every: 100, snapshotCount: 400, planted: true });
    });

    test('some power-loss state loses an acknowledged write', async () => {
      const cases = generate(cap, 'older kv.db', 40, SEED, 0);
      assert.ok(cases.length > 0, 'no case generated');
      const { failures } = await runAll(cap, cases, SEED, true);
      assert.ok(
        failures.some((f) => f.includes('acknowledged writes lost')),
        `the model found no lost write in ${cases.length} cases: ${failures.join('; ')}`,
      );
    });
  });
});
