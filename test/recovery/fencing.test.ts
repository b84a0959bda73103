// Fenced old members never serve: after a recovery whose playbook fenced the old
// data dirs, two old Lifeboat members restarted together while the recovered member
// is stopped (so nobody can tell them they were superseded) stop at once with exit
// 78 and accept no write. Unfenced, the same two form a quorum of the old cluster
// and take a write: that control shows the test can fail.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, etcdctl, run, waitFor, BIN, type MemberProc } from '../support/lifeboatCluster.js';
import { playbookRun } from '../support/playbookRun.js';
import { stopProcessesUnder } from '../support/processes.js';

describe('fenced old members never serve', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('fencing', 3);
  });
  after(async () => {
    await stopProcessesUnder(c.dir);
    await c?.stopAll();
  });

  test('two old members restarted together with the recovered member stopped: fenced, both exit 78 and accept no write; unfenced, they would serve', async () => {
    const [m1, m2, m3] = c.members as [MemberProc, MemberProc, MemberProc];
    assert.equal((await etcdctl(c.endpoints(), 'put', 'before', 'v')).code, 0);
    await Promise.all([c.kill(m1), c.kill(m2), c.kill(m3)]);
    const initial = c.initialCluster();

    const recovered = c.define('r1');
    recovered.dataDir = path.join(c.dir, 'r1-data');
    const r = await playbookRun(
      'recover-from-quorum-loss',
      {
        source: m1.dataDir,
        'data-dir': recovered.dataDir,
        name: 'm1',
        'peer-url': m1.peerUrl,
        'client-url': recovered.clientUrl,
        'old-data-dirs': `${m2.dataDir},${m3.dataDir}`,
      },
      path.join(c.dir, 'audit.db'),
      { timeoutMs: 120_000 },
    );
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.equal((await etcdctl(recovered.client, 'put', 'after', 'v')).code, 0);
    // The recovered member stops: nobody is left to tell the old ones they were superseded.
    await stopProcessesUnder(recovered.dataDir);

    for (const m of [m2, m3]) c.spawn(m, ['--initial-cluster', initial]);
    const exits = await Promise.all([m2, m3].map((m) => c.exitOf(m, 20_000)));
    assert.deepEqual(exits, [78, 78], [m2, m3].map((m) => m.log.join('\n')).join('\n---\n'));
    for (const m of [m2, m3]) assert.match(m.log.join('\n'), /cluster superseded by [0-9a-f]+ \(fenced by lifeboat datadir fence\)/);
    const write = await etcdctl([m2.client, m3.client].join(','), '--dial-timeout', '1s', '--command-timeout', '2s', 'put', 'split-brain', 'v');
    assert.notEqual(write.code, 0, 'a fenced old member accepted a write');

    // Unfenced, the same two serve the old cluster: the danger the fence prevents.
    for (const m of [m2, m3]) assert.equal((await run(process.execPath, [BIN, 'datadir', 'unfence', m.dataDir])).code, 0);
    for (const m of [m2, m3]) c.spawn(m, ['--initial-cluster', initial]);
    await waitFor(
      'the unfenced old members to take a write',
      async () => (await etcdctl([m2.client, m3.client].join(','), '--dial-timeout', '1s', '--command-timeout', '2s', 'put', 'split-brain', 'v')).code === 0,
      30_000,
      500,
    );
  });
});
