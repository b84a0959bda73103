// `lifeboat backup full` and `backup status` against one etcd member with auth on:
// a --user without the root role is refused at start, in one line (etcd 3.4
// serves Snapshot and HashKV to root only), by `backup full` and `backup run`
// alike; root takes a full, a second of the unchanged cluster is skipped, and
// status shows it with no lag.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { EtcdCluster } from '../support/etcdCluster.js';
import { etcdctl, lifeboat } from '../support/lifeboatCluster.js';

test(
  'backup full: a user without the root role is refused (exit 3); root takes a full, an unchanged cluster is skipped; status shows it',
  { timeout: 90_000 },
  async () => {
    const cluster = await EtcdCluster.start({ size: 1, portSeed: 'backupFullAuth' });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-backupFullAuth-'));
    try {
      const ep = cluster.endpoints;
      const store = pathToFileURL(path.join(dir, 'store')).href;
      fs.mkdirSync(path.join(dir, 'store'));
      for (const args of [
        ['put', 'a', '1'],
        ['user', 'add', 'root:rootpw'],
        ['user', 'add', 'backup:backuppw'],
        ['role', 'add', 'reader'],
        ['role', 'grant-permission', 'reader', '--prefix=true', 'read', ''],
        ['user', 'grant-role', 'backup', 'reader'],
        ['auth', 'enable'],
      ]) {
        const r = await etcdctl(ep, ...args);
        assert.equal(r.code, 0, `etcdctl ${args.join(' ')}: ${r.stderr}`);
      }
      const refused = await lifeboat('backup', 'full', '--endpoints', ep, '--store', store, '--user', 'backup:backuppw');
      assert.equal(refused.code, 3, refused.stderr);
      assert.match(refused.stderr, /^Error: user backup has no root role \(roles: reader\); etcd 3\.4 serves Snapshot and HashKV to root only/);
      assert.equal(refused.stderr.trim().split('\n').length, 1);
      assert.doesNotMatch(refused.stderr, /backuppw/);
      const agent = await lifeboat('backup', 'run', '--endpoints', ep, '--store', store, '--spool-dir', path.join(dir, 'spool'), '--user', 'backup:backuppw');
      assert.equal(agent.code, 3, agent.stderr);
      assert.match(agent.stderr, /user backup has no root role/);

      const full = await lifeboat('backup', 'full', '--endpoints', ep, '--store', store, '--user', 'root:rootpw', '-w', 'json');
      assert.equal(full.code, 0, full.stderr);
      const out = JSON.parse(full.stdout) as { skipped: boolean; revision: number; keyCount: number; object: string };
      assert.equal(out.skipped, false);
      assert.equal(out.keyCount, 1);
      assert.ok(fs.existsSync(path.join(dir, 'store', ...out.object.split('/'))));
      assert.ok(fs.existsSync(path.join(dir, 'store', ...`${out.object}.manifest.json`.split('/'))));
      const again = await lifeboat('backup', 'full', '--endpoints', ep, '--store', store, '--user', 'root:rootpw');
      assert.equal(again.code, 0, again.stderr);
      assert.match(again.stdout, new RegExp(`full skipped: cluster [0-9a-f]{16} is still at revision ${out.revision}`));

      const status = await lifeboat('backup', 'status', store, '--endpoints', ep, '--user', 'root:rootpw', '-w', 'json');
      assert.equal(status.code, 0, status.stderr);
      const s = JSON.parse(status.stdout) as { clusters: Array<{ lastFull?: { revision: number }; lastStoredRevision: number; lag?: { revisions: number } }> };
      assert.equal(s.clusters.length, 1);
      assert.equal(s.clusters[0].lastFull?.revision, out.revision);
      assert.equal(s.clusters[0].lag?.revisions, 0);
    } finally {
      await cluster.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
);

test('backup run --print-unit: an env file with the settings given (never the password) and a systemd unit, nothing started', async () => {
  const r = await lifeboat(
    'backup',
    'run',
    '--endpoints',
    '10.0.0.1:2379,10.0.0.2:2379',
    '--store',
    'file:///mnt/backups/etcd',
    '--spool-dir',
    '/var/lib/lifeboat/spool',
    '--user',
    'root',
    '--password',
    'sekrit-pw',
    '--delta-interval',
    '2s',
    '--print-unit',
  );
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stdout + r.stderr, /sekrit-pw/);
  for (const line of [
    'LIFEBOAT_ENDPOINTS=10.0.0.1:2379,10.0.0.2:2379',
    'LIFEBOAT_STORE=file:///mnt/backups/etcd',
    'LIFEBOAT_SPOOL_DIR=/var/lib/lifeboat/spool',
    'LIFEBOAT_USER=root',
    'LIFEBOAT_DELTA_INTERVAL=2s',
    'EnvironmentFile=/etc/lifeboat/backup-etcd.env',
    'RestartPreventExitStatus=2 3',
  ])
    assert.ok(r.stdout.split('\n').includes(line), `${line} in:\n${r.stdout}`);
  assert.match(r.stdout, /^ExecStart=\S+node\S* \S+bin\/run\.js backup run$/m);
  assert.match(r.stdout, /systemctl enable --now lifeboat-backup-etcd\.service/);
});
