// A fenced old data dir (its lifeboat-fence.json right there) given where a member's
// data dir or a snapshot is expected: every command says it is fenced, by which
// cluster and when, and how to unfence it, instead of "neither Lifeboat's nor
// etcd's; check the path". Both runtimes' fenced layouts: etcd's (member/ moved
// aside, an empty member/ and proxy/ left) and Lifeboat's (the superseded marker).
// The same data dirs unfenced are read as before. And a path that is not there is
// bad input (exit 2) for recover plan and recover, as for every other command.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EtcdCluster } from '../support/etcdCluster.js';
import { BIN } from '../support/lifeboatCluster.js';
import { etcdctl, run } from '../support/tools.js';

const NEW_CLUSTER = 'c0ffee1234';

describe('a fenced data dir is named as fenced, with its record and the way back', () => {
  let cluster: EtcdCluster;
  let dir = '';
  let etcdDir = '';
  let lifeboatDir = '';
  let snap = '';
  const lifeboat = (...args: string[]) =>
    run(process.execPath, [BIN, ...args], { env: { ...process.env, LIFEBOAT_AUDIT_DB: path.join(dir, 'audit.db') }, timeoutMs: 60_000 });
  const restoreArgs = ['--name', 'r1', '--initial-advertise-peer-urls', 'http://127.0.0.1:1'];

  before(async () => {
    cluster = await EtcdCluster.start({ size: 1, portSeed: 'fencedDataDir.test' });
    dir = cluster.dir;
    const m = cluster.members[0];
    for (let i = 0; i < 5; i++) assert.equal((await etcdctl('--endpoints', m.clientUrl, 'put', `/registry/k${i}`, `v${i}`)).code, 0);
    snap = path.join(dir, 'backup.db');
    assert.equal((await etcdctl('--endpoints', m.clientUrl, 'snapshot', 'save', snap)).code, 0);
    await cluster.stopMember(m);
    etcdDir = m.dataDir;
    lifeboatDir = path.join(dir, 'lifeboat-old');
    const restored = await lifeboat('snapshot', 'restore', snap, '--data-dir', lifeboatDir, ...restoreArgs);
    assert.equal(restored.code, 0, restored.stderr);
  });
  after(async () => cluster?.stop());

  /** What every message about `d` must say: fenced, by whom and when, and the unfence command. */
  function assertSaysFenced(stderr: string, d: string, runtime: string): void {
    const record = JSON.parse(fs.readFileSync(path.join(d, 'lifeboat-fence.json'), 'utf8')) as { at: string };
    assert.ok(stderr.includes(`data dir ${d} is fenced (an old ${runtime} member's, superseded by cluster ${NEW_CLUSTER} on ${record.at}`), stderr);
    assert.ok(stderr.includes(`run 'lifeboat datadir unfence ${d}' first`), stderr);
    assert.doesNotMatch(stderr, /neither Lifeboat's nor etcd's|check the path|EISDIR/);
    assert.equal(stderr.trim().split('\n').length, 1, stderr);
  }

  test('etcd: inspect, recover plan, snapshot restore (as the file or as the target), pack and a playbook name the fence (exit 3)', async () => {
    // Good input first: the same data dir, not fenced, reads.
    const plain = await lifeboat('datadir', 'inspect', etcdDir, '-w', 'json');
    assert.equal(plain.code, 0, plain.stderr);
    assert.equal(JSON.parse(plain.stdout).keyCount, 5);
    assert.equal((await lifeboat('recover', 'plan', '--from-data-dir', etcdDir)).code, 0);

    const fenced = await lifeboat('datadir', 'fence', etcdDir, '--superseded-by', NEW_CLUSTER);
    assert.equal(fenced.code, 0, fenced.stderr);
    for (const args of [
      ['datadir', 'inspect', etcdDir],
      ['recover', 'plan', '--from-data-dir', etcdDir],
      ['snapshot', 'restore', etcdDir, '--data-dir', path.join(dir, 'never'), ...restoreArgs],
      ['snapshot', 'status', etcdDir],
      ['datadir', 'pack', etcdDir, '--out', path.join(dir, 'never.tar.gz')],
    ]) {
      const r = await lifeboat(...args);
      assert.equal(r.code, 3, `${args.join(' ')}: ${r.stderr}`);
      assertSaysFenced(r.stderr, etcdDir, 'etcd');
    }
    assert.ok(!fs.existsSync(path.join(dir, 'never')) && !fs.existsSync(path.join(dir, 'never.tar.gz')));

    const playbook = await lifeboat(
      'playbook',
      'run',
      'recover-from-quorum-loss',
      '--reason',
      'test',
      '--yes',
      '--set',
      `source=${etcdDir}`,
      '--set',
      `data-dir=${path.join(dir, 'never')}`,
      '--set',
      'members=n1=http://127.0.0.1:1,http://127.0.0.1:2',
    );
    assert.notEqual(playbook.code, 0);
    assertSaysFenced(playbook.stderr, etcdDir, 'etcd');

    // Restoring into it: refused as not empty, and said to be a fenced old data dir.
    const into = await lifeboat('snapshot', 'restore', snap, '--data-dir', etcdDir, ...restoreArgs);
    assert.equal(into.code, 3, into.stderr);
    assert.match(into.stderr, new RegExp(`data dir ${etcdDir} is not empty: it is fenced \\(an old etcd member's, superseded by cluster ${NEW_CLUSTER} on `));

    // The way the message points works.
    const unfenced = await lifeboat('datadir', 'unfence', etcdDir);
    assert.equal(unfenced.code, 0, unfenced.stderr);
    assert.equal((await lifeboat('datadir', 'inspect', etcdDir)).code, 0);
  });

  test('Lifeboat: recover plan warns with the fence record and the unfence command; restoring into it says fenced', async () => {
    const plain = await lifeboat('recover', 'plan', '--from-data-dir', lifeboatDir);
    assert.equal(plain.code, 0, plain.stderr);
    assert.doesNotMatch(plain.stdout, /fenced|superseded/);

    assert.equal((await lifeboat('datadir', 'fence', lifeboatDir, '--superseded-by', NEW_CLUSTER)).code, 0);
    const plan = await lifeboat('recover', 'plan', '--from-data-dir', lifeboatDir);
    assert.equal(plan.code, 0, plan.stderr);
    const warning = plan.stdout.split('\n').find((l) => l.includes('is fenced')) ?? '';
    assertSaysFenced(warning, lifeboatDir, 'lifeboat');
    const into = await lifeboat('snapshot', 'restore', snap, '--data-dir', lifeboatDir, ...restoreArgs);
    assert.equal(into.code, 3, into.stderr);
    assert.match(into.stderr, new RegExp(`is not empty: it is fenced \\(an old lifeboat member's, superseded by cluster ${NEW_CLUSTER} on `));
    assert.equal((await lifeboat('datadir', 'unfence', lifeboatDir)).code, 0);
  });

  test('a path that is not there is bad input (exit 2) for recover plan and recover, as a present one is used', async () => {
    const missing = path.join(dir, 'no-such-dir');
    for (const args of [
      ['recover', 'plan', '--from-data-dir', missing],
      ['recover', 'plan', '--from-snapshot', `${missing}.db`],
      ['recover', 'plan', '--from-inspect', `${missing}.json`],
      ['recover', '--from-data-dir', missing, '--yes', '--reason', 'test'],
    ]) {
      const r = await lifeboat(...args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.ok(r.stderr.includes(missing), r.stderr);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    }
    assert.equal((await lifeboat('recover', 'plan', '--from-snapshot', snap)).code, 0);
    // Beside a good source too: a survivor that is not there may be the best one, mistyped; the plan is not made without it.
    const beside = await lifeboat('recover', 'plan', '--from-snapshot', snap, '--from-data-dir', missing);
    assert.equal(beside.code, 2, beside.stderr);
    assert.equal(beside.stdout, '');
    assert.match(
      beside.stderr,
      new RegExp(`^Error: data dir ${missing} does not exist; check the path \\(the plan compares every source you name: fix the path or leave it out\\)\n$`),
    );
  });
});
