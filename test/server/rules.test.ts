// Member rules through real processes: flag validation, group commit, the
// strict reconfiguration check, cluster ID mismatch, move-leader, the space quota.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import * as grpc from '#grpc-js';
import { service } from '../../src/proto/grpcClients.js';
import { LifeboatCluster, SMALL_QUOTA_BYTES, etcdctl, parseEtcdJson, lifeboat, waitFor } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';

type Unary = (req: unknown, opts: unknown, cb: (e: grpc.ServiceError | null, r?: unknown) => void) => void;
type KvClient = { Put: Unary; close(): void };
type MaintenanceClient = { MoveLeader: Unary; Status: Unary; close(): void };

function metric(text: string, name: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  assert.ok(line, `metric ${name} missing`);
  return Number(line.split(' ')[1]);
}

function scrape(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(`${url}/metrics`, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

describe('flags', () => {
  test('bad or contradictory flags: one line, exit 2, nothing written', async () => {
    const dir = fs.mkdtempSync(path.join(fs.realpathSync('/tmp'), 'lifeboat-flags-'));
    const dataDir = path.join(dir, 'd');
    const cases: string[][] = [
      ['--election-timeout', '100', '--heartbeat-interval', '100'],
      ['--initial-cluster-state', 'sideways'],
      ['--listen-peer-urls', 'not a url'],
      ['--initial-cluster', 'other=http://127.0.0.1:1'],
      ['--force-new-cluster', '--initial-cluster-state', 'existing'],
    ];
    for (const args of cases) {
      const r = await lifeboat('server', '--name', 'x', '--data-dir', dataDir, ...args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stderr.trim().split('\n').length, 1, `more than one line for ${args.join(' ')}: ${r.stderr}`);
      assert.ok(!fs.existsSync(dataDir), `data dir written for ${args.join(' ')}`);
    }
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('group commit', () => {
  let c: LifeboatCluster;
  let metricsUrl = '';
  before(async () => {
    const [port] = await freePorts(1, 'groupcommit-metrics');
    metricsUrl = `http://127.0.0.1:${port}`;
    c = await LifeboatCluster.start('groupcommit', 1, ['--listen-metrics-urls', metricsUrl]);
  });
  after(async () => c?.stopAll());

  test('100 concurrent puts take far fewer than 100 fsyncs', async () => {
    const before = await scrape(metricsUrl);
    const KV = service('etcdserverpb.KV');
    const kv = new KV(c.members[0].client, grpc.credentials.createInsecure()) as unknown as KvClient;
    await Promise.all(
      Array.from(
        { length: 100 },
        (_, i) =>
          new Promise<void>((resolve, reject) =>
            kv.Put({ key: Buffer.from(`gc${i}`), value: Buffer.alloc(256, 1) }, { deadline: Date.now() + 20_000 }, (e) => (e ? reject(e) : resolve())),
          ),
      ),
    );
    kv.close();
    const afterText = await scrape(metricsUrl);
    const fsyncs = metric(afterText, 'lifeboat_wal_fsyncs_total') - metric(before, 'lifeboat_wal_fsyncs_total');
    const entries = metric(afterText, 'lifeboat_wal_entries_persisted_total') - metric(before, 'lifeboat_wal_entries_persisted_total');
    assert.ok(entries >= 100, `only ${entries} entries persisted`);
    assert.ok(fsyncs < 50, `${fsyncs} fsyncs for 100 concurrent puts`);
    assert.match(afterText, /etcd_disk_wal_fsync_duration_seconds_bucket/);
    assert.ok(metric(afterText, 'etcd_server_is_leader') === 1);
  });
});

describe('strict reconfiguration check, move-leader and cluster identity', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('strict', 3);
  });
  after(async () => c?.stopAll());

  test('with a voter down, adding a voter is refused as unhealthy; adding a learner is allowed', async () => {
    const leader = await c.waitForLeader();
    // Let the peers be connected for the 5 s the check asks for.
    await new Promise((r) => setTimeout(r, 5500));
    const down = c.members.find((m) => m !== leader)!;
    const listed = parseEtcdJson<{ members: Array<{ ID: string; name: string }> }>((await etcdctl(c.endpoints(), 'member', 'list', '-w', 'json')).stdout);
    const downId = BigInt(listed.members.find((m) => m.name === down.name)!.ID).toString(16);
    await c.kill(down);
    const voter = await etcdctl(c.endpoints(), 'member', 'add', 'v4', '--peer-urls=http://127.0.0.1:2');
    assert.notEqual(voter.code, 0);
    assert.match(voter.stderr, /etcdserver: unhealthy cluster/);
    // The leader's log names the voter it waits for, which etcdctl's error does not.
    const refused = leader.log
      .filter((l) => l.includes('"msg":"refused a membership change"'))
      .map((l) => JSON.parse(l) as { change: string; notConnectedFor5s: string[] });
    assert.deepEqual(
      refused.map((r) => [r.change, r.notConnectedFor5s]),
      [['add', [downId]]],
    );
    const learner = await etcdctl(c.endpoints(), 'member', 'add', 'l4', '--peer-urls=http://127.0.0.1:3', '--learner');
    assert.equal(learner.code, 0, learner.stderr);
    c.spawn(down, []);
    await waitFor('the member to return', async () => (await etcdctl(down.client, 'endpoint', 'status')).code === 0);
  });

  test('move-leader: to a voter works; to a learner or a stranger is a bad transferee; on a follower it is not leader', async () => {
    const leader = await c.waitForLeader();
    type Row = { ID: string | number; name: string; isLearner?: boolean };
    // The member the previous test restarted may not be listed as started yet: wait (bounded).
    const list = await waitFor('a started voter besides the leader', async () => {
      const rows = parseEtcdJson((await etcdctl(c.endpoints(), 'member', 'list', '-w', 'json')).stdout).members as Row[];
      return rows.some((m) => m.name !== leader.name && !m.isLearner && m.name !== '') ? rows : undefined;
    });
    const hexId = (m: { ID: string | number }) => BigInt(m.ID).toString(16);
    const target = list.find((m) => m.name !== leader.name && !m.isLearner && m.name !== '')!;
    const learner = list.find((m) => m.isLearner)!;
    const r = await etcdctl(c.endpoints(), 'move-leader', hexId(target));
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Leadership transferred/);
    const now = await c.waitForLeader();
    assert.equal(now.name, target.name);
    const bad = await etcdctl(c.endpoints(), 'move-leader', hexId(learner));
    assert.match(bad.stderr, /etcdserver: bad leader transferee/);
    const stranger = await etcdctl(c.endpoints(), 'move-leader', 'abcdef');
    assert.match(stranger.stderr, /etcdserver: bad leader transferee/);
    const follower = c.running().find((m) => m.name !== now.name)!;
    const M = service('etcdserverpb.Maintenance');
    const mc = new M(follower.client, grpc.credentials.createInsecure()) as unknown as MaintenanceClient;
    const err = await new Promise<grpc.ServiceError | null>((resolve) =>
      mc.MoveLeader({ targetID: BigInt(target.ID).toString() }, { deadline: Date.now() + 5000 }, (e) => resolve(e)),
    );
    mc.close();
    assert.equal(err?.code, grpc.status.FAILED_PRECONDITION);
    assert.equal(err?.details, 'etcdserver: not leader');
  });

  test('cluster ID mismatch: a member of another cluster is refused and both sides log it', async () => {
    const other = c.define('x1');
    const target = c.running()[0];
    // A one-off two-member cluster whose second member is one of ours.
    c.spawn(other, ['--initial-cluster', `x1=${other.peerUrl},m1=${target.peerUrl}`, '--initial-cluster-token', 'another-cluster']);
    await waitFor('both sides to log the mismatch', () => c.logHas(target, 'cluster ID mismatch') && c.logHas(other, 'cluster ID mismatch'));
    const list = await etcdctl(target.client, 'member', 'list');
    assert.doesNotMatch(list.stdout, /x1/);
    await c.kill(other);
  });
});

describe('space quota', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('quota', 1, ['--quota-backend-bytes', String(SMALL_QUOTA_BYTES)]);
  });
  after(async () => c?.stopAll());

  test('past the quota a NOSPACE alarm stops writes until compaction, defrag and disarm', async () => {
    const ep = c.members[0].client;
    const value = 'v'.repeat(2000);
    let refused = '';
    for (let i = 0; i < 400 && !refused; i++) {
      const r = await etcdctl(ep, 'put', `fill${i % 20}`, value);
      if (r.code !== 0) refused = r.stderr;
    }
    assert.match(refused, /etcdserver: mvcc: database space exceeded/);
    const alarms = await etcdctl(ep, 'alarm', 'list');
    assert.match(alarms.stdout, /alarm:NOSPACE/);
    const rev = parseEtcdJson((await etcdctl(ep, 'get', 'fill0', '-w', 'json')).stdout).header.revision;
    assert.equal((await etcdctl(ep, 'compaction', String(rev))).code, 0);
    assert.equal((await etcdctl(ep, 'defrag')).code, 0);
    const disarm = await etcdctl(ep, 'alarm', 'disarm');
    assert.equal(disarm.code, 0, disarm.stderr);
    const put = await etcdctl(ep, 'put', 'after-disarm', 'ok');
    assert.equal(put.code, 0, put.stderr);
    assert.equal((await etcdctl(ep, 'alarm', 'list')).stdout.trim(), '');
  });
});
