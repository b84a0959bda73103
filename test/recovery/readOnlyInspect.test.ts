// `datadir inspect` and `recover plan` on a Lifeboat data dir change nothing: not
// the stale lock a killed member left (it stays), not kv.db (no kv.db-shm or
// kv.db-wal appears: the KV is read from a private copy), not a modification time.
// Checked by hashing the tree before and after, and by running both on a read-only
// bind mount, where any write fails.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MEMBER_KV_OPTIONS } from '../../src/server/apply.js';
import { LifeboatCluster, etcdctl, lifeboat } from '../support/lifeboatCluster.js';
import { lifeboatOnReadOnlyMount, treeState } from './treeState.js';

describe('inspecting a Lifeboat data dir writes nothing', () => {
  let c: LifeboatCluster;
  let dir = '';
  before(async () => {
    c = await LifeboatCluster.start('readonlyinspect', 1, ['--snapshot-count', '20']);
    for (let i = 0; i < 30; i++) assert.equal((await etcdctl(c.members[0].client, 'put', `key${i}`, `value${i}`)).code, 0);
    dir = c.members[0].dataDir;
    // A member commits its applies to kv.db within MEMBER_KV_OPTIONS.commitDelayMs: let it, so kv.db holds all 30.
    await new Promise((r) => setTimeout(r, MEMBER_KV_OPTIONS.commitDelayMs + 300));
    // Killed: the lock stays behind (stale), and kv.db-wal holds what was not checkpointed.
    await c.kill(c.members[0], 'SIGKILL');
  });
  after(async () => c?.stopAll());

  test('a stale lock stays, no kv.db-shm appears, the tree hashes the same after inspect and plan', async () => {
    const lock = path.join(dir, 'member', 'lock');
    assert.ok(fs.existsSync(lock), 'the killed member left its lock');
    const shmBefore = fs.existsSync(path.join(dir, 'member', 'kv.db-shm'));
    const state = treeState(dir);
    const r = await lifeboat('datadir', 'inspect', dir, '-w', 'json');
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    assert.equal(report.runtime, 'lifeboat');
    assert.equal(report.keyCount, 30);
    assert.equal((await lifeboat('datadir', 'inspect', dir)).code, 0);
    const p = await lifeboat('recover', 'plan', '--from-data-dir', dir);
    assert.equal(p.code, 0, p.stderr);
    assert.equal((await lifeboat('recover', 'plan', '--from-data-dir', dir, '-w', 'json')).code, 0);
    assert.deepEqual(treeState(dir), state);
    assert.ok(fs.existsSync(lock), 'the stale lock is left where it was');
    assert.equal(fs.existsSync(path.join(dir, 'member', 'kv.db-shm')), shmBefore);
  });

  test('on a read-only bind mount inspect and plan work', async () => {
    const r = await lifeboatOnReadOnlyMount(dir, 'datadir', 'inspect', dir, '-w', 'json');
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).keyCount, 30);
    const p = await lifeboatOnReadOnlyMount(dir, 'recover', 'plan', '--from-data-dir', dir);
    assert.equal(p.code, 0, p.stderr);
    assert.match(p.stdout, /30 keys/);
  });

  test('--wal-dir is for etcd data dirs: refused for a Lifeboat one', async () => {
    const r = await lifeboat('datadir', 'inspect', dir, '--wal-dir', dir);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--wal-dir is for etcd data dirs/);
  });
});
