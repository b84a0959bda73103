// The two promotion gates of the membership steps, against real members: a
// learner is promoted only after it has stayed caught up for the stabilization
// time, and a learner whose process stops is removed after the no-progress
// timeout, reported, and the run stops there with a non-zero exit.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { AuditLog } from '../../src/audit/index.js';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { BIN, LifeboatCluster, killByLock, lifeboat, pidByLock, run, waitFor, type MemberProc } from '../support/lifeboatCluster.js';

/** A row of `audit show -w json`'s timeline: a step, an event or a mark of the run. */
interface TimelineEntry {
  entry: 'step' | 'event' | 'run';
  type?: string;
  status?: string;
  startedAt?: string;
  kind?: string;
  message?: string;
  data?: Record<string, unknown> | null;
}

async function timelineOf(auditDb: string, out: string): Promise<{ run: { outcome: string; error: string | null }; timeline: TimelineEntry[] }> {
  const runId = /\br-\d{8}-\d{6}-[0-9a-f]+\b/.exec(out)?.[0];
  assert.ok(runId, `no run ID printed:\n${out}`);
  const show = await lifeboat('audit', 'show', runId, '--audit-db', auditDb, '-w', 'json');
  assert.equal(show.code, 0, show.stderr);
  return JSON.parse(show.stdout);
}

/** fn with a fresh client of m (a client that failed to connect does not retry). */
async function withClient<T>(m: MemberProc, fn: (c: EtcdClient) => Promise<T>): Promise<T> {
  const c = new EtcdClient({ endpoints: [m.client], dialTimeoutMs: 1000, commandTimeoutMs: 2000 });
  try {
    return await fn(c);
  } finally {
    c.close();
  }
}

/** A learner added to a one-member cluster, started, and watched by the given wait-caught-up settings. */
function gatePlaybook(dir: string, stabilization: string, stall: string): string {
  const file = path.join(dir, 'gate.yaml');
  fs.writeFileSync(
    file,
    `name: gate
description: add one learner, wait for it, promote it
variables:
  endpoints:
    type: list
  members:
    type: list
    items: member
steps:
  - id: grow
    for-each: \${vars.members}
    as: m
    steps:
      - id: add
        type: add-learner
        with:
          endpoints: \${vars.endpoints}
          name: \${m.name}
          peer-url: \${m.peerUrl}
      - id: start
        type: start-member
        with:
          name: \${m.name}
          data-dir: \${m.dataDir}
          peer-url: \${m.peerUrl}
          client-url: \${m.clientUrl}
          initial-cluster: \${steps.add.initial-cluster}
          state: existing
      - id: caught-up
        type: wait-caught-up
        with:
          endpoints: \${vars.endpoints}
          learner-url: \${m.clientUrl}
          learner-id: \${steps.add.id}
          stabilization: ${stabilization}
          stall-timeout: ${stall}
      - id: promote
        type: promote
        with:
          endpoints: \${vars.endpoints}
          member: \${steps.add.id}
`,
  );
  return file;
}

describe('promotion gates', () => {
  let c: LifeboatCluster;
  const started: string[] = [];
  before(async () => {
    c = await LifeboatCluster.start('gates', 1);
  });
  after(async () => {
    for (const d of started) killByLock(d);
    await c?.stopAll();
  });

  test('a learner is promoted only after it has stayed caught up for the stabilization time', async () => {
    const [m1] = c.members;
    const n2 = c.define('n2');
    started.push(n2.dataDir);
    const auditDb = path.join(c.dir, 'audit-a.db');
    const running = run(
      process.execPath,
      [
        BIN,
        'playbook',
        'run',
        gatePlaybook(path.join(c.dir), '4s', '30s'),
        '--yes',
        '--reason',
        'test: stabilization gate',
        '--audit-db',
        auditDb,
        '--set',
        `endpoints=${m1.clientUrl}`,
        '--set',
        `members=n2=${n2.peerUrl},${n2.clientUrl},${n2.dataDir}`,
      ],
      { timeoutMs: 90_000 },
    );

    // Watch from outside: when n2 is first seen caught up, and when first seen a voter.
    let caughtAt: number | undefined;
    let promotedAt: number | undefined;
    let done = false;
    void running.then(() => (done = true));
    const deadline = Date.now() + 60_000;
    // Bounded by the deadline; ends after one more look once the run is over (its
    // last step is the promotion, which can land between two looks).
    while (promotedAt === undefined && Date.now() < deadline) {
      const wasDone = done;
      try {
        const [[leader, list], learner] = await Promise.all([
          withClient(m1, (c1) => Promise.all([c1.status(), c1.memberList()])),
          withClient(n2, (c2) => c2.status()),
        ]);
        const me = list.members.find((m) => m.peerURLs.includes(n2.peerUrl));
        if (caughtAt === undefined && learner.raftAppliedIndex >= leader.raftIndex - 2) caughtAt = Date.now();
        if (me && !me.isLearner) promotedAt = Date.now();
      } catch {
        // n2 not added or not serving yet
      }
      if (wasDone) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const r = await running;
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    assert.ok(caughtAt !== undefined && promotedAt !== undefined, 'n2 was never seen caught up and then promoted');
    // Seen from outside, less one poll round of observation delay: no promotion before the stabilization time.
    assert.ok(promotedAt - caughtAt >= 3000, `promoted ${promotedAt - caughtAt} ms after it was seen caught up`);

    // The audit log shows the gate: the catch-up time, and the promotion at least 4s later.
    const { timeline } = await timelineOf(auditDb, r.stdout + r.stderr);
    const caught = timeline.find((e) => e.entry === 'event' && e.kind === 'caught-up');
    assert.ok(caught, 'no caught-up event recorded');
    const promote = timeline.find((e) => e.entry === 'step' && e.type === 'promote');
    assert.ok(promote, 'no promote step recorded');
    assert.ok(
      Date.parse(promote.startedAt!) - Number(caught.data!.at) >= 4000,
      `promote started ${Date.parse(promote.startedAt!) - Number(caught.data!.at)} ms after catch-up`,
    );
  });

  test('a learner whose process is stopped is removed after the no-progress timeout, reported, and the run stops with a non-zero exit', async () => {
    const [m1] = c.members;
    const n3 = c.define('n3');
    started.push(n3.dataDir);
    const auditDb = path.join(c.dir, 'audit-b.db');
    // Stabilization far beyond the test: the learner cannot be promoted before it is stopped.
    const running = run(
      process.execPath,
      [
        BIN,
        'playbook',
        'run',
        gatePlaybook(path.join(c.dir), '120s', '3s'),
        '--yes',
        '--reason',
        'test: stalled learner',
        '--audit-db',
        auditDb,
        '--set',
        `endpoints=${m1.clientUrl}`,
        '--set',
        `members=n3=${n3.peerUrl},${n3.clientUrl},${n3.dataDir}`,
      ],
      { timeoutMs: 120_000 },
    );
    await waitFor('n3 to serve', () => withClient(n3, async (c3) => (await c3.status()).raftAppliedIndex > 0));
    // Stopped before the run saw it answer, the start step would wait for it instead.
    await waitFor('the run to wait for n3 to catch up', () => {
      if (!fs.existsSync(auditDb)) return false;
      const audit = AuditLog.open(auditDb, { readonly: true });
      try {
        const rec = audit.runs().at(-1);
        return rec !== undefined && audit.steps(rec.id).some((s) => s.type === 'wait-caught-up');
      } finally {
        audit.close();
      }
    });
    const pid = pidByLock(n3.dataDir);
    assert.ok(pid > 0, 'no pid in n3 lock');
    process.kill(pid, 'SIGSTOP');
    try {
      const r = await running;
      const out = r.stdout + r.stderr;
      assert.equal(r.code, 1, out);
      assert.match(out, /made no progress for 3s.*was removed from the cluster/);
      const list = await withClient(m1, (c1) => c1.memberList());
      assert.ok(!list.members.some((m) => m.peerURLs.includes(n3.peerUrl)), 'the stalled learner is still a member');
      const { run: rec, timeline } = await timelineOf(auditDb, out);
      assert.equal(rec.outcome, 'failed');
      assert.ok(
        timeline.some((e) => e.entry === 'event' && e.kind === 'warning' && /removed learner/.test(e.message ?? '')),
        'the removal was not reported in the audit',
      );
      assert.ok(!timeline.some((e) => e.entry === 'step' && e.type === 'promote'), 'the run went on past the stalled learner');
    } finally {
      killByLock(n3.dataDir); // SIGKILL ends a stopped process too
    }
  });
});
