// A client's deadline (grpc-timeout) on real members: the member itself answers
// DEADLINE_EXCEEDED when it passes (the calls here set no timer of their own), a
// write already past its deadline is never proposed, and one proposed before it
// may apply, once, but leaves nothing waiting. Raw HTTP/2 calls, so that only the
// server can end them.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, etcdctl, parseEtcdJson, waitFor, type MemberProc } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';
import { rawUnary, type UnaryAnswer } from '../support/rawUnary.js';

/** One KV.Put with `grpc-timeout: timeout` and no deadline of the client's own; the status the member answers, and when. */
function rawPut(client: string, key: string, timeout: string): Promise<UnaryAnswer> {
  return rawUnary(client, 'etcdserverpb.KV', 'Put', { key: Buffer.from(key), value: Buffer.from('v') }, timeout);
}

/** How many times `key` was written (its version; 0 when absent), as a serializable read of `m`. */
async function versionOf(m: MemberProc, key: string): Promise<number> {
  const r = await etcdctl(m.client, 'get', key, '-w', 'json', '--consistency=s');
  assert.equal(r.code, 0, r.stderr);
  return Number(parseEtcdJson(r.stdout).kvs?.[0]?.version ?? 0);
}

/** A 3-member cluster whose members serve /metrics and /health on URLs of their own. */
interface Watched {
  c: LifeboatCluster;
  /** The member's etcd_server_proposals_pending. */
  pending(m: MemberProc): Promise<number>;
  /** Whether the member's /health says it has no leader. */
  leaderless(m: MemberProc): Promise<boolean>;
  /** Starts a stopped member again, with its metrics URL and `extra`. */
  restart(m: MemberProc): void;
}

/** Three founding members, with `extra` flags. */
async function startCluster(seed: string, extra: string[] = []): Promise<Watched> {
  const ports = await freePorts(3, `${seed}-metrics`);
  const c = await LifeboatCluster.create(seed, 3);
  const metrics = new Map<MemberProc, string>();
  for (let i = 0; i < 3; i++) c.members.push(c.define(`m${i + 1}`));
  const initial = c.initialCluster();
  c.members.forEach((m, i) => {
    metrics.set(m, `http://127.0.0.1:${ports[i]}`);
    c.spawn(m, ['--initial-cluster', initial, '--initial-cluster-state', 'new', '--listen-metrics-urls', metrics.get(m)!, ...extra]);
  });
  await c.waitStarted(3);
  return {
    c,
    pending: async (m) => {
      const text = await (await fetch(`${metrics.get(m)}/metrics`)).text();
      return Number(/^etcd_server_proposals_pending (\d+)$/m.exec(text)?.[1]);
    },
    leaderless: async (m) => (await fetch(`${metrics.get(m)}/health`)).status === 503,
    restart: (m) => void c.spawn(m, ['--listen-metrics-urls', metrics.get(m)!, ...extra]),
  };
}

describe('a client deadline (grpc-timeout)', () => {
  let c: LifeboatCluster;
  let w: Watched;
  const pending = (m: MemberProc) => w.pending(m);

  before(async () => {
    w = await startCluster('deadline');
    c = w.c;
  });
  after(async () => c?.stopAll());

  test('a put already past its deadline is answered DEADLINE_EXCEEDED and never written; a malformed grpc-timeout is refused; one in time is served', async () => {
    const m = c.members[0];
    assert.deepEqual(await rawPut(m.client, 'late', '0m').then(({ code, details }) => ({ code, details })), { code: 4, details: 'context deadline exceeded' });
    assert.deepEqual(await rawPut(m.client, 'bad', '123456789m').then(({ code, details }) => ({ code, details })), {
      code: 13,
      details: 'Invalid grpc-timeout value "123456789m"',
    });
    assert.equal((await rawPut(m.client, 'in-time', '10S')).code, 0);
    assert.equal(await versionOf(m, 'in-time'), 1);
    assert.equal(await versionOf(m, 'late'), 0);
    assert.equal(await versionOf(m, 'bad'), 0);
  });

  test('without a quorum: DEADLINE_EXCEEDED at the deadline, nothing left pending; once the quorum is back the expired put is not proposed, the proposed one applied at most once', async () => {
    const leader = await c.waitForLeader();
    const others = c.members.filter((m) => m !== leader);
    for (const m of others) await c.kill(m);
    // Sent at once, while the leader still leads (check-quorum steps it down after an election timeout): appended, never committed alone.
    const proposed = await rawPut(leader.client, 'proposed', '1S');
    assert.deepEqual([proposed.code, proposed.details], [4, 'context deadline exceeded']);
    assert.ok(proposed.ms >= 900 && proposed.ms < 1500, `answered after ${proposed.ms} ms`);
    await waitFor('the waiter of the proposed put to be released', async () => (await pending(leader)) === 0, 500, 50);

    // No leader now: a put waits for one, but only until its deadline.
    await waitFor('the member to have no leader', () => w.leaderless(leader), 10_000);
    const queued = await rawPut(leader.client, 'queued', '1S');
    assert.deepEqual([queued.code, queued.details], [4, 'context deadline exceeded']);
    assert.ok(queued.ms >= 900 && queued.ms < 1500, `answered after ${queued.ms} ms`);
    await waitFor('the waiter of the queued put to be released', async () => (await pending(leader)) === 0, 500, 50);
    // The same through etcdctl, whose deadline the member now keeps too.
    const start = Date.now();
    const viaEtcdctl = await etcdctl(leader.client, 'put', 'etcdctl-queued', 'v', '--command-timeout=1s');
    assert.notEqual(viaEtcdctl.code, 0);
    assert.match(viaEtcdctl.stderr, /context deadline exceeded/);
    assert.ok(Date.now() - start < 1500, `etcdctl answered after ${Date.now() - start} ms`);
    await waitFor('the waiter of the etcdctl put to be released', async () => (await pending(leader)) === 0, 500, 50);

    // The quorum comes back well within the member's own request timeout (6 s here), which alone would have proposed it.
    for (const m of others) w.restart(m);
    await c.waitForLeader();
    const r = await waitFor('a write with the quorum back', async () => {
      const put = await etcdctl(c.endpoints(), 'put', 'after', 'x');
      return put.code === 0 ? put : undefined;
    });
    assert.equal(r.code, 0);
    for (const m of c.members) {
      await waitFor(`${m.name} to apply the write`, async () => (await versionOf(m, 'after')) === 1);
      assert.equal(await versionOf(m, 'queued'), 0, `${m.name}: a put proposed after its deadline`);
      assert.equal(await versionOf(m, 'etcdctl-queued'), 0, `${m.name}: etcdctl's put proposed after its deadline`);
      assert.ok((await versionOf(m, 'proposed')) <= 1, `${m.name}: the proposed put applied more than once`);
    }
    for (const m of c.members) assert.equal(await pending(m), 0, `${m.name}: proposals left pending`);
  });
});

describe('a client deadline on the other calls that wait on Raft: lease, auth, membership, linearizable reads', () => {
  let c: LifeboatCluster;
  let w: Watched;
  /** Peer URLs for learners added and never started. */
  let spare: string[];
  const [KV, LEASE, AUTH, CLUSTER] = ['etcdserverpb.KV', 'etcdserverpb.Lease', 'etcdserverpb.Auth', 'etcdserverpb.Cluster'];
  const call = (m: MemberProc, service: string, method: string, request: object, timeout = '1S') => rawUnary(m.client, service, method, request, timeout);
  const status = (a: UnaryAnswer) => [a.code, a.details];

  before(async () => {
    // Without the strict check the leader proposes a membership change while its followers are gone.
    w = await startCluster('deadline-raft', ['--no-strict-reconfig-check']);
    c = w.c;
    spare = (await freePorts(2, 'deadline-raft-learners')).map((p) => `http://127.0.0.1:${p}`);
  });
  after(async () => c?.stopAll());

  test('with a quorum the same calls are served within their deadline (through a follower)', async () => {
    const leader = await c.waitForLeader();
    const m = c.members.find((x) => x !== leader)!;
    const ok = (a: UnaryAnswer, what: string) => assert.equal(a.code, 0, `${what}: ${a.details}`);
    const grant = await call(m, LEASE, 'LeaseGrant', { TTL: '600', ID: '1001' }, '5S');
    ok(grant, 'lease grant');
    assert.equal(grant.reply?.ID, '1001');
    const ttl = await call(m, LEASE, 'LeaseTimeToLive', { ID: '1001' }, '5S');
    ok(ttl, 'lease time-to-live');
    assert.equal(ttl.reply?.grantedTTL, '600');
    ok(await call(m, AUTH, 'RoleAdd', { name: 'in-time' }, '5S'), 'role add');
    ok(await call(m, AUTH, 'RoleGet', { role: 'in-time' }, '5S'), 'role get');
    ok(await call(m, KV, 'Range', { key: Buffer.from('k') }, '5S'), 'linearizable range');
    const add = await call(m, CLUSTER, 'MemberAdd', { peerURLs: [spare[0]], isLearner: true }, '5S');
    ok(add, 'member add');
    ok(await call(m, CLUSTER, 'MemberRemove', { ID: add.reply?.member?.ID }, '5S'), 'member remove');
    ok(await call(m, LEASE, 'LeaseRevoke', { ID: '1001' }, '5S'), 'lease revoke');
    assert.match((await etcdctl(c.endpoints(), 'role', 'list')).stdout, /^in-time$/m);
  });

  test('without a quorum: DEADLINE_EXCEEDED at the deadline, nothing left pending; once the quorum is back nothing was proposed past its deadline', async () => {
    const leader = await c.waitForLeader();
    const others = c.members.filter((m) => m !== leader);
    for (const m of others) await c.kill(m);
    const late = (answers: UnaryAnswer[], what: string) =>
      answers.forEach((a, i) => {
        assert.deepEqual(status(a), [4, 'context deadline exceeded'], `${what} #${i}`);
        assert.ok(a.ms >= 900 && a.ms < 1500, `${what} #${i} answered after ${a.ms} ms`);
      });
    // Sent at once, while the leader still leads: each is proposed (the read asks for a read index), none can commit.
    late(
      await Promise.all([
        call(leader, LEASE, 'LeaseGrant', { TTL: '600', ID: '2001' }),
        call(leader, CLUSTER, 'MemberAdd', { peerURLs: [spare[1]], isLearner: true }),
        call(leader, AUTH, 'RoleAdd', { name: 'proposed' }),
        call(leader, KV, 'Range', { key: Buffer.from('k') }),
      ]),
      'proposed',
    );
    await waitFor('the waiters of the proposed calls to be released', async () => (await w.pending(leader)) === 0, 500, 50);

    // No leader now: a proposal waits for one, a read asks for a read index again, but only until the deadline.
    await waitFor('the member to have no leader', () => w.leaderless(leader), 10_000);
    late(
      await Promise.all([
        call(leader, LEASE, 'LeaseGrant', { TTL: '600', ID: '3001' }),
        call(leader, AUTH, 'RoleAdd', { name: 'queued' }),
        call(leader, AUTH, 'RoleGet', { role: 'in-time' }),
        call(leader, KV, 'Range', { key: Buffer.from('k') }),
        call(leader, LEASE, 'LeaseTimeToLive', { ID: '2001' }),
      ]),
      'queued',
    );
    await waitFor('the waiters of the queued calls to be released', async () => (await w.pending(leader)) === 0, 500, 50);
    // A membership change without a leader is refused at once, as before: there is no quorum to make it safely.
    const add = await call(leader, CLUSTER, 'MemberAdd', { peerURLs: [spare[0]], isLearner: true });
    assert.deepEqual(status(add), [14, 'etcdserver: no leader']);

    // The quorum comes back well within the member's own request timeout (6 s here), which alone would have proposed them.
    for (const m of others) w.restart(m);
    await c.waitForLeader();
    await waitFor('a write with the quorum back', async () => (await etcdctl(c.endpoints(), 'put', 'after', 'x')).code === 0);
    const roles = await etcdctl(c.endpoints(), 'role', 'list');
    assert.equal(roles.code, 0, roles.stderr);
    assert.doesNotMatch(roles.stdout, /^queued$/m, 'a role add proposed after its deadline');
    const members = await etcdctl(c.endpoints(), 'member', 'list', '-w', 'json');
    const added = parseEtcdJson(members.stdout).members.filter((x: { peerURLs: string[] }) => x.peerURLs.includes(spare[1]));
    assert.ok(added.length <= 1, 'the proposed member add applied more than once');
    for (const m of c.members) {
      await waitFor(`${m.name} to apply the write`, async () => (await versionOf(m, 'after')) === 1);
      const leases = await etcdctl(m.client, 'lease', 'list', '-w', 'json');
      assert.equal(leases.code, 0, leases.stderr);
      const ids = (parseEtcdJson(leases.stdout).leases ?? []).map((l: { ID: number | string }) => String(l.ID));
      assert.ok(!ids.includes('3001'), `${m.name}: a lease grant proposed after its deadline`);
      assert.equal(await w.pending(m), 0, `${m.name}: proposals left pending`);
    }
  });
});
