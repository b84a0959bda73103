// Nothing test-only in a release: the bundles bin/run.js runs are built without
// failpoints and planted bugs (src/common/failpoint.ts), the test member bundle
// with them; a member that has any set says so in its first log line.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { FAILPOINTS } from '../../src/common/failpoint.js';
import { BIN, LifeboatCluster, ROOT, etcdctl, type MemberProc } from '../support/lifeboatCluster.js';

const RELEASE_BUNDLES = ['member.cjs', 'snapshot-save.cjs', 'snapshot-restore.cjs', 'everyday.cjs', 'backup-run.cjs', 'process-title.cjs'];
const TEST_BUNDLE = path.join(ROOT, 'dist', 'test', 'member-faults.cjs');
const NAMES = Object.keys(FAILPOINTS);

test('the release bundles hold no failpoint name (nor the variables that set them); the test member bundle holds every member failpoint', () => {
  for (const bundle of RELEASE_BUNDLES) {
    const code = fs.readFileSync(path.join(ROOT, 'dist', bundle), 'utf8');
    const found = [...NAMES, 'LIFEBOAT_FAULT'].filter((n) => code.includes(n));
    assert.deepEqual(found, [], `dist/${bundle} holds failpoints`);
  }
  // The same source, built with them: the names are there to be found, so the check above can fail.
  const code = fs.readFileSync(TEST_BUNDLE, 'utf8');
  const member = Object.entries(FAILPOINTS).filter(([, p]) => p.in === 'member');
  // The planted bugs among them.
  assert.ok(
    ['ack-before-fsync', 'stale-local-reads'].every((n) => member.some(([m]) => m === n)),
    'the planted bugs are member failpoints',
  );
  assert.deepEqual(
    member.filter(([n]) => !code.includes(`"${n}`)).map(([n]) => n),
    [],
    'the test bundle lacks failpoints',
  );
});

describe('a member started with failpoints', () => {
  const c = LifeboatCluster.create('failpoint-log', 3);
  after(async () => (await c).stopAll());

  const first = (m: MemberProc) => JSON.parse(m.log[0]) as { level: string; msg: string; failpoints?: string[]; failpointFile?: string };

  test('from the test bundle, says so in its first log line and fails where the point says; the release member ignores the same point and serves', async () => {
    const cluster = await c;
    // fsync-eio: every fsync of the data dir fails, so a member that honours it stops before it serves.
    const faulted = cluster.define('f1');
    cluster.spawn(faulted, ['--initial-cluster', cluster.initialCluster([faulted])], { env: { LIFEBOAT_FAULT: 'fsync-eio' } });
    assert.notEqual(await cluster.exitOf(faulted, 30_000), 0, faulted.log.join('\n'));
    assert.deepEqual({ level: first(faulted).level, failpoints: first(faulted).failpoints }, { level: 'warn', failpoints: ['fsync-eio'] }, faulted.log[0]);
    assert.match(first(faulted).msg, /failpoints set/);
    assert.ok(
      faulted.log.some((l) => l.includes('EIO')),
      faulted.log.join('\n'),
    );

    // bin/run.js's member, with the same variable: no such line, and it serves.
    const release = cluster.define('r1');
    cluster.spawnServer(release, [...cluster.memberFlags(release), '--initial-cluster', cluster.initialCluster([release])], {
      env: { LIFEBOAT_FAULT: 'fsync-eio', LIFEBOAT_FAULT_FILE: path.join(cluster.dir, 'none') },
      bin: BIN,
    });
    await cluster.waitForLeader([release]);
    assert.ok(!release.log.some((l) => l.includes('failpoint')), release.log.join('\n'));
    await cluster.kill(release, 'SIGTERM');
  });

  test('a fault file: named in the first line, its points read after start (the member stops at the first fsync once fsync-eio is in it)', async () => {
    const cluster = await c;
    const file = path.join(cluster.dir, 'f2.faults');
    fs.writeFileSync(file, '');
    const m = cluster.define('f2');
    cluster.spawn(m, ['--initial-cluster', cluster.initialCluster([m])], { env: { LIFEBOAT_FAULT_FILE: file } });
    await cluster.waitForLeader([m]);
    assert.deepEqual({ failpoints: first(m).failpoints, failpointFile: first(m).failpointFile }, { failpoints: [], failpointFile: file }, m.log[0]);
    fs.writeFileSync(file, 'fsync-eio\n');
    await new Promise((r) => setTimeout(r, 200)); // the fault file is polled every 50 ms
    await etcdctl(m.client, 'put', 'k', 'v');
    assert.notEqual(await cluster.exitOf(m, 15_000), 0, m.log.slice(-3).join('\n'));
  });
});
