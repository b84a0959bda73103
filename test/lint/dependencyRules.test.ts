// The dependency rule (.dependency-cruiser.cjs, run by `npm run lint`) on small
// trees: a clean one passes; an upward import, a cycle and an import of test/
// each fail, naming the rule.
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, test } from 'node:test';
import { ROOT, run } from '../support/tools.js';

const FIXTURES = path.join(ROOT, 'test', 'lint', 'fixtures');

function cruise(fixture: string) {
  const bin = path.join(ROOT, 'node_modules', '.bin', 'depcruise');
  return run(bin, ['src', '--config', path.join(ROOT, '.dependency-cruiser.cjs'), '--output-type', 'err'], {
    cwd: path.join(FIXTURES, fixture),
    timeoutMs: 60_000,
  });
}

describe('the dependency rule', () => {
  test('a tree whose imports point down passes', async () => {
    const r = await cruise('clean');
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });

  for (const [fixture, rule] of [
    ['upward', 'no-upward-from-api-net-transport-kv-storage-etcdfile'],
    ['cycle', 'no-circular'],
    ['testimport', 'no-test-imports'],
  ] as const) {
    test(`${fixture === 'upward' ? 'an upward import' : fixture === 'cycle' ? 'a cycle' : 'an import of test/'} fails with ${rule}`, async () => {
      const r = await cruise(fixture);
      assert.notEqual(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout + r.stderr, new RegExp(`error ${rule}`));
    });
  }
});
