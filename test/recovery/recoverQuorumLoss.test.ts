// The main job end to end with real processes: a cluster loses quorum for good,
// `recover plan` picks the survivor that loses the least, the scripted
// recover-from-quorum-loss playbook rebuilds 3 healthy voters from it, the old
// members that come back stop as superseded, and the audit log is complete.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { AuditLog } from '../../src/audit/index.js';
import { formatDuration } from '../../src/cli/output/timelineOutput.js';
import { ackedWriter } from '../support/ackedWriter.js';
import { inPage, launchChromium, openFile, overflow } from '../support/browser.js';
import { LifeboatCluster, etcdctl, killByLock, lifeboat, parseEtcdJson, run, waitFor, BIN, type MemberProc } from '../support/lifeboatCluster.js';

function memberArg(members: MemberProc[]): string {
  return members.map((m) => `${m.name}=${m.peerUrl},${m.clientUrl},${m.dataDir}`).join(';');
}

/** Stop every member the playbook started (detached) through its data dir lock. */
describe('recovery from permanent quorum loss', () => {
  let c: LifeboatCluster;
  const started: string[] = [];
  before(async () => {
    c = await LifeboatCluster.start('recover', 3);
  });
  after(async () => {
    for (const d of started) killByLock(d);
    await c?.stopAll();
  });

  test('plan over every survivor, scripted recovery: every acknowledged key, new cluster ID, 3 voters, superseded old members, audit intact', async () => {
    const [m1, m2, m3] = c.members;
    const oldCluster = BigInt(parseEtcdJson((await etcdctl(c.endpoints(), 'get', 'x', '-w', 'json')).stdout).header.cluster_id).toString(16);
    // Writes acknowledged right up to the kill.
    const w = ackedWriter(m1.client);
    // Enough acknowledged writes to matter, however loaded the machine (bounded wait), then the kill mid-stream.
    await waitFor('50 acknowledged writes', () => w.acked.length >= 50);
    await Promise.all([c.kill(m2), c.kill(m3)]);
    await c.kill(m1);
    const acked = await w.stop();
    assert.ok(acked.length > 50, `only ${acked.length} writes acknowledged`);

    // The plan, read-only, over every data dir: it names the one to use.
    const plan = await lifeboat('recover', 'plan', '--from-data-dir', m1.dataDir, '--from-data-dir', m2.dataDir, '--from-data-dir', m3.dataDir, '-w', 'json');
    assert.equal(plan.code, 0, plan.stderr);
    const p = JSON.parse(plan.stdout);
    const best = p.sources[p.recommended];
    assert.ok(best.report, 'the recommended source is a data dir');
    for (const s of p.sources) {
      assert.ok(best.report.lastTerm > s.report.lastTerm || (best.report.lastTerm === s.report.lastTerm && best.report.lastIndex >= s.report.lastIndex));
    }
    assert.ok(!p.warnings.some((x: string) => /may be missing/.test(x)), 'no missing-writes warning when every voter was examined');
    assert.match(p.command, /playbook run recover-from-quorum-loss/);
    const source = c.members.find((m) => path.resolve(m.dataDir) === best.path)!;

    const fresh = [c.define('n2'), c.define('n3')];
    const recovered = c.define('r1');
    recovered.dataDir = path.join(c.dir, 'r1-data');
    started.push(recovered.dataDir, ...fresh.map((m) => m.dataDir));
    const auditDb = path.join(c.dir, 'audit.db');
    const r = await run(
      process.execPath,
      [
        BIN,
        'playbook',
        'run',
        'recover-from-quorum-loss',
        '--yes',
        '--reason',
        'test: quorum lost',
        '--audit-db',
        auditDb,
        '--set',
        `source=${source.dataDir}`,
        '--set',
        `data-dir=${recovered.dataDir}`,
        '--set',
        'name=r1',
        '--set',
        `peer-url=${source.peerUrl}`,
        '--set',
        `client-url=${recovered.clientUrl}`,
        '--set',
        `members=${memberArg(fresh)}`,
        '--set',
        'stabilization=1s',
      ],
      { timeoutMs: 240_000 },
    );
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const runId = /\br-\d{8}-\d{6}-[0-9a-f]+\b/.exec(r.stdout + r.stderr)?.[0];
    assert.ok(runId, `no run ID printed:\n${r.stdout}`);
    const head = /[0-9a-f]{64}/.exec(r.stdout + r.stderr)?.[0];
    assert.ok(head, 'the audit head hash was not printed');

    // Every acknowledged key, on every member.
    const endpoints = [recovered.client, ...fresh.map((m) => m.client)];
    for (const ep of endpoints) {
      const got = await etcdctl(ep, 'get', 'acked/', '--prefix', '--keys-only', '--consistency=s');
      const keys = new Set(got.stdout.split('\n').filter(Boolean));
      const missing = acked.filter((k) => !keys.has(k));
      assert.deepEqual(missing, [], `${ep} misses acknowledged keys`);
    }
    // A new cluster, recording its parent; 3 voters; equal hashes.
    const header = parseEtcdJson((await etcdctl(recovered.client, 'get', 'x', '-w', 'json')).stdout).header;
    const newCluster = BigInt(header.cluster_id).toString(16);
    assert.notEqual(newCluster, oldCluster);
    const list = parseEtcdJson((await etcdctl(recovered.client, 'member', 'list', '-w', 'json')).stdout);
    assert.equal(list.members.filter((m: { isLearner?: boolean }) => !m.isLearner).length, 3);
    const hashes = parseEtcdJson((await etcdctl(endpoints, 'endpoint', 'hashkv', '-w', 'json')).stdout).map((h: { HashKV: { hash: number } }) => h.HashKV.hash);
    assert.equal(new Set(hashes).size, 1);

    // The two old members come back on their old data dirs: superseded, exit 78.
    const others = c.members.filter((m) => m !== source && (m === m1 || m === m2 || m === m3));
    for (const m of others) c.spawn(m, []);
    for (const m of others) {
      assert.equal(await c.exitOf(m), 78, m.log.join('\n'));
      assert.ok(c.logHas(m, `cluster superseded by ${newCluster}`), m.log.join('\n'));
    }

    // The audit log holds the run, and its chain ends at the printed head.
    const verify = await lifeboat('audit', 'verify', '--audit-db', auditDb, '--head', head);
    assert.equal(verify.code, 0, verify.stderr);
    const show = await lifeboat('audit', 'show', runId, '--audit-db', auditDb, '-w', 'json');
    assert.equal(show.code, 0, show.stderr);
    const { run: rec, timeline } = JSON.parse(show.stdout) as {
      run: { outcome: string; clusterIdBefore: string; memberIdsBefore: string[]; clusterIdAfter: string; memberIdsAfter: string[] };
      timeline: Array<{ entry: string; stepId?: string; type?: string; status?: string; kind?: string; message?: string; data?: Record<string, unknown> }>;
    };
    assert.equal(rec.outcome, 'succeeded');
    // Cluster and member IDs before (the old cluster) and after (the new one, its 3 voters).
    const oldIds = parseEtcdJson(plan.stdout)
      .sources[p.recommended].report.members.map((m: { id: string }) => BigInt(`0x${m.id}`).toString(16))
      .sort();
    assert.equal(rec.clusterIdBefore, BigInt(`0x${oldCluster}`).toString(16));
    assert.deepEqual([...rec.memberIdsBefore].sort(), oldIds);
    assert.equal(rec.clusterIdAfter, newCluster);
    const newIds = list.members.map((m: { ID: string }) => BigInt(m.ID).toString(16)).sort();
    assert.deepEqual([...rec.memberIdsAfter].sort(), newIds);
    // Every step of the playbook completed, once each member: nothing failed, nothing left running.
    const steps = timeline.filter((e) => e.entry === 'step');
    assert.ok(
      steps.every((s) => s.status === 'succeeded'),
      JSON.stringify(steps.filter((s) => s.status !== 'succeeded')),
    );
    // materialize and bump have nothing to do for a data-dir source, and say so.
    const expected = [
      'materialize',
      'inspect',
      'fence',
      'go',
      'restore',
      'start',
      'healthy',
      'bump',
      ...[1, 2].flatMap((i) => ['add', 'start-learner', 'caught-up', 'promote', 'check-member'].map((s) => `readd[${i}].${s}`)),
      'final-check',
      'fence-old',
      'done',
    ];
    assert.deepEqual(
      steps.map((s) => s.stepId),
      expected,
    );
    // The confirmation, answered by --yes, is on record; so is the new cluster.
    const prompts = timeline.filter((e) => e.entry === 'event' && e.kind === 'prompt');
    assert.ok(
      prompts.some((e) => /Build a NEW one-member cluster/.test(e.message ?? '') && e.data?.answer === true && e.data?.answeredBy === '--yes'),
      JSON.stringify(prompts),
    );
    assert.ok(JSON.stringify(timeline).includes(newCluster));

    // The recovery's report, as a person sees it in a browser: every step with its duration and outcome, nothing wider than the page, nothing fetched.
    const html = path.join(c.dir, 'recovery-report.html');
    const rep = await lifeboat('audit', 'report', runId, '--html', html, '--audit-db', auditDb);
    assert.equal(rep.code, 0, rep.stderr);
    const chromium = await launchChromium();
    try {
      const { page, otherRequests } = await openFile(chromium, html, { width: 1280, height: 900 });
      assert.deepEqual(otherRequests, [], 'the page fetched nothing but itself');
      const rows = await inPage<Array<{ stepId: string; status: string; duration: string }>>(
        page,
        `Array.from(document.querySelectorAll('tr.step')).map((tr) => ({ stepId: tr.dataset.stepId, status: tr.dataset.status, duration: tr.querySelector('.duration').textContent }))`,
      );
      assert.deepEqual(
        rows.map((r) => r.stepId),
        expected,
      );
      const audit = AuditLog.open(auditDb, { readonly: true });
      const attempts = audit.steps(runId);
      audit.close();
      for (const row of rows) {
        assert.equal(row.status, 'succeeded', row.stepId);
        assert.equal(row.duration, formatDuration(attempts.find((a) => a.stepId === row.stepId)?.durationMs ?? -1), row.stepId);
      }
      assert.equal(await inPage<string>(page, `document.querySelector('#outcome').textContent`), 'succeeded');
      const layout = await overflow(page);
      assert.ok(layout.scrollWidth <= layout.innerWidth, `the page scrolls sideways: ${JSON.stringify(layout)}`);
      assert.deepEqual(layout.sticking, []);
    } finally {
      await chromium.close();
    }
  });
});

describe('recover plan with a lagging survivor, and fencing', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('lagging', 3);
  });
  after(async () => c?.stopAll());

  test('given only a lagging survivor, the plan warns that later acknowledged writes may be missing', async () => {
    const [m1, m2, m3] = c.members;
    await c.kill(m3);
    // m3 may have led: the puts wait for m1 and m2 to have a leader again (bounded).
    await c.waitForLeader([m1, m2]);
    for (let i = 0; i < 20; i++) {
      const put = await etcdctl([m1.client, m2.client], 'put', `late${i}`, 'x');
      assert.equal(put.code, 0, put.stderr);
    }
    await c.kill(m1);
    await c.kill(m2);
    const plan = await lifeboat('recover', 'plan', '--from-data-dir', m3.dataDir);
    assert.equal(plan.code, 0, plan.stderr);
    assert.match(plan.stdout, /writes acknowledged after this survivor's last log write \(index \d+ at \d{4}-\d\d-\d\dT/);
    assert.match(plan.stdout, /look for a more recent survivor first/);
    const all = await lifeboat('recover', 'plan', '--from-data-dir', m3.dataDir, '--from-data-dir', m1.dataDir, '-w', 'json');
    const p = JSON.parse(all.stdout);
    assert.equal(p.sources[p.recommended].path, path.resolve(m1.dataDir));
  });

  test('fencing refuses to recover while an old member answers (exit 3, named); nothing is built', async () => {
    const [m1, m2] = c.members;
    c.spawn(m2, []); // an old member is alive again
    await new Promise((r) => setTimeout(r, 1500));
    const target = path.join(c.dir, 'never');
    const r = await run(
      process.execPath,
      [
        BIN,
        'playbook',
        'run',
        'recover-from-quorum-loss',
        '--yes',
        '--reason',
        'test: fencing',
        '--audit-db',
        path.join(c.dir, 'audit.db'),
        '--set',
        `source=${m1.dataDir}`,
        '--set',
        `data-dir=${target}`,
        '--set',
        'name=r1',
        '--set',
        `peer-url=${m1.peerUrl}`,
        '--set',
        'client-url=http://127.0.0.1:1',
      ],
      { timeoutMs: 120_000 },
    );
    assert.equal(r.code, 3, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout + r.stderr, new RegExp(`old members are alive: m2`));
    assert.ok(!fs.existsSync(target), 'recovery went ahead despite a live old member');
  });

  test('--assume-dead lets recovery past a live old member it names, and the override is recorded', async () => {
    const [m1] = c.members; // m2 is still alive from the fencing test
    const plan = JSON.parse((await lifeboat('recover', 'plan', '--from-data-dir', m1.dataDir, '-w', 'json')).stdout);
    const m2id: string = plan.sources[0].report.members.find((m: { name: string }) => m.name === 'm2').id;
    const auditDb = path.join(c.dir, 'audit-assume.db');
    const target = path.join(c.dir, 'assume');
    // No --yes and no terminal: past the fence, the run stops at its confirmation (exit 3) before building anything.
    const r = await run(
      process.execPath,
      [
        BIN,
        'playbook',
        'run',
        'recover-from-quorum-loss',
        '--reason',
        'test: assume-dead',
        '--audit-db',
        auditDb,
        '--set',
        `source=${m1.dataDir}`,
        '--set',
        `data-dir=${target}`,
        '--set',
        'name=r1',
        '--set',
        `peer-url=${m1.peerUrl}`,
        '--set',
        'client-url=http://127.0.0.1:1',
        '--set',
        `assume-dead=${m2id}`,
      ],
      { timeoutMs: 120_000 },
    );
    const out = r.stdout + r.stderr;
    assert.equal(r.code, 3, out);
    assert.match(out, /needs confirmation/);
    assert.ok(!fs.existsSync(target));
    const runId = /\br-\d{8}-\d{6}-[0-9a-f]+\b/.exec(out)?.[0];
    assert.ok(runId, out);
    const show = JSON.parse((await lifeboat('audit', 'show', runId, '--audit-db', auditDb, '-w', 'json')).stdout) as {
      timeline: Array<{
        entry: string;
        stepId?: string;
        status?: string;
        outputs?: Record<string, unknown>;
        kind?: string;
        message?: string;
        data?: Record<string, unknown>;
      }>;
    };
    const override = show.timeline.find((e) => e.entry === 'event' && e.kind === 'override');
    assert.ok(override, 'the --assume-dead override is not in the audit');
    assert.equal(override.data?.member, m2id);
    assert.match(override.message ?? '', /answered at .* but the operator declared it dead/);
    const fence = show.timeline.find((e) => e.entry === 'step' && e.stepId === 'fence');
    assert.equal(fence?.status, 'succeeded');
    assert.deepEqual(fence?.outputs?.assumedDead, [m2id]);
  });
});
