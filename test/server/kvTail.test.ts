// The KV runs with synchronous=NORMAL: a power cut may lose its last
// transactions, and the member replays the Raft log from the KV's applied index
// at start (startup.ts restart). Here a real member loses them: its kv.db is
// rolled back to a copy taken earlier (the WAL discarded), and after a restart
// it must be in the same state as before, HashKV and revision included.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { KvStore } from '../../src/kv/kvStore.js';
import { kvPath } from '../../src/storage/layout.js';
import { LifeboatCluster, etcdctl, parseEtcdJson, waitFor, type MemberProc } from '../support/lifeboatCluster.js';

async function put(m: MemberProc, from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) {
    const r = await etcdctl(m.client, 'put', `tail/${i % 7}`, `v${i}`);
    assert.equal(r.code, 0, r.stderr);
  }
}

/** What a client sees: revision, HashKV at it, and every key with its revisions. */
async function observed(m: MemberProc): Promise<{ revision: number; hash: number; kvs: string[] }> {
  const hk = await etcdctl(m.client, 'endpoint', 'hashkv', '-w', 'json');
  assert.equal(hk.code, 0, hk.stderr);
  const [{ HashKV }] = parseEtcdJson<Array<{ HashKV: { hash: number; header: { revision: number } } }>>(hk.stdout);
  const get = await etcdctl(m.client, 'get', '', '--from-key', '-w', 'json');
  assert.equal(get.code, 0, get.stderr);
  const kvs = (
    (parseEtcdJson(get.stdout).kvs ?? []) as Array<{ key: string; value: string; create_revision: number; mod_revision: number; version: number }>
  ).map(
    (kv) => `${Buffer.from(kv.key, 'base64').toString()}=${Buffer.from(kv.value, 'base64').toString()}@${kv.create_revision}/${kv.mod_revision}/${kv.version}`,
  );
  return { revision: Number(HashKV.header.revision), hash: HashKV.hash, kvs };
}

describe('a member whose KV lost its last transactions', () => {
  let c: LifeboatCluster;
  before(async () => {
    c = await LifeboatCluster.start('kvtail', 1);
  });
  after(async () => c?.stopAll());

  test('replays them from the raft log at restart: same revision, same HashKV, same keys', async () => {
    const m = c.members[0];
    const restart = async () => {
      c.spawn(m, []);
      await c.waitForLeader([m]);
    };
    await put(m, 0, 15);
    assert.equal(await c.kill(m, 'SIGTERM'), 0);
    const db = kvPath(m.dataDir);
    const older = `${c.dir}/kv.db.older`;
    fs.copyFileSync(db, older);
    for (const ext of ['-wal', '-shm']) if (fs.existsSync(db + ext)) fs.copyFileSync(db + ext, older + ext);

    await restart();
    await put(m, 15, 40);
    await etcdctl(m.client, 'del', 'tail/3');
    const before = await observed(m);
    assert.equal(await c.kill(m, 'SIGTERM'), 0);

    // The unsynced tail is gone: kv.db as it was 26 writes ago, its WAL replayed into it.
    for (const ext of ['', '-wal', '-shm']) fs.rmSync(db + ext, { force: true });
    for (const ext of ['', '-wal', '-shm']) if (fs.existsSync(older + ext)) fs.copyFileSync(older + ext, db + ext);
    const rolledBack = KvStore.open(db, { readonly: true });
    const lostFrom = rolledBack.currentRevision();
    rolledBack.close();
    assert.ok(lostFrom < before.revision - 20, `the rolled-back kv.db is at revision ${lostFrom}, the member was at ${before.revision}`);

    await restart();
    const again = await waitFor('the replay to reach the old revision', async () => {
      const o = await observed(m);
      return o.revision >= before.revision ? o : undefined;
    });
    assert.deepEqual(again, before);
  });
});
