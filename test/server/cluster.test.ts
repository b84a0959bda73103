// A 3-member Lifeboat cluster of real processes, driven by real etcdctl.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, etcdctl, parseEtcdJson, waitFor, type MemberProc } from '../support/lifeboatCluster.js';

/** Waits (bounded) until the member itself serves key = value: a serializable read answers from its own store. */
async function servesLocally(m: MemberProc, key: string, value: string): Promise<void> {
  await waitFor(
    `${m.name} to serve ${key}=${value}`,
    async () => {
      const r = await etcdctl(m.client, 'get', key, '--consistency=s', '--print-value-only');
      return r.code === 0 && r.stdout.trim() === value;
    },
    30_000,
    200,
  );
}

describe('a 3-member cluster', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('cluster', 3, ['--snapshot-count', '25']);
  });
  after(async () => c?.stopAll());

  test('writes through any member are read back from every member', async () => {
    for (const [i, m] of c.members.entries()) {
      const r = await etcdctl(m.client, 'put', `k${i}`, `v${i}`);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.stdout.trim(), 'OK');
    }
    for (const m of c.members) {
      const r = await etcdctl(m.client, 'get', 'k', '--prefix', '-w', 'json');
      assert.equal(r.code, 0, r.stderr);
      const got = parseEtcdJson(r.stdout);
      const kvs = got.kvs.map((kv: { key: string; value: string }) => [Buffer.from(kv.key, 'base64').toString(), Buffer.from(kv.value, 'base64').toString()]);
      assert.deepEqual(kvs, [
        ['k0', 'v0'],
        ['k1', 'v1'],
        ['k2', 'v2'],
      ]);
      assert.notEqual(String(got.header.cluster_id), '0');
      assert.notEqual(String(got.header.member_id), '0');
      assert.ok(Number(got.header.raft_term) > 0);
    }
  });

  test('member list shows every member started, with names and URLs', async () => {
    const r = await etcdctl(c.endpoints(), 'member', 'list', '-w', 'json');
    assert.equal(r.code, 0, r.stderr);
    const members = parseEtcdJson(r.stdout).members as Array<{ name: string; peerURLs: string[]; clientURLs: string[] }>;
    assert.deepEqual(members.map((m) => m.name).sort(), ['m1', 'm2', 'm3']);
    for (const m of c.members) {
      const entry = members.find((x) => x.name === m.name)!;
      assert.deepEqual(entry.peerURLs, [m.peerUrl]);
      assert.deepEqual(entry.clientURLs, [m.clientUrl]);
    }
  });

  test('kill -9 the leader: a new leader is elected and writes continue', async () => {
    const old = await c.waitForLeader();
    await c.kill(old);
    const next = await c.waitForLeader(c.running());
    assert.notEqual(next.name, old.name);
    await waitFor('a write after the leader died', async () => (await etcdctl(next.client, 'put', 'after-kill', 'yes')).code === 0);
    // Enough writes to compact the log past where the dead member stopped.
    for (let i = 0; i < 60; i++) {
      const r = await etcdctl(c.endpoints(), 'put', `bulk${i}`, `${i}`);
      assert.equal(r.code, 0, r.stderr);
    }
    // It restarts and catches up by snapshot: the log it needs was compacted.
    c.spawn(old, []);
    await servesLocally(old, 'bulk59', '59');
    assert.ok(
      old.log.some((l) => l.includes('applying snapshot from leader')),
      'the restarted member caught up without a snapshot, so compaction did not happen',
    );
    const hashes = await waitFor('equal HashKV on all members', async () => {
      const r = await etcdctl(c.endpoints(c.members), 'endpoint', 'hashkv', '-w', 'json');
      if (r.code !== 0) return undefined;
      const hs = parseEtcdJson<Array<{ HashKV: { hash: number } }>>(r.stdout).map((x) => x.HashKV.hash);
      return new Set(hs).size === 1 ? hs : undefined;
    });
    assert.equal(hashes.length, 3);
  });

  // A kill at each step of installing a leader's snapshot: before it, with the
  // received file's trailer cut off, and with the file moved into place as kv.db
  // but still carrying the leader's member ID; and a second kill, in the restart's
  // own install of the file, once it is copied into place.
  for (const [steps, left] of [
    [['before'], 1],
    [['stripped'], 1],
    [['moved'], 0],
    [['before', 'restored'], 1],
  ] as const) {
    const name = steps.join('-');
    test(`a member killed at ${steps.map((s) => `"${s}"`).join(', then ')} of installing a leader's snapshot finishes the install at restart`, async () => {
      const leader = await c.waitForLeader();
      const m = c.running().find((x) => x !== leader)!;
      await c.kill(m);
      for (let i = 0; i < 60; i++) {
        const r = await etcdctl(c.endpoints(), 'put', `late-${name}-${i}`, `${i}`);
        assert.equal(r.code, 0, r.stderr);
      }
      const received = () => fs.readdirSync(path.join(m.dataDir, 'member')).filter((f) => f.startsWith('received-'));
      for (const step of steps) {
        // The fault hook kills it (SIGKILL) at that step.
        c.spawn(m, [], { env: { LIFEBOAT_FAULT: `snapshot-install:${step}` } });
        await waitFor('the member to die at the fault hook', () => m.proc?.exitCode !== null || m.proc?.signalCode !== null, 30_000, 100);
        assert.equal(m.proc?.signalCode, 'SIGKILL', `the member did not reach step ${step} of the snapshot install: ${m.log.slice(-3).join(' | ')}`);
      }
      assert.equal(received().length, left, 'the received snapshot file is kept until moved into place');
      c.spawn(m, []);
      await servesLocally(m, `late-${name}-59`, '59');
      assert.deepEqual(received(), [], 'the installed snapshot file is gone');
      // It is a working member of the cluster again: it takes a new write.
      const r = await etcdctl(c.endpoints(), 'put', `after-${name}`, 'yes');
      assert.equal(r.code, 0, r.stderr);
      await servesLocally(m, `after-${name}`, 'yes');
    });
  }

  test('SIGTERM stops a member cleanly with exit 0, and it restarts on its data', async () => {
    const m: MemberProc = c.members[2];
    assert.equal(await c.kill(m, 'SIGTERM'), 0);
    c.spawn(m, []);
    await waitFor('the member to serve again', async () => (await etcdctl(m.client, 'get', 'k0', '--print-value-only')).stdout.trim() === 'v0');
  });
});
