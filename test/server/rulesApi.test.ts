// SEMANTICS.md rules through the gRPC API (our client, so each refusal is
// checked for etcd's exact text and gRPC code) against real member processes.
// Three clusters, each test building on the previous one's membership.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { inspect } from 'node:util';
import { after, before, describe, test } from 'node:test';
import * as grpc from '#grpc-js';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { EtcdClientError } from '../../src/client/errors.js';
import type { Member } from '../../src/client/types.js';
import { ErrConfChangePending } from '../../src/api/errors.js';
import { ErrNotEnoughStartedMembers } from '../../src/common/memberErrors.js';
import { clusterIdFor, memberIdFor } from '../../src/storage/identity.js';
import { strictAddCheck, strictRemoveCheck } from '../../src/server/membership.js';
import { LifeboatCluster, waitFor, type MemberProc } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';

const clients: EtcdClient[] = [];

/** A client for one member; closed after the file. */
function client(...members: MemberProc[]): EtcdClient {
  const c = new EtcdClient({ endpoints: members.map((m) => m.clientUrl), dialTimeoutMs: 5000, commandTimeoutMs: 20_000 });
  clients.push(c);
  return c;
}

after(() => {
  for (const c of clients) c.close();
});

/** The call must fail with exactly this gRPC code and etcd text. */
async function refused(call: Promise<unknown>, code: grpc.status, text: string): Promise<void> {
  let err: unknown;
  try {
    await call;
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof EtcdClientError, `expected ${text}, got ${err === undefined ? 'success' : err instanceof Error ? String(err) : inspect(err)}`);
  assert.equal(err.serverMessage, text, err.message);
  assert.equal(err.grpcCode, code, `${text}: gRPC code ${err.grpcCode}, expected ${code}`);
}

/** A membership change, retried while the strict check finds the peers' connections younger than 5 s. */
function settled<T>(what: string, fn: () => Promise<T>): Promise<T> {
  return waitFor(
    what,
    async () => {
      try {
        return await fn();
      } catch (e) {
        if (e instanceof EtcdClientError && e.serverMessage === 'etcdserver: unhealthy cluster') return undefined;
        throw e;
      }
    },
    30_000,
    500,
  );
}

/** A fresh client for one call, for a member that may not be listening yet (ours keeps its first dial's outcome). */
async function withClient<T>(m: MemberProc, fn: (c: EtcdClient) => Promise<T>): Promise<T> {
  const c = new EtcdClient({ endpoints: m.clientUrl, dialTimeoutMs: 2000, commandTimeoutMs: 10_000 });
  try {
    return await fn(c);
  } finally {
    c.close();
  }
}

/** A client for the current leader: members restart (some on new client URLs) during the tests. */
async function lead(c: LifeboatCluster): Promise<EtcdClient> {
  return client(await c.waitForLeader());
}

async function members(cl: EtcdClient): Promise<Member[]> {
  return (await cl.memberList()).members;
}

async function idOf(cl: EtcdClient, peerUrl: string): Promise<bigint> {
  const m = (await members(cl)).find((x) => x.peerURLs.includes(peerUrl));
  assert.ok(m, `no member with peer URL ${peerUrl}`);
  return m.id;
}

describe('member add, the strict reconfiguration check and join checks (strict check on)', () => {
  let c: LifeboatCluster;
  let unstarted: MemberProc;
  before(async () => {
    c = await LifeboatCluster.start('rulesapi-strict', 2);
  });
  after(async () => c?.stopAll());

  test('member add with a peer URL already used: FailedPrecondition "Peer URLs already exists"; an invalid URL: InvalidArgument; nothing changes', async () => {
    // Sent to each member: the follower forwards to the leader, and the code must survive that.
    for (const m of c.members) {
      const one = client(m);
      await refused(one.memberAdd([c.members[1].peerUrl]), grpc.status.FAILED_PRECONDITION, 'etcdserver: Peer URLs already exists');
      await refused(one.memberAdd(['not a url']), grpc.status.INVALID_ARGUMENT, 'etcdserver: given member URLs are invalid');
      await refused(one.memberAdd(['http://127.0.0.1']), grpc.status.INVALID_ARGUMENT, 'etcdserver: given member URLs are invalid');
    }
    assert.equal((await members(await lead(c))).length, 2);
  });

  test('adding a voter while an earlier added member never started: "not enough started members"', async () => {
    unstarted = c.define('v3');
    // 2 started voters are a quorum of 3: this add is allowed.
    await settled('adding v3', async () => (await lead(c)).memberAdd([unstarted.peerUrl]));
    // 2 started voters are not a quorum of 4.
    await refused(
      (await lead(c)).memberAdd([c.define('v4').peerUrl]),
      grpc.status.FAILED_PRECONDITION,
      'etcdserver: re-configuration failed due to not enough started members',
    );
    const list = await members(await lead(c));
    assert.equal(list.length, 3);
    assert.equal(list.find((m) => m.peerURLs.includes(unstarted.peerUrl))?.name, '');
  });

  test('removing a started voter when the started ones left are no quorum: "not enough started members"', async () => {
    const id = await idOf(await lead(c), c.members[1].peerUrl);
    // Left: m1 (started) and v3 (never started): 1 of 2.
    await refused((await lead(c)).memberRemove(id), grpc.status.FAILED_PRECONDITION, 'etcdserver: re-configuration failed due to not enough started members');
    assert.equal((await members(await lead(c))).length, 3);
  });

  test('a join whose --initial-cluster names an added member at another peer URL: "PeerURLs: no match found for existing member", exit 1', async () => {
    // As many members as the cluster has (so not "member count is unequal"), but v3's URL is not among them.
    const imposter = c.define('x3');
    const v3 = await idOf(await lead(c), unstarted.peerUrl);
    c.spawn(imposter, ['--initial-cluster', c.initialCluster([c.members[0], c.members[1], imposter]), '--initial-cluster-state', 'existing']);
    assert.equal(await c.exitOf(imposter), 1);
    const expected = `PeerURLs: no match found for existing member (${v3.toString(16)}, ${unstarted.peerUrl})`;
    assert.ok(
      imposter.log.some((l) => l.includes('error validating peerURLs') && l.includes(expected)),
      imposter.log.join('\n'),
    );
    assert.ok(!fs.existsSync(path.join(imposter.dataDir, 'member')), 'the refused member wrote its data dir');
  });

  test('with LIFEBOAT_STRICT_RECONFIG_CHECK=false, the remove the strict check refused is allowed', async () => {
    // Both members restart with the check off through the environment (no flag given).
    for (const m of c.members.slice(0, 2)) {
      assert.equal(await c.kill(m, 'SIGTERM'), 0);
      c.spawn(m, [], { env: { LIFEBOAT_STRICT_RECONFIG_CHECK: 'false' } });
    }
    const leader = await c.waitForLeader();
    const victim = c.members.slice(0, 2).find((m) => m !== leader)!;
    const lid = await idOf(await lead(c), leader.peerUrl);
    const vid = await idOf(await lead(c), victim.peerUrl);
    // The same shape the strict check refused above.
    assert.equal(
      strictRemoveCheck(await members(await lead(c)), vid, () => true, lid),
      ErrNotEnoughStartedMembers,
    );
    const left = await client(leader).memberRemove(vid);
    assert.ok(!left.members.some((m) => m.id === vid));
    assert.equal(await c.exitOf(victim), 78);
  });
});

describe('learners, forwarding, update and restart with new URLs, a pending change, logs (strict check off)', () => {
  let c: LifeboatCluster;
  let learner: MemberProc;
  let spare: MemberProc;
  let unstarted: MemberProc;
  const oldLearnerUrls: string[] = [];
  before(async () => {
    c = await LifeboatCluster.start('rulesapi-loose', 2, ['--no-strict-reconfig-check']);
  });
  after(async () => c?.stopAll());

  test('a learner refuses MemberList, Txn and linearizable Range with Unavailable "rpc not supported for learner"', async () => {
    learner = c.define('m3');
    oldLearnerUrls.push(learner.peerUrl, learner.clientUrl);
    const initial = `${c.initialCluster()},m3=${learner.peerUrl}`;
    const add = await (await lead(c)).memberAdd([learner.peerUrl], { learner: true });
    assert.equal(add.member.isLearner, true);
    c.spawn(learner, ['--initial-cluster', initial, '--initial-cluster-state', 'existing']);
    await (await lead(c)).put('before-learner', 'yes');
    // A fresh client per attempt: ours keeps the outcome of its first dial.
    await waitFor('the learner to catch up', () =>
      withClient(learner, async (lc) => (await lc.range('before-learner', { serializable: true })).kvs[0]?.value.toString() === 'yes'),
    );
    const lc = client(learner);
    const text = 'etcdserver: rpc not supported for learner';
    await refused(lc.memberList(), grpc.status.UNAVAILABLE, text);
    await refused(lc.txn({ success: [{ put: { key: 'from-learner', value: 'x' } }] }), grpc.status.UNAVAILABLE, text);
    await refused(lc.range('before-learner'), grpc.status.UNAVAILABLE, text);
    await refused(lc.put('from-learner', 'x'), grpc.status.UNAVAILABLE, text);
  });

  test('promote sent to a follower is forwarded to the leader and succeeds', async () => {
    const voters = c.members.slice(0, 2);
    const leader = await c.waitForLeader(voters);
    const follower = voters.find((m) => m !== leader)!;
    const fc = client(follower);
    const id = await idOf(await lead(c), learner.peerUrl);
    await waitFor('the promotion through a follower', async () => {
      try {
        return await fc.memberPromote(id);
      } catch (e) {
        // Only "not caught up yet" is worth waiting for.
        if (e instanceof EtcdClientError && e.serverMessage === 'etcdserver: can only promote a learner member which is in sync with leader') return undefined;
        throw e;
      }
    });
    assert.equal((await members(await lead(c))).find((m) => m.id === id)?.isLearner, false);
  });

  test('member update, then a restart with the new peer URL: the member is back and MemberList shows the URL', async () => {
    spare = c.define('spare');
    const id = await idOf(await lead(c), learner.peerUrl);
    const newPeer = spare.peerUrl;
    await (await lead(c)).memberUpdate(id, [newPeer]);
    assert.equal(await c.kill(learner, 'SIGTERM'), 0);
    learner.peerUrl = newPeer;
    c.spawn(learner, []);
    assert.deepEqual((await members(await lead(c))).find((m) => m.id === id)?.peerURLs, [newPeer]);
    // Replication reaches it at the new URL.
    await waitFor('a write with the updated member back', async () => (await (await lead(c)).put('after-update', 'yes')) !== undefined);
    await waitFor('the updated member to catch up', () =>
      withClient(learner, async (lc) => (await lc.range('after-update', { serializable: true })).kvs[0]?.value.toString() === 'yes'),
    );
  });

  test('a restart with new --advertise-client-urls publishes them', async () => {
    const leader = await c.waitForLeader();
    const m = c.members.slice(0, 2).find((x) => x !== leader)!;
    const id = await idOf(await lead(c), m.peerUrl);
    assert.equal(await c.kill(m, 'SIGTERM'), 0);
    m.clientUrl = spare.clientUrl;
    m.client = spare.client;
    c.spawn(m, []);
    const lc = client(leader);
    await waitFor('the new client URL in MemberList', async () => {
      const entry = (await members(lc)).find((x) => x.id === id);
      return entry?.clientURLs.length === 1 && entry.clientURLs[0] === spare.clientUrl;
    });
    assert.equal(await withClient(m, async (mc) => (await mc.status()).header.memberId), id);
  });

  test('a second membership change while one is pending is refused with a clear error', async () => {
    // Two started voters and one that never started.
    await (await lead(c)).memberRemove(await idOf(await lead(c), learner.peerUrl));
    assert.equal(await c.exitOf(learner), 78);
    unstarted = c.define('v3');
    await (await lead(c)).memberAdd([unstarted.peerUrl]);
    // With its only started peer dead the leader cannot commit the first change,
    // so it stays pending; the second is sent right behind it, before the leader
    // could step down for lack of a quorum (an election timeout later).
    const leader = await c.waitForLeader();
    const follower = c.members.slice(0, 2).find((m) => m !== leader)!;
    const v3 = await idOf(await lead(c), unstarted.peerUrl);
    await c.kill(follower);
    const lc = client(leader);
    const first = lc.memberUpdate(v3, [oldLearnerUrls[0]]).then(
      () => 'applied',
      (e: Error) => e.message,
    );
    await refused(lc.memberUpdate(v3, [oldLearnerUrls[1]]), grpc.status.FAILED_PRECONDITION, ErrConfChangePending.message);
    c.spawn(follower, []);
    await first;
    await c.waitForLeader();
  });

  test('with --no-strict-reconfig-check, the add the strict check refuses is allowed', async () => {
    const leader = await c.waitForLeader();
    const lid = await idOf(await lead(c), leader.peerUrl);
    // 2 started voters of 3 are not a quorum of 4: strict would refuse.
    assert.equal(
      strictAddCheck(await members(await lead(c)), true, () => true, lid),
      ErrNotEnoughStartedMembers,
    );
    const v4 = c.define('v4');
    const added = await waitFor('the add, once the pending change is applied', async () => {
      try {
        return await (await lead(c)).memberAdd([v4.peerUrl]);
      } catch (e) {
        if (e instanceof EtcdClientError && e.serverMessage === ErrConfChangePending.message) return undefined;
        throw e;
      }
    });
    assert.deepEqual(added.member.peerURLs, [v4.peerUrl]);
    assert.equal(added.members.length, 4);
  });

  test('logs: one JSON object per line with level, time, msg, member and cluster; became leader, added member, removed member', () => {
    const seen = new Set<string>();
    for (const m of c.members) {
      const file = path.join(c.dir, `${m.name}.log`);
      if (!fs.existsSync(file)) continue;
      for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
        if (line === '') continue;
        const j = JSON.parse(line) as Record<string, unknown>;
        for (const k of ['level', 'time', 'msg']) assert.ok(typeof j[k] === 'string', `no ${k} in ${line}`);
        assert.ok(!Number.isNaN(Date.parse(j.time as string)), line);
        if (['became leader', 'added member', 'removed member'].includes(j.msg as string)) {
          assert.match(String(j.member), /^[0-9a-f]+$/, line);
          assert.match(String(j.cluster), /^[0-9a-f]+$/, line);
          seen.add(j.msg as string);
        }
      }
    }
    assert.deepEqual([...seen].sort(), ['added member', 'became leader', 'removed member']);
  });
});

describe('identity, LIFEBOAT_<FLAG> variables, SIGINT', () => {
  let c: LifeboatCluster;
  let m: MemberProc;
  let metricsUrl = '';
  before(async () => {
    const [port] = await freePorts(1, 'rulesapi-identity-metrics');
    metricsUrl = `http://127.0.0.1:${port}`;
    c = await LifeboatCluster.create('rulesapi-identity', 1);
    m = c.define('m1');
    // The test vector's peer URL is advertised; the member listens on a test port (it has no peer to reach).
    m.advertisePeerUrl = 'http://localhost:2380';
    c.spawn(m, [], { env: { LIFEBOAT_NAME: 'from-env', LIFEBOAT_LISTEN_METRICS_URLS: metricsUrl, LIFEBOAT_INITIAL_CLUSTER_TOKEN: 'etcd-cluster' } });
    await c.waitStarted(1);
  });
  after(async () => c?.stopAll());

  test('identity test vector: peer http://localhost:2380 + token etcd-cluster → member 8e9e05c52164694d, cluster cdf818194e3a8c32', async () => {
    const id = memberIdFor(['http://localhost:2380'], 'etcd-cluster');
    assert.equal(id.toString(16), '8e9e05c52164694d');
    assert.equal(clusterIdFor([id]).toString(16), 'cdf818194e3a8c32');
    const list = await client(m).memberList();
    assert.equal(list.header.clusterId.toString(16), 'cdf818194e3a8c32');
    assert.equal(list.header.memberId.toString(16), '8e9e05c52164694d');
    assert.deepEqual(
      list.members.map((x) => x.id.toString(16)),
      ['8e9e05c52164694d'],
    );
  });

  test('LIFEBOAT_<FLAG> variables apply when the flag is absent, and the flag wins', async () => {
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get(`${metricsUrl}/metrics`, (res) => {
          let b = '';
          res.on('data', (d) => (b += d));
          res.on('end', () => resolve(b));
        })
        .on('error', reject);
    });
    assert.match(body, /etcd_server_is_leader 1/);
    assert.deepEqual(
      (await client(m).memberList()).members.map((x) => x.name),
      ['m1'],
    );
  });

  test('SIGINT stops the member cleanly with exit 0', async () => {
    assert.equal(await c.kill(m, 'SIGINT'), 0);
    assert.ok(c.logHas(m, 'stopped'), m.log.join('\n'));
  });
});
