// Shipped playbooks against real members: recover-from-nospace brings writes
// back; a run killed between add-learner's reply and its audit record resumes
// without adding the member twice.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BIN, FAULTS_BIN, LifeboatCluster, SMALL_QUOTA_BYTES, etcdctl, killByLock, lifeboat, parseEtcdJson, run } from '../support/lifeboatCluster.js';

describe('recover-from-nospace', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('nospace', 1, ['--quota-backend-bytes', String(SMALL_QUOTA_BYTES)]);
  });
  after(async () => c?.stopAll());

  test('a member over its quota takes writes again after the playbook', async () => {
    const ep = c.members[0].client;
    let refused = '';
    for (let i = 0; i < 400 && !refused; i++) {
      const r = await etcdctl(ep, 'put', `fill${i % 20}`, 'v'.repeat(2000));
      if (r.code !== 0) refused = r.stderr;
    }
    assert.match(refused, /database space exceeded/);
    const r = await lifeboat(
      'playbook',
      'run',
      'recover-from-nospace',
      '--yes',
      '--reason',
      'test: nospace',
      '--audit-db',
      path.join(c.dir, 'audit.db'),
      '--set',
      `endpoints=${c.members[0].clientUrl}`,
    );
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.equal((await etcdctl(ep, 'put', 'after', 'ok')).code, 0);
    assert.equal((await etcdctl(ep, 'alarm', 'list')).stdout.trim(), '');
  });
});

describe('resume after the toolkit is killed mid-run', () => {
  let c: LifeboatCluster;
  const started: string[] = [];
  before(async () => {
    c = await LifeboatCluster.start('resume', 1);
  });
  after(async () => {
    for (const d of started) killByLock(d);
    await c?.stopAll();
  });

  test('killed right after add-learner answered: resume finds the learner and does not add it twice', async () => {
    const n2 = c.define('n2');
    started.push(n2.dataDir);
    const auditDb = path.join(c.dir, 'audit.db');
    const args = [
      BIN,
      'playbook',
      'run',
      'scale-out',
      '--yes',
      '--reason',
      'test: resume',
      '--audit-db',
      auditDb,
      '--set',
      `endpoints=${c.members[0].clientUrl}`,
      '--set',
      `members=n2=${n2.peerUrl},${n2.clientUrl},${n2.dataDir}`,
      '--set',
      'stabilization=1s',
    ];
    const killed = await run(process.execPath, [FAULTS_BIN, ...args.slice(1)], { env: { LIFEBOAT_FAULT: 'after-step:grow[1].add' }, timeoutMs: 60_000 });
    assert.notEqual(killed.code, 0, 'the fault hook did not stop the run');
    // The cluster did add the learner; the audit log does not know it yet.
    const list = parseEtcdJson((await etcdctl(c.members[0].client, 'member', 'list', '-w', 'json')).stdout);
    assert.equal(list.members.length, 2);
    const runId =
      /\br-\d{8}-\d{6}-[0-9a-f]+\b/.exec(killed.stdout + killed.stderr)?.[0] ??
      /\br-\d{8}-\d{6}-[0-9a-f]+\b/.exec((await lifeboat('audit', 'list', '--audit-db', auditDb)).stdout)?.[0];
    assert.ok(runId, 'no run ID');

    const resumed = await run(process.execPath, [BIN, 'playbook', 'resume', runId, '--yes', '--audit-db', auditDb], { timeoutMs: 120_000 });
    assert.equal(resumed.code, 0, `${resumed.stdout}\n${resumed.stderr}`);
    assert.match(resumed.stdout + resumed.stderr, /already a member/);
    const after = parseEtcdJson((await etcdctl(c.members[0].client, 'member', 'list', '-w', 'json')).stdout);
    assert.equal(after.members.length, 2, 'the learner was added twice');
    assert.ok(
      after.members.every((m: { isLearner?: boolean }) => !m.isLearner),
      'n2 was not promoted',
    );
    const verify = await lifeboat('audit', 'verify', '--audit-db', auditDb);
    assert.equal(verify.code, 0, verify.stderr);
  });
});
