// Scripted recovery from a snapshot, end to end with real processes: a snapshot
// saved from the live cluster, the whole cluster lost, recover-from-quorum-loss
// with the snapshot as its source, and 3 voters with equal HashKV holding every
// key the snapshot had.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { BIN, LifeboatCluster, etcdctl, killByLock, lifeboat, parseEtcdJson, run, type MemberProc } from '../support/lifeboatCluster.js';

describe('recovery from a snapshot', () => {
  let c: LifeboatCluster;
  const started: string[] = [];
  before(async () => {
    c = await LifeboatCluster.start('snaprecover', 3);
  });
  after(async () => {
    for (const d of started) killByLock(d);
    await c?.stopAll();
  });

  test('snapshot saved from a live cluster, every member lost: 3 voters, equal HashKV, every key', async () => {
    const [m1] = c.members;
    const keys = Array.from({ length: 40 }, (_, i) => `snap/${String(i).padStart(3, '0')}`);
    // A few transactions of 20 puts each keep the number of etcdctl processes small.
    for (let i = 0; i < keys.length; i += 20) {
      const puts = keys
        .slice(i, i + 20)
        .map((k) => `put ${k} v-${k}`)
        .join('\n');
      const t = await run('etcdctl', ['--endpoints', m1.client, 'txn'], { env: { ETCDCTL_API: '3' }, input: `\n${puts}\n\n\n` });
      assert.equal(t.code, 0, t.stderr);
    }
    const oldCluster = BigInt(parseEtcdJson((await etcdctl(m1.client, 'get', 'x', '-w', 'json')).stdout).header.cluster_id).toString(16);
    const file = path.join(c.dir, 'backup.db');
    const saved = await lifeboat('snapshot', 'save', file, '--endpoints', m1.client);
    assert.equal(saved.code, 0, saved.stderr);
    for (const m of [...c.members]) await c.kill(m);

    const recovered: MemberProc = c.define('r1');
    recovered.dataDir = path.join(c.dir, 'r1-data');
    const fresh = [c.define('n2'), c.define('n3')];
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
        'test: from a snapshot',
        '--audit-db',
        auditDb,
        '--set',
        `source=${file}`,
        '--set',
        `data-dir=${recovered.dataDir}`,
        '--set',
        'name=r1',
        '--set',
        `peer-url=${recovered.peerUrl}`,
        '--set',
        `client-url=${recovered.clientUrl}`,
        '--set',
        `members=${fresh.map((m) => `${m.name}=${m.peerUrl},${m.clientUrl},${m.dataDir}`).join(';')}`,
        '--set',
        'stabilization=1s',
      ],
      { timeoutMs: 240_000 },
    );
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);

    const endpoints = [recovered.client, ...fresh.map((m) => m.client)];
    const list = parseEtcdJson((await etcdctl(recovered.client, 'member', 'list', '-w', 'json')).stdout);
    assert.equal(list.members.filter((m: { isLearner?: boolean }) => !m.isLearner).length, 3);
    assert.notEqual(BigInt(list.header.cluster_id).toString(16), oldCluster);
    const hashes = parseEtcdJson((await etcdctl(endpoints, 'endpoint', 'hashkv', '-w', 'json')).stdout).map((h: { HashKV: { hash: number } }) => h.HashKV.hash);
    assert.equal(hashes.length, 3);
    assert.equal(new Set(hashes).size, 1, `HashKV differs: ${hashes.join(', ')}`);
    for (const ep of endpoints) {
      const got = await etcdctl(ep, 'get', 'snap/', '--prefix', '--consistency=s', '-w', 'json');
      const kvs = (parseEtcdJson(got.stdout).kvs ?? []) as Array<{ key: string; value: string }>;
      const have = new Map(kvs.map((kv) => [Buffer.from(kv.key, 'base64').toString(), Buffer.from(kv.value, 'base64').toString()]));
      assert.deepEqual(
        keys.filter((k) => have.get(k) !== `v-${k}`),
        [],
        `${ep} misses keys from the snapshot`,
      );
    }
    const verify = await lifeboat('audit', 'verify', '--audit-db', auditDb);
    assert.equal(verify.code, 0, verify.stderr);
  });
});
