// `playbook resume` probes the old members again instead of reusing the first
// attempt's "all down": a run stopped at its confirmation, an old member started
// again meanwhile, and the resume is refused (exit 3) naming it, with nothing
// built. With the old member down again, the same resume goes on and recovers.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, etcdctl, killByLock, run, BIN } from '../support/lifeboatCluster.js';

describe('playbook resume re-checks that the old members are still down', () => {
  let c: LifeboatCluster;
  let target = '';
  before(async () => {
    c = await LifeboatCluster.start('resumerecheck', 2);
    assert.equal((await etcdctl(c.endpoints(), 'put', 'k', 'v')).code, 0);
    for (const m of c.members) assert.equal(await c.kill(m, 'SIGTERM'), 0);
    target = path.join(c.dir, 'recovered');
  });
  after(async () => {
    killByLock(target);
    await c?.stopAll();
  });

  test('an old member back before the resume refuses it; down again, the resume recovers', async () => {
    const [m1, m2] = c.members;
    const auditDb = path.join(c.dir, 'audit.db');
    const playbook = (...args: string[]) => run(process.execPath, [BIN, 'playbook', ...args, '--audit-db', auditDb], { timeoutMs: 120_000 });
    // No --yes and no terminal: the fence step passes (both old members are down), then the run stops at its confirmation.
    const first = await playbook(
      'run',
      'recover-from-quorum-loss',
      '--reason',
      'test: resume re-checks',
      '--set',
      `source=${m1.dataDir}`,
      '--set',
      `data-dir=${target}`,
      '--set',
      'name=r1',
      '--set',
      `peer-url=${m1.peerUrl}`,
      '--set',
      `client-url=${m1.clientUrl}`,
    );
    assert.equal(first.code, 3, `${first.stdout}\n${first.stderr}`);
    const runId = /\br-\d{8}-\d{6}-[0-9a-f]+\b/.exec(first.stdout + first.stderr)?.[0];
    assert.ok(runId, first.stdout);

    c.spawn(m2, []); // the old member comes back while the operator is away
    await new Promise((r) => setTimeout(r, 1500));
    const refused = await playbook('resume', runId, '--yes');
    assert.equal(refused.code, 3, `${refused.stdout}\n${refused.stderr}`);
    assert.match(refused.stdout + refused.stderr, /old members are alive: m2 \([0-9a-f]+\) answers at http:\/\/127\.0\.0\.1:\d+/);
    assert.ok(!fs.existsSync(target), 'the resume built the new cluster next to a live old member');

    assert.equal(await c.kill(m2, 'SIGTERM'), 0);
    const resumed = await playbook('resume', runId, '--yes');
    assert.equal(resumed.code, 0, `${resumed.stdout}\n${resumed.stderr}`);
    const got = await etcdctl(m1.client, 'get', 'k', '--print-value-only');
    assert.equal(got.stdout.trim(), 'v');
  });
});
