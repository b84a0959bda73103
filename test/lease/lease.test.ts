// Leases on a 3-member Lifeboat cluster, driven by real etcdctl: grant, put --lease,
// timetolive --keys, keep-alive (also through a follower, which forwards to the
// leader), revoke, --ignore-lease; keys vanish when the lease expires or is
// revoked, and not before; a 10 s lease survives a leader kill (the new leader
// renews every lease in full) and expires afterwards.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, etcdctl, parseEtcdJson, waitFor } from '../support/lifeboatCluster.js';
import { etcdctlBackground, type Background } from '../watch/watchClients.js';

async function ok(endpoint: string, ...args: string[]): Promise<string> {
  const r = await etcdctl(endpoint, ...args);
  assert.equal(r.code, 0, `etcdctl ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

async function grant(endpoint: string, ttl: number): Promise<string> {
  const out = await ok(endpoint, 'lease', 'grant', String(ttl));
  const m = /^lease ([0-9a-f]{16}) granted with TTL\((\d+)s\)/.exec(out.trim());
  assert.ok(m, `unexpected grant output: ${out}`);
  assert.equal(Number(m[2]), ttl);
  return m[1];
}

async function exists(endpoint: string, key: string): Promise<boolean> {
  const out = await ok(endpoint, 'get', key, '--print-value-only');
  return out.trim() !== '';
}

/** Polls until the key is gone; returns when (Date.now()). */
async function goneAt(endpoint: string, key: string, timeoutMs: number): Promise<number> {
  return waitFor(`${key} to vanish`, async () => ((await exists(endpoint, key)) ? undefined : Date.now()), timeoutMs, 100);
}

describe('leases on a 3-member cluster', () => {
  let c: LifeboatCluster;
  const procs: Background[] = [];
  before(async () => {
    c = await LifeboatCluster.start('lease', 3);
  });
  after(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await c?.stopAll();
  });

  test('a lease expires after its TTL and takes its keys, not before', async () => {
    const leader = await c.waitForLeader();
    const follower = c.running().find((m) => m !== leader)!;
    const t0 = Date.now();
    const id = await grant(follower.client, 3);
    await ok(follower.client, 'put', '--lease', id, 'exp/a', '1');
    await ok(leader.client, 'put', `--lease=${id}`, 'exp/b', '2');
    const ttl = await ok(follower.client, 'lease', 'timetolive', id, '--keys');
    assert.match(ttl, new RegExp(`^lease ${id} granted with TTL\\(3s\\), remaining\\([123]s\\), attached keys\\(\\[exp/a exp/b\\]\\)`));
    const json = parseEtcdJson(await ok(leader.client, 'lease', 'timetolive', id, '--keys', '-w', 'json'));
    assert.deepEqual(
      (json.keys as string[]).map((k) => Buffer.from(k, 'base64').toString()),
      ['exp/a', 'exp/b'],
    );
    assert.equal(json['granted-ttl'], 3);
    assert.ok((await ok(leader.client, 'lease', 'list')).includes(id));
    const gone = await goneAt(follower.client, 'exp/a', 10_000);
    assert.ok(gone - t0 >= 3000, `the key vanished ${gone - t0} ms after the grant was asked for, before its 3 s TTL`);
    assert.ok(gone - t0 <= 6000, `the key vanished only ${gone - t0} ms after the grant`);
    assert.equal(await exists(leader.client, 'exp/b'), false, 'both keys go in the same revision');
    assert.match(await ok(follower.client, 'lease', 'timetolive', id), new RegExp(`lease ${id} already expired`));
    assert.ok(!(await ok(leader.client, 'lease', 'list')).includes(id));
    // A put with the lease gone is refused.
    const r = await etcdctl(leader.client, 'put', '--lease', id, 'exp/c', '3');
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /requested lease not found/);
  });

  test('keep-alive through a follower holds the keys; when it stops they go after the TTL', async () => {
    const leader = await c.waitForLeader();
    const follower = c.running().find((m) => m !== leader)!;
    const id = await grant(leader.client, 2);
    await ok(leader.client, 'put', '--lease', id, 'ka/k', 'v');
    const keepAlive = etcdctlBackground(follower.client, 'lease', 'keep-alive', id);
    procs.push(keepAlive);
    await new Promise((r) => setTimeout(r, 5000));
    assert.equal(await exists(follower.client, 'ka/k'), true, 'the key went while kept alive');
    assert.ok((keepAlive.stdout.match(/keepalived with TTL\(2\)/g) ?? []).length >= 3, keepAlive.stdout + keepAlive.stderr);
    const stopped = Date.now();
    await keepAlive.stop();
    const gone = await goneAt(leader.client, 'ka/k', 10_000);
    // The last renewal was at most one keep-alive interval (TTL/3) before the stop.
    assert.ok(gone - stopped >= 2000 - 700 - 100, `vanished ${gone - stopped} ms after the keep-alive stopped`);
    assert.ok(gone - stopped <= 5000, `vanished only ${gone - stopped} ms after the keep-alive stopped`);
  });

  test('revoke deletes the keys at once and ends keep-alive; --ignore-lease keeps the lease', async () => {
    const leader = await c.waitForLeader();
    const follower = c.running().find((m) => m !== leader)!;
    // 6 s: keep-alive asks every TTL/3, so it learns of the revocation within 2 s.
    const id = await grant(follower.client, 6);
    await ok(follower.client, 'put', '--lease', id, 'rv/a', '1');
    await ok(follower.client, 'put', '--lease', id, 'rv/b', '2');
    await ok(follower.client, 'put', 'rv/b', '3', '--ignore-lease');
    const got = await ok(leader.client, 'get', 'rv/b', '-w', 'json');
    // The lease is a JSON number above 2^53: read its digits, not a parsed number.
    assert.equal(
      BigInt(/"lease":(\d+)/.exec(got)?.[1] ?? '0')
        .toString(16)
        .padStart(16, '0'),
      id,
    );
    assert.equal(Buffer.from(parseEtcdJson(got).kvs[0].value, 'base64').toString(), '3');
    const keepAlive = etcdctlBackground(follower.client, 'lease', 'keep-alive', id);
    procs.push(keepAlive);
    await waitFor('a keep-alive answer', () => keepAlive.stdout.includes('keepalived'));
    // Both keys are there before the revoke, so their absence after it means something.
    assert.equal(await exists(follower.client, 'rv/a'), true);
    assert.equal(await exists(follower.client, 'rv/b'), true);
    assert.match(await ok(follower.client, 'lease', 'revoke', id), new RegExp(`lease ${id} revoked`));
    assert.equal(await exists(follower.client, 'rv/a'), false);
    assert.equal(await exists(leader.client, 'rv/b'), false);
    assert.match(await ok(leader.client, 'lease', 'timetolive', id), /already expired/);
    await waitFor('keep-alive to notice', () => !keepAlive.running || undefined, 10_000);
    assert.match(keepAlive.stdout, new RegExp(`lease ${id} expired or revoked`));
    const again = await etcdctl(leader.client, 'lease', 'revoke', id);
    assert.notEqual(again.code, 0);
    assert.match(again.stderr, /requested lease not found/);
  });

  test('a 10 s lease survives a leader kill and expires afterwards', async () => {
    const leader = await c.waitForLeader();
    const follower = c.running().find((m) => m !== leader)!;
    const t0 = Date.now();
    const id = await grant(follower.client, 10);
    await ok(follower.client, 'put', '--lease', id, 'lk/key', 'v');
    await new Promise((r) => setTimeout(r, 3000));
    const killedAt = Date.now();
    await c.kill(leader);
    const next = await c.waitForLeader(c.running());
    assert.notEqual(next.name, leader.name);
    const gone = await goneAt(follower.client, 'lk/key', 25_000);
    assert.ok(gone - t0 >= 10_000, `the key vanished ${gone - t0} ms after the grant, before the 10 s TTL`);
    // The new leader renewed it in full (+ an election timeout) when elected.
    assert.ok(gone - killedAt >= 10_000, `the key vanished ${gone - killedAt} ms after the leader was killed: the new leader did not renew it`);
    assert.ok(gone - killedAt <= 17_000, `the key vanished only ${gone - killedAt} ms after the leader was killed`);
    assert.ok(c.logHas(next, 'leases renewed for the new leader'));
  });
});
