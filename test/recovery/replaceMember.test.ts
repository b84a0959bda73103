// replace-failed-member against real processes: a member of a 3-member cluster
// dies for good; the playbook removes it, adds the replacement as a learner,
// starts it, waits until it is caught up and promotes it.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BIN, LifeboatCluster, etcdctl, killByLock, lifeboat, parseEtcdJson, run } from '../support/lifeboatCluster.js';

describe('replace-failed-member', () => {
  let c: LifeboatCluster;
  const started: string[] = [];
  before(async () => {
    c = await LifeboatCluster.start('replace', 3);
  });
  after(async () => {
    for (const d of started) killByLock(d);
    await c?.stopAll();
  });

  test('a dead member (the leader) is removed and its replacement added, caught up and promoted; the audit has the IDs before and after', async () => {
    const [m1, m2, m3] = c.members;
    for (let i = 0; i < 10; i++) assert.equal((await etcdctl(m1.client, 'put', `rep/${i}`, 'v')).code, 0);
    const before = parseEtcdJson((await etcdctl(m1.client, 'member', 'list', '-w', 'json')).stdout);
    const m3id = BigInt(before.members.find((m: { name: string }) => m.name === 'm3').ID).toString(16);
    // The dead member is the leader: the removal races the election of the next one.
    const leader = await c.waitForLeader();
    if (leader !== m3) assert.equal((await etcdctl(leader.client, 'move-leader', m3id)).code, 0);
    assert.equal((await c.waitForLeader()).name, 'm3');
    await c.kill(m3);
    const n4 = c.define('n4');
    started.push(n4.dataDir);
    const auditDb = path.join(c.dir, 'audit.db');
    const r = await run(
      process.execPath,
      [
        BIN,
        'playbook',
        'run',
        'replace-failed-member',
        '--yes',
        '--reason',
        'test: m3 lost',
        '--audit-db',
        auditDb,
        '--set',
        `endpoints=${m1.clientUrl},${m2.clientUrl}`,
        '--set',
        'failed=m3',
        '--set',
        'name=n4',
        '--set',
        `peer-url=${n4.peerUrl}`,
        '--set',
        `client-url=${n4.clientUrl}`,
        '--set',
        `data-dir=${n4.dataDir}`,
        '--set',
        'stabilization=1s',
      ],
      { timeoutMs: 180_000 },
    );
    const out = r.stdout + r.stderr;
    assert.equal(r.code, 0, out);

    const list = parseEtcdJson((await etcdctl(m1.client, 'member', 'list', '-w', 'json')).stdout);
    assert.deepEqual(list.members.map((m: { name: string }) => m.name).sort(), ['m1', 'm2', 'n4']);
    assert.ok(
      list.members.every((m: { isLearner?: boolean }) => !m.isLearner),
      'n4 is still a learner',
    );
    const endpoints = [m1.client, m2.client, n4.client];
    const hashes = parseEtcdJson((await etcdctl(endpoints, 'endpoint', 'hashkv', '-w', 'json')).stdout).map((h: { HashKV: { hash: number } }) => h.HashKV.hash);
    assert.equal(hashes.length, 3);
    assert.equal(new Set(hashes).size, 1);
    assert.equal((await etcdctl(n4.client, 'get', 'rep/9', '--print-value-only', '--consistency=s')).stdout.trim(), 'v');

    const runId = /\br-\d{8}-\d{6}-[0-9a-f]+\b/.exec(out)?.[0];
    assert.ok(runId, out);
    const show = JSON.parse((await lifeboat('audit', 'show', runId, '--audit-db', auditDb, '-w', 'json')).stdout) as {
      run: { outcome: string; memberIdsBefore: string[]; memberIdsAfter: string[] };
    };
    assert.equal(show.run.outcome, 'succeeded');
    assert.ok(show.run.memberIdsBefore.includes(m3id), 'the dead member is not among the IDs before');
    assert.ok(!show.run.memberIdsAfter.includes(m3id));
    assert.deepEqual([...show.run.memberIdsAfter].sort(), list.members.map((m: { ID: string }) => BigInt(m.ID).toString(16)).sort());
    assert.equal((await lifeboat('audit', 'verify', '--audit-db', auditDb)).code, 0);
  });
});
