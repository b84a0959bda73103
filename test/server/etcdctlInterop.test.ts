// Real etcdctl 3.4 and the npm etcd3 client against a Lifeboat cluster: the
// output of each command is checked, not only its exit code.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Etcd3 } from 'etcd3';
import { LifeboatCluster, etcdctl, parseEtcdJson, waitFor } from '../support/lifeboatCluster.js';

describe('etcdctl 3.4 against Lifeboat', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('etcdctl', 3);
  });
  after(async () => c?.stopAll());

  test('member list -w table and -w json', async () => {
    const table = await etcdctl(c.endpoints(), 'member', 'list', '-w', 'table');
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /\|\s+ID\s+\|\s+STATUS\s+\|\s+NAME\s+\|\s+PEER ADDRS\s+\|\s+CLIENT ADDRS\s+\|\s+IS LEARNER\s+\|/);
    for (const m of c.members)
      assert.match(table.stdout, new RegExp(`\\|\\s+started\\s+\\|\\s+${m.name}\\s+\\|\\s+${m.peerUrl}\\s+\\|\\s+${m.clientUrl}\\s+\\|\\s+false\\s+\\|`));
    const json = parseEtcdJson((await etcdctl(c.endpoints(), 'member', 'list', '-w', 'json')).stdout);
    assert.equal(json.members.length, 3);
    for (const m of json.members) assert.match(BigInt(m.ID).toString(16), /^[0-9a-f]+$/);
    assert.ok(BigInt(json.header.cluster_id) > 0n);
  });

  test('put, get --prefix -w json, del', async () => {
    assert.equal((await etcdctl(c.endpoints(), 'put', 'app/a', '1')).stdout.trim(), 'OK');
    assert.equal((await etcdctl(c.endpoints(), 'put', 'app/b', '2')).stdout.trim(), 'OK');
    assert.equal((await etcdctl(c.endpoints(), 'put', 'other', '3')).stdout.trim(), 'OK');
    const simple = await etcdctl(c.endpoints(), 'get', 'app/', '--prefix');
    assert.equal(simple.stdout, 'app/a\n1\napp/b\n2\n');
    const json = parseEtcdJson((await etcdctl(c.endpoints(), 'get', 'app/', '--prefix', '-w', 'json')).stdout);
    assert.equal(json.count, 2);
    assert.deepEqual(
      json.kvs.map((kv: { key: string; version: number; create_revision: number; mod_revision: number }) => [
        Buffer.from(kv.key, 'base64').toString(),
        kv.version,
        kv.mod_revision >= kv.create_revision,
      ]),
      [
        ['app/a', 1, true],
        ['app/b', 1, true],
      ],
    );
    const del = await etcdctl(c.endpoints(), 'del', 'app/', '--prefix');
    assert.equal(del.stdout.trim(), '2');
    assert.equal((await etcdctl(c.endpoints(), 'get', 'app/', '--prefix')).stdout, '');
    const keysOnly = await etcdctl(c.endpoints(), 'get', '', '--from-key', '--keys-only');
    assert.match(keysOnly.stdout, /other/);
  });

  test('endpoint status, health and hashkv', async () => {
    const status = await etcdctl(c.endpoints(), 'endpoint', 'status', '-w', 'json');
    assert.equal(status.code, 0, status.stderr);
    const st = parseEtcdJson<
      Array<{
        Endpoint: string;
        Status: { leader: string; header: { member_id: string }; raftIndex: number; version: string };
      }>
    >(status.stdout);
    assert.equal(st.length, 3);
    assert.equal(st.filter((s) => s.Status.leader === s.Status.header.member_id).length, 1, 'exactly one leader');
    assert.ok(st.every((s) => s.Status.raftIndex > 0 && s.Status.version.startsWith('3.4')));
    const health = await etcdctl(c.endpoints(), 'endpoint', 'health');
    assert.equal(health.code, 0, health.stderr);
    for (const m of c.members) assert.match(health.stderr + health.stdout, new RegExp(`${m.client} is healthy: successfully committed proposal`));
    await etcdctl(c.endpoints(), 'put', 'hash-me', 'x');
    const hashes = await waitFor('equal hashes', async () => {
      const r = await etcdctl(c.endpoints(), 'endpoint', 'hashkv', '-w', 'json');
      const hs = parseEtcdJson<Array<{ HashKV: { hash: number } }>>(r.stdout).map((x) => x.HashKV.hash);
      return new Set(hs).size === 1 && hs.length === 3 ? hs : undefined;
    });
    assert.ok(hashes[0] > 0);
  });

  test('endpoint status, hashkv and health --cluster (client URLs with http://)', async () => {
    for (const cmd of ['status', 'hashkv', 'health']) {
      const r = await etcdctl(c.members[0].client, 'endpoint', cmd, '--cluster', '-w', 'json');
      assert.equal(r.code, 0, `${cmd}: ${r.stderr}`);
      const rows = parseEtcdJson<Array<{ Endpoint?: string; endpoint?: string }>>(r.stdout);
      assert.equal(rows.length, 3, `${cmd}: ${r.stdout}`);
      for (const m of c.members)
        assert.ok(
          rows.some((x) => (x.Endpoint ?? x.endpoint) === m.clientUrl),
          `${cmd} misses ${m.clientUrl}`,
        );
    }
  });

  test('member update changes peer URLs only (learner flag kept)', async () => {
    // An unstarted learner, so that moving it disturbs nobody.
    const spare = c.define('m4');
    const add = await waitFor('member add', async () => {
      const a = await etcdctl(c.endpoints(), 'member', 'add', 'm4', `--peer-urls=${spare.peerUrl}`, '--learner');
      return /unhealthy/.test(a.stderr) ? undefined : a;
    });
    assert.equal(add.code, 0, add.stderr);
    const id = /Member\s+([0-9a-f]+) added/.exec(add.stdout)![1];
    const moved = spare.peerUrl.replace(/:(\d+)$/, (_: string, p: string) => `:${Number(p) + 1}`);
    const r = await etcdctl(c.endpoints(), 'member', 'update', id, `--peer-urls=${moved}`);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Member\s+[0-9a-f]+ updated in cluster [0-9a-f]+/);
    // MemberList is served locally (as in etcd 3.4): give followers a moment to apply.
    const updated = await waitFor('every member to list the new URL', async () => {
      const lists = await Promise.all(c.members.map(async (m) => parseEtcdJson((await etcdctl(m.client, 'member', 'list', '-w', 'json')).stdout)));
      const seen = lists.map((l) => l.members.find((x: { ID: string }) => BigInt(x.ID).toString(16) === id));
      return seen.every((x) => x && x.peerURLs[0] === moved) ? seen[0] : undefined;
    });
    assert.equal(updated.isLearner, true);
    assert.equal((await etcdctl(c.endpoints(), 'member', 'remove', id)).code, 0);
  });

  test('snapshot save writes a file etcdctl accepts (size % 512 == 32, sha256 trailer)', async () => {
    const leader = await c.waitForLeader();
    const file = path.join(c.dir, 'snap.db');
    const r = await etcdctl(leader.client, 'snapshot', 'save', file);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /Snapshot saved at/);
    const bytes = fs.readFileSync(file);
    assert.equal(bytes.length % 512, 32);
    const body = bytes.subarray(0, bytes.length - 32);
    assert.deepEqual(crypto.createHash('sha256').update(body).digest(), bytes.subarray(bytes.length - 32));
    assert.equal(body.subarray(0, 16).toString('latin1'), 'SQLite format 3\0');
  });

  test('alarm list is empty on a healthy cluster; disarm succeeds', async () => {
    const list = await etcdctl(c.endpoints(), 'alarm', 'list');
    assert.equal(list.code, 0, list.stderr);
    assert.equal(list.stdout.trim(), '');
    assert.equal((await etcdctl(c.endpoints(), 'alarm', 'disarm')).code, 0);
  });

  test('the npm etcd3 client: put, get, delete, txn', async () => {
    const client = new Etcd3({ hosts: c.members.map((m) => m.clientUrl), dialTimeout: 5000 });
    try {
      await client.put('etcd3/k').value('v1');
      assert.equal(await client.get('etcd3/k').string(), 'v1');
      await client.put('etcd3/k2').value('v2');
      assert.deepEqual(await client.getAll().prefix('etcd3/').strings(), { 'etcd3/k': 'v1', 'etcd3/k2': 'v2' });
      const ok = await client.if('etcd3/k', 'Value', '==', 'v1').then(client.put('etcd3/k').value('v3')).else(client.put('etcd3/k').value('nope')).commit();
      assert.equal(ok.succeeded, true);
      const no = await client.if('etcd3/k', 'Value', '==', 'v1').then(client.put('etcd3/k').value('v4')).commit();
      assert.equal(no.succeeded, false);
      assert.equal(await client.get('etcd3/k').string(), 'v3');
      await client.delete().key('etcd3/k2');
      assert.equal(await client.get('etcd3/k2').string(), null);
    } finally {
      client.close();
    }
  });
});
