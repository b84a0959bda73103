// Repeated inspections of an unchanged data dir in one process (a recovery
// playbook inspects its source up to five times) reuse the first report; any
// change to the dir, even a rewrite that keeps a file's size and mtime, makes
// the next inspection read it anew, and the lock is checked every time.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { inspectDataDir } from '../../src/recovery/inspect.js';
import { dirFingerprint, InspectMemo } from '../../src/recovery/inspectMemo.js';
import { restoreDataDir } from '../../src/recovery/restore.js';
import { DataDirLockedError } from '../../src/storage/errors.js';
import { LifeboatCluster, etcdctl } from '../support/lifeboatCluster.js';

/** Past the fingerprint's settling time: files written before now can be told apart from later writes. */
const settle = () => new Promise((r) => setTimeout(r, 2100));
const MTIME = 1_700_000_000;

describe('inspecting one data dir again in the same process', () => {
  let c: LifeboatCluster;
  let dir = '';
  const put = async (from: number, to: number) => {
    for (let i = from; i < to; i++) assert.equal((await etcdctl(c.members[0].client, 'put', `key${i}`, `value${i}`)).code, 0);
  };
  before(async () => {
    c = await LifeboatCluster.start('inspectmemo', 1);
    dir = c.members[0].dataDir;
    await put(0, 20);
    await c.kill(c.members[0], 'SIGTERM');
  });
  after(async () => c?.stopAll());

  test('an unchanged dir gives the same report, a copy each time', async () => {
    await settle();
    const first = await inspectDataDir(dir);
    assert.equal(first.keyCount, 20);
    first.members.length = 0;
    first.keyCount = -1;
    const second = await inspectDataDir(dir);
    assert.equal(second.keyCount, 20);
    assert.equal(second.members.length, 1);
    assert.deepEqual(await inspectDataDir(dir), second);
  });

  test('a member that ran on the dir meanwhile is refused while it runs, and its writes are seen after', async () => {
    await settle();
    assert.equal((await inspectDataDir(dir)).keyCount, 20);
    const m = c.members[0];
    c.spawn(m, ['--initial-cluster', c.initialCluster(), '--initial-cluster-state', 'new']);
    await c.waitForLeader();
    await assert.rejects(inspectDataDir(dir), DataDirLockedError);
    await put(20, 25);
    await c.kill(m, 'SIGTERM');
    await settle();
    const r = await inspectDataDir(dir);
    assert.equal(r.keyCount, 25);
    assert.ok(r.kvRevision > 21, `revision ${r.kvRevision}`);
  });

  test('restoring from the dir writes nothing into it (SQLite would add kv.db-wal and -shm beside a cleanly stopped kv.db), so a later inspection reuses the report', async () => {
    await settle();
    const member = path.join(dir, 'member');
    const files = fs.readdirSync(member).sort();
    assert.ok(!files.includes('kv.db-wal') && !files.includes('kv.db-shm'), `a cleanly stopped member leaves neither: ${files.join(', ')}`);
    const fingerprint = dirFingerprint([member], [path.join(member, 'lock')]);
    assert.equal(typeof fingerprint, 'string');
    const target = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-restored-'));
    try {
      const r = await restoreDataDir(dir, { dataDir: path.join(target, 'r1'), name: 'r1', initialAdvertisePeerUrls: ['http://127.0.0.1:29999'] });
      assert.equal(r.keys, 25);
    } finally {
      fs.rmSync(target, { recursive: true, force: true });
    }
    assert.deepEqual(fs.readdirSync(member).sort(), files);
    assert.equal(dirFingerprint([member], [path.join(member, 'lock')]), fingerprint);
  });

  test('a marker added to the dir shows in the next report', async () => {
    await settle();
    assert.deepEqual((await inspectDataDir(dir)).markers, []);
    const marker = path.join(dir, 'member', 'removed');
    fs.writeFileSync(marker, 'removed by the test\n');
    try {
      assert.deepEqual((await inspectDataDir(dir)).markers, ['removed']);
    } finally {
      fs.rmSync(marker);
    }
    assert.deepEqual((await inspectDataDir(dir)).markers, []);
  });
});

describe('the fingerprint of a data dir', () => {
  let tmp = '';
  let elsewhere = '';
  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-fingerprint-'));
    elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-fingerprint-wal-'));
    fs.mkdirSync(path.join(tmp, 'member'));
    fs.writeFileSync(path.join(tmp, 'member', 'kv.db'), 'aaaa');
    // A whole second, so that the rewrite below can put back the very same mtime.
    fs.utimesSync(path.join(tmp, 'member', 'kv.db'), MTIME, MTIME);
    fs.writeFileSync(path.join(elsewhere, 'segment'), 'log');
    fs.symlinkSync(elsewhere, path.join(tmp, 'member', 'wal'));
  });
  after(() => {
    fs.rmSync(tmp, { recursive: true, force: true });
    fs.rmSync(elsewhere, { recursive: true, force: true });
  });

  test("is withheld while a file changed within the file system's clock step, and kept once it settled (a tenth of a second here: sub-second times)", async () => {
    await settle();
    assert.equal(typeof dirFingerprint([tmp]), 'string');
    const fresh = path.join(tmp, 'member', 'fresh');
    fs.writeFileSync(fresh, 'x');
    assert.equal(dirFingerprint([tmp]), undefined);
    await new Promise((r) => setTimeout(r, 250));
    const settled = dirFingerprint([tmp]);
    assert.equal(typeof settled, 'string');
    assert.equal(dirFingerprint([tmp]), settled);
    fs.rmSync(fresh);
  });

  test('changes when a file is rewritten with its size and mtime kept', async () => {
    await settle();
    const file = path.join(tmp, 'member', 'kv.db');
    const before = dirFingerprint([tmp]);
    assert.equal(typeof before, 'string');
    const st = fs.statSync(file, { bigint: true });
    fs.writeFileSync(file, 'bbbb');
    fs.utimesSync(file, MTIME, MTIME);
    const now = fs.statSync(file, { bigint: true });
    assert.equal(now.size, st.size);
    assert.equal(now.mtimeNs, st.mtimeNs);
    await settle();
    const after = dirFingerprint([tmp]);
    assert.equal(typeof after, 'string');
    assert.notEqual(after, before);
  });

  test('follows a symlinked directory: a change behind the link changes it', async () => {
    await settle();
    const before = dirFingerprint([tmp]);
    assert.equal(typeof before, 'string');
    fs.appendFileSync(path.join(elsewhere, 'segment'), ' and more');
    await settle();
    const after = dirFingerprint([tmp]);
    assert.equal(typeof after, 'string');
    assert.notEqual(after, before);
  });

  test('is withheld for a dir that cannot be read', () => {
    assert.equal(dirFingerprint([path.join(tmp, 'no-such-dir')]), undefined);
    assert.equal(typeof dirFingerprint([tmp]), 'string');
  });
});

describe('InspectMemo', () => {
  let tmp = '';
  before(() => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-memo-'));
    fs.writeFileSync(path.join(tmp, 'kv.db'), 'aaaa');
  });
  after(() => fs.rmSync(tmp, { recursive: true, force: true }));

  test('inspects an unchanged dir once, checks the lock at every call, and inspects again after a change', async () => {
    await settle();
    const memo = new InspectMemo<{ n: number }>();
    let inspections = 0;
    let locked = false;
    const check = () => {
      if (locked) throw new Error('locked');
    };
    const inspect = () => Promise.resolve({ n: ++inspections });
    assert.deepEqual(await memo.get([tmp], check, inspect), { n: 1 });
    assert.deepEqual(await memo.get([tmp], check, inspect), { n: 1 });
    assert.equal(inspections, 1);
    locked = true;
    await assert.rejects(memo.get([tmp], check, inspect), /locked/);
    locked = false;
    fs.appendFileSync(path.join(tmp, 'kv.db'), 'b');
    assert.deepEqual(await memo.get([tmp], check, inspect), { n: 2 });
    // Changed within the last two seconds: not kept, so inspected every time until it settles.
    assert.deepEqual(await memo.get([tmp], check, inspect), { n: 3 });
    await settle();
    assert.deepEqual(await memo.get([tmp], check, inspect), { n: 4 });
    assert.deepEqual(await memo.get([tmp], check, inspect), { n: 4 });
  });
});
