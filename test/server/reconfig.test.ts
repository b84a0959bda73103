// Runtime reconfiguration rules (SEMANTICS.md), each through etcdctl against
// real member processes: learners, promotion, removal, join checks.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, etcdctl, parseEtcdJson, waitFor, type MemberProc, type RunResult } from '../support/lifeboatCluster.js';

/** Retries a membership command while the strict check refuses it for young connections. */
async function reconfigure(endpoints: string[], ...args: string[]): Promise<RunResult> {
  let last: RunResult | undefined;
  await waitFor(
    `etcdctl ${args.join(' ')}`,
    async () => {
      last = await etcdctl(endpoints, ...args);
      return last.code === 0 || !/unhealthy cluster/.test(last.stderr);
    },
    30_000,
    500,
  );
  return last!;
}

function initialClusterFrom(out: string): string {
  const m = /ETCD_INITIAL_CLUSTER="([^"]+)"/.exec(out);
  assert.ok(m, `no ETCD_INITIAL_CLUSTER in: ${out}`);
  return m[1];
}

async function memberId(c: LifeboatCluster, name: string): Promise<string> {
  const r = await etcdctl(c.endpoints(), 'member', 'list');
  const line = r.stdout.split('\n').find((l) => l.split(', ')[2] === name || l.includes(`, ${name}, `));
  assert.ok(line, `member ${name} not in: ${r.stdout}`);
  return line.split(',')[0];
}

async function memberIdByPeer(c: LifeboatCluster, peerUrl: string): Promise<string> {
  const r = await etcdctl(c.endpoints(), 'member', 'list');
  const line = r.stdout.split('\n').find((l) => l.includes(peerUrl));
  assert.ok(line, `no member with ${peerUrl} in: ${r.stdout}`);
  return line.split(',')[0];
}

describe('learners and promotion', () => {
  let c: LifeboatCluster;
  let learner: MemberProc;
  let printedInitialCluster = '';
  before(async () => {
    c = await LifeboatCluster.start('learners', 3);
  });
  after(async () => c?.stopAll());

  test('member add --learner prints the phase-2 settings, and the learner is listed unstarted', async () => {
    learner = c.define('m4');
    const r = await reconfigure(c.endpoints(), 'member', 'add', 'm4', `--peer-urls=${learner.peerUrl}`, '--learner');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Member\s+[0-9a-f]+ added to cluster [0-9a-f]+/);
    assert.match(r.stdout, /ETCD_INITIAL_CLUSTER_STATE="existing"/);
    printedInitialCluster = initialClusterFrom(r.stdout);
    const list = await etcdctl(c.endpoints(), 'member', 'list');
    assert.match(list.stdout, new RegExp(`unstarted, , ${learner.peerUrl.replace(/[.]/g, '\\.')}, , true`));
  });

  test('too many learners: a second learner is refused', async () => {
    const extra = c.define('m5');
    const r = await reconfigure(c.endpoints(), 'member', 'add', 'm5', `--peer-urls=${extra.peerUrl}`, '--learner');
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /etcdserver: too many learner members in cluster/);
  });

  test('promote refuses a member that is not in sync, not a learner, or not a member', async () => {
    const id = await memberIdByPeer(c, learner.peerUrl);
    const notSync = await reconfigure(c.endpoints(), 'member', 'promote', id);
    assert.match(notSync.stderr, /etcdserver: can only promote a learner member which is in sync with leader/);
    const voter = await memberId(c, 'm1');
    const notLearner = await etcdctl(c.endpoints(), 'member', 'promote', voter);
    assert.match(notLearner.stderr, /etcdserver: can only promote a learner member\b(?! which)/);
    const missing = await etcdctl(c.endpoints(), 'member', 'promote', 'abcdef0123');
    assert.match(missing.stderr, /etcdserver: member not found/);
  });

  test('the learner starts with the printed settings, catches up, serves only what a learner may', async () => {
    c.spawn(learner, ['--initial-cluster', printedInitialCluster, '--initial-cluster-state', 'existing']);
    await etcdctl(c.endpoints(c.members.slice(0, 3)), 'put', 'seen-by-learner', 'yes');
    await waitFor('the learner to catch up', async () => {
      const r = await etcdctl(learner.client, 'get', 'seen-by-learner', '--consistency=s', '--print-value-only');
      return r.code === 0 && r.stdout.trim() === 'yes';
    });
    const put = await etcdctl(learner.client, 'put', 'x', 'y');
    assert.match(put.stderr, /etcdserver: rpc not supported for learner/);
    const lin = await etcdctl(learner.client, 'get', 'x');
    assert.match(lin.stderr, /etcdserver: rpc not supported for learner/);
    const status = await etcdctl(learner.client, 'endpoint', 'status', '-w', 'json');
    assert.equal(status.code, 0, status.stderr);
    assert.equal(parseEtcdJson(status.stdout)[0].Status.isLearner, true);
  });

  test('promote once caught up: the learner becomes a voter', async () => {
    const id = await memberIdByPeer(c, learner.peerUrl);
    const r = await waitFor('promotion to succeed', async () => {
      const p = await etcdctl(c.endpoints(c.members.slice(0, 3)), 'member', 'promote', id);
      return p.code === 0 ? p : undefined;
    });
    assert.match(r.stdout, /promoted/);
    const list = await etcdctl(c.endpoints(), 'member', 'list', '-w', 'json');
    const m4 = parseEtcdJson(list.stdout).members.find((m: { name: string }) => m.name === 'm4');
    assert.ok(m4 && !m4.isLearner);
    const put = await waitFor('the promoted member to take writes', async () => (await etcdctl(learner.client, 'put', 'from-m4', '1')).code === 0);
    assert.ok(put);
  });
});

describe('removal', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('removal', 3);
  });
  after(async () => c?.stopAll());

  test('a removed member stops with exit 78, logs why, and refuses to start again', async () => {
    const leader = await c.waitForLeader();
    const victim = c.members.find((m) => m !== leader)!;
    const id = await memberId(c, victim.name);
    const r = await reconfigure(c.endpoints(), 'member', 'remove', id);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Member\s+[0-9a-f]+ removed from cluster [0-9a-f]+/);
    assert.equal(await c.exitOf(victim), 78);
    assert.ok(c.logHas(victim, 'the member has been permanently removed from the cluster'));
    assert.ok(fs.existsSync(`${victim.dataDir}/member/removed`));
    c.spawn(victim, ['--initial-cluster', c.initialCluster()]);
    assert.equal(await c.exitOf(victim, 10_000), 78);
    const list = await etcdctl(c.endpoints(), 'member', 'list');
    assert.doesNotMatch(list.stdout, new RegExp(`, ${victim.name}, `));
  });

  test('a member removed while it was down is refused by its peers when it comes back, and stops with 78', async () => {
    const extra = c.define('m4');
    const add = await reconfigure(c.endpoints(), 'member', 'add', 'm4', `--peer-urls=${extra.peerUrl}`);
    assert.equal(add.code, 0, add.stderr);
    const initial = /ETCD_INITIAL_CLUSTER="([^"]+)"/.exec(add.stdout)![1];
    c.spawn(extra, ['--initial-cluster', initial, '--initial-cluster-state', 'existing']);
    await waitFor('m4 to serve', async () => (await etcdctl(extra.client, 'endpoint', 'status')).code === 0);
    await c.kill(extra);
    const id = await memberIdByPeer(c, extra.peerUrl);
    const r = await reconfigure(c.endpoints(c.running()), 'member', 'remove', id);
    assert.equal(r.code, 0, r.stderr);
    c.spawn(extra, []);
    assert.equal(await c.exitOf(extra), 78);
    assert.ok(c.logHas(extra, 'the member has been permanently removed from the cluster'), extra.log.join('\n'));
  });

  test('removing the leader works: a new leader follows and writes continue', async () => {
    const leader = await c.waitForLeader();
    const id = await memberId(c, leader.name);
    const r = await reconfigure(c.endpoints(), 'member', 'remove', id);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(await c.exitOf(leader), 78);
    const next = await c.waitForLeader(c.running());
    assert.notEqual(next.name, leader.name);
    await waitFor('a write after removing the leader', async () => (await etcdctl(next.client, 'put', 'after', 'leader-removal')).code === 0);
  });
});

describe('join checks (phase 2)', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('join', 1);
  });
  after(async () => c?.stopAll());

  test('a member that was never added is refused: exit 1, data dir left empty', async () => {
    const stranger = c.define('m9');
    c.spawn(stranger, ['--initial-cluster', c.initialCluster([c.members[0], stranger]), '--initial-cluster-state', 'existing']);
    assert.equal(await c.exitOf(stranger), 1);
    assert.ok(
      stranger.log.some((l) => /error validating peerURLs .*(member count is unequal|no match found)/.test(l)),
      stranger.log.join('\n'),
    );
    assert.ok(!fs.existsSync(`${stranger.dataDir}/member`), 'the refused member wrote its data dir');
  });

  test('a member whose --initial-cluster lists a different number of members is refused', async () => {
    const m = c.define('m8');
    const r = await reconfigure(c.endpoints(), 'member', 'add', 'm8', `--peer-urls=${m.peerUrl}`);
    assert.equal(r.code, 0, r.stderr);
    const extra = c.define('m7');
    c.spawn(m, ['--initial-cluster', `${c.initialCluster([c.members[0], m])},m7=${extra.peerUrl}`, '--initial-cluster-state', 'existing']);
    assert.equal(await c.exitOf(m), 1);
    assert.ok(
      m.log.some((l) => /member count is unequal/.test(l)),
      m.log.join('\n'),
    );
  });
});
