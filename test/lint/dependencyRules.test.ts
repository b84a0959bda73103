// The dependency rule (.dependency-cruiser.cjs, run by `npm run lint`) on small
// trees: a clean one (every edge the order allows) passes; an upward import, an
// import between neighbours on the lower floors, a cycle and an import of test/
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
  test('a tree whose imports point down passes (api → net, kv; transport → net; etcdfile → kv; recovery → etcdfile; client → net, common)', async () => {
    const r = await cruise('clean');
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });

  // fixture → what it shows failing → the rule that names it
  for (const [fixture, what, rule] of [
    ['upward', 'the store importing the member', 'no-upward-from-net-kv-storage'],
    ['netapi', "net importing the server's API", 'no-upward-from-net-kv-storage'],
    ['lowerupper', 'the store importing a reader of etcd files (a floor above it)', 'no-upward-from-net-kv-storage'],
    ['etcdfilerecovery', 'a reader of etcd files importing recovery', 'no-upward-from-api-transport-etcdfile'],
    ['sideways', 'transport importing its neighbour api', 'no-sideways-in-api-transport-etcdfile'],
    ['sidewayslow', 'storage importing its neighbour kv', 'no-sideways-in-net-kv-storage'],
    ['clientapi', "the client importing the server's API (for etcd's texts)", 'client-imports-no-server-code'],
    ['cycle', 'a cycle', 'no-circular'],
    ['testimport', 'an import of test/', 'no-test-imports'],
  ] as const) {
    test(`${what} fails with ${rule}`, async () => {
      const r = await cruise(fixture);
      assert.notEqual(r.code, 0, r.stdout + r.stderr);
      assert.match(r.stdout + r.stderr, new RegExp(`error ${rule}:`));
    });
  }
});
