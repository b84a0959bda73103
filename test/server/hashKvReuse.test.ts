// A member answers a HashKV asked again at the same revision soon after from the
// last scan (KvStore.hashKvAsync): what it answers must be what a fresh scan
// gives. Checked against the same member restarted (a new store: nothing kept),
// across later writes (the hash at an older revision does not change; the current
// one does) and across a compaction (which changes the hash at a revision).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, etcdctl, parseEtcdJson, type MemberProc } from '../support/lifeboatCluster.js';

async function put(m: MemberProc, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) {
    const r = await etcdctl(m.client, 'put', `reuse/${i % 5}`, `v${i}`);
    assert.equal(r.code, 0, r.stderr);
  }
}

/** HashKV at `rev` (0: current), as etcdctl shows it: the hash and the header's revision. */
async function hashkv(m: MemberProc, rev = 0): Promise<{ hash: number; revision: number }> {
  const r = await etcdctl(m.client, 'endpoint', 'hashkv', `--rev=${rev}`, '-w', 'json');
  assert.equal(r.code, 0, r.stderr);
  const [{ HashKV }] = parseEtcdJson<Array<{ HashKV: { hash: number; header: { revision: number } } }>>(r.stdout);
  return { hash: HashKV.hash, revision: Number(HashKV.header.revision) };
}

describe('HashKV asked again at the same revision', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('hashkv-reuse', 1);
  });
  after(async () => c?.stopAll());

  test('answers what a fresh scan gives, after writes and after a compaction', async () => {
    const m = c.members[0];
    const restart = async () => {
      assert.equal(await c.kill(m, 'SIGTERM'), 0);
      c.spawn(m, []);
      await c.waitForLeader([m]);
    };
    await put(m, 0, 20);
    const first = await hashkv(m);
    const r = first.revision;
    assert.deepEqual(await hashkv(m, r), first, 'asked again, nothing written');

    // Later writes: the hash at r stays, the header moves on, and the current revision is hashed anew.
    await put(m, 20, 30);
    const atR = await hashkv(m, r);
    assert.equal(atR.hash, first.hash);
    assert.equal(atR.revision, r + 10, "the header carries the store's current revision");
    const current = await hashkv(m);
    assert.equal(current.revision, r + 10);
    assert.notEqual(current.hash, first.hash);

    // A compaction below r drops revisions that the hash at r covered (asked just before, so it is the last scan).
    assert.equal((await hashkv(m, r)).hash, first.hash);
    const compacted = await etcdctl(m.client, 'compact', String(r - 2));
    assert.equal(compacted.code, 0, compacted.stderr);
    const afterCompaction = await hashkv(m, r);
    const currentAfter = await hashkv(m);

    await restart();
    assert.deepEqual(await hashkv(m, r), afterCompaction, 'the hash at r after the compaction, from a fresh scan');
    assert.deepEqual(await hashkv(m), currentAfter, 'the current hash, from a fresh scan');
    assert.notEqual(afterCompaction.hash, first.hash, 'the compaction changed the hash at r (else this test proves nothing about it)');
  });
});
