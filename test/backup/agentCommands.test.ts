// `lifeboat backup full` and `backup status` against one etcd member with auth on:
// a --user without the root role is refused at start, in one line (etcd 3.4
// serves Snapshot and HashKV to root only), by `backup full` and `backup run`
// alike; root takes a full, a second of the unchanged cluster is skipped, and
// status shows it with no lag. Also the agent's full schedule, encryption and
// compression, and its --print-unit hand-off.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import * as age from 'age-encryption';
import { readCatalog } from '../../src/backup/catalog.js';
import { FileStore } from '../../src/backup/fileStore.js';
import { decodeObject } from '../../src/backup/objectCodec.js';
import { snapshotStatus } from '../../src/recovery/snapshotFormat.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { etcdctl, lifeboat, waitFor } from '../support/lifeboatCluster.js';
import { startAgent, type Agent } from './agentScenario.js';

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
  assert.match(r.stdout, /^ExecStart=\S+node\S* --max-semi-space-size=4 --heap-growing-percent=50 --v8-pool-size=1 \S+bin\/run\.js backup run$/m);
  assert.match(r.stdout, /systemctl enable --now lifeboat-backup-etcd\.service/);
});

test(
  'backup run: fulls on --full-schedule, a scheduled full of an unchanged cluster skipped; objects encrypted to --encrypt-to and brotli-compressed restore as the snapshot',
  { timeout: 90_000 },
  async () => {
    const cluster = await EtcdCluster.start({ size: 1, portSeed: 'backupSchedule' });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-backupSchedule-'));
    let agent: Agent | undefined;
    try {
      const ep = cluster.endpoints;
      const storeDir = path.join(dir, 'store');
      fs.mkdirSync(storeDir);
      const identity = await age.generateIdentity();
      const recipient = await age.identityToRecipient(identity);
      assert.equal((await etcdctl(ep, 'put', 'a', '1')).code, 0);
      // The identity where a recipient belongs: refused in one line that never shows the secret key.
      const identityFile = path.join(dir, 'key.txt');
      fs.writeFileSync(identityFile, `# created by age-keygen\n${identity}\n`, { mode: 0o600 });
      const wrong = await lifeboat(
        'backup',
        'run',
        '--endpoints',
        ep,
        '--store',
        pathToFileURL(storeDir).href,
        '--spool-dir',
        path.join(dir, 'spool'),
        '--recipients-file',
        identityFile,
      );
      assert.equal(wrong.code, 2, wrong.stderr);
      assert.match(wrong.stderr.trim(), /^[^\n]*age recipient 1 is an age identity \(a secret key\), not a recipient[^\n]*$/);
      assert.ok(!wrong.stderr.includes(identity.slice(16)) && !wrong.stdout.includes(identity.slice(16)), 'the secret key is never shown');
      agent = startAgent([
        '--endpoints',
        ep,
        '--store',
        pathToFileURL(storeDir).href,
        '--spool-dir',
        path.join(dir, 'spool'),
        '--delta-interval',
        '300ms',
        '--full-schedule',
        '*/2 * * * * *',
        '--encrypt-to',
        recipient,
        '--compression',
        'brotli',
      ]);
      const a = agent;
      const line = (re: RegExp) => waitFor(`${re}`, () => a.lines.find((l) => re.test(l)), 20_000);
      const first = Number(/at revision (\d+)/.exec(await line(/full \(first full\) at revision \d+/))![1]);
      assert.equal((await etcdctl(ep, 'put', 'b', '2')).code, 0);
      const scheduled = Number(/at revision (\d+)/.exec(await line(/full \(schedule\) at revision \d+/))![1]);
      assert.equal(scheduled, first + 1);
      await line(new RegExp(`full \\(schedule\\) skipped: the cluster is still at revision ${scheduled}, the last full's`));
      a.proc.kill('SIGTERM');
      assert.equal(await a.exit, 0);

      const c = (await readCatalog(new FileStore(pathToFileURL(storeDir).href, storeDir))).clusters[0];
      assert.deepEqual(
        c.fulls.map((f) => [f.revision, f.compression, f.recipients]),
        [
          [first, 'brotli', [recipient]],
          [scheduled, 'brotli', [recipient]],
        ],
      );
      const full = c.fulls[1];
      const plain = path.join(dir, 'full.db');
      await assert.rejects(decodeObject(path.join(storeDir, ...full.object.split('/')), plain, full), /give the age identity/);
      await decodeObject(path.join(storeDir, ...full.object.split('/')), plain, full, [identity]);
      const snap = await snapshotStatus(plain);
      assert.equal(snap.revision, scheduled);
      assert.equal(snap.etcd?.liveKeys, 2);
    } finally {
      if (agent && agent.proc.exitCode === null) agent.proc.kill('SIGKILL');
      await cluster.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
);

test(
  'backup run: a new cluster ID behind the endpoints (another cluster answers) starts a new chain, with the gap recorded under the new ID',
  { timeout: 90_000 },
  async () => {
    const a = await EtcdCluster.start({ size: 1, portSeed: 'backupNewIdA' });
    const b = await EtcdCluster.start({ size: 1, portSeed: 'backupNewIdB' });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-backupNewId-'));
    let agent: Agent | undefined;
    try {
      const epA = a.endpoints;
      const epB = b.endpoints;
      // B gets ahead of anything A will have stored, then stops until A is gone.
      for (let i = 0; i < 30; i++) assert.equal((await etcdctl(epB, 'put', `b${i}`, 'x')).code, 0);
      await b.stopMember(b.members[0]);
      for (let i = 0; i < 5; i++) assert.equal((await etcdctl(epA, 'put', `a${i}`, 'x')).code, 0);
      const storeDir = path.join(dir, 'store');
      fs.mkdirSync(storeDir);
      const store = new FileStore(pathToFileURL(storeDir).href, storeDir);
      agent = startAgent([
        '--endpoints',
        `${epA},${epB}`,
        '--store',
        pathToFileURL(storeDir).href,
        '--spool-dir',
        path.join(dir, 'spool'),
        '--delta-interval',
        '300ms',
      ]);
      const ag = agent;
      const line = (re: RegExp) => waitFor(`${re}`, () => ag.lines.find((l) => re.test(l)), 30_000);
      await line(/full \(first full\) at revision \d+/);
      assert.equal((await etcdctl(epA, 'put', 'a-last', 'x')).code, 0);
      const lastA = await waitFor('A stored to its head', async () => {
        const c = (await readCatalog(store)).clusters[0];
        return c && c.segments.length > 0 && c.segments[c.segments.length - 1].toRevision;
      });
      await a.stopMember(a.members[0]);
      b.restart(b.members[0]);
      await b.waitReady(b.members[0]);
      await line(/the cluster ID changed from [0-9a-f]{16} to [0-9a-f]{16} \(a recovery\?\): a new chain/);
      const cat = await waitFor('the new chain in the store', async () => {
        const c = await readCatalog(store);
        return c.clusters.length === 2 && c.clusters.some((x) => x.gaps.length > 0) && c;
      });
      const newer = cat.clusters.find((x) => x.gaps.length > 0)!;
      assert.equal(newer.fulls.length, 1);
      assert.deepEqual(
        newer.gaps.map((g) => [g.reason, g.fromRevision, g.toRevision]),
        [['new-cluster-id', lastA + 1, newer.fulls[0].revision - 1]],
      );
      ag.proc.kill('SIGTERM');
      assert.equal(await ag.exit, 0);
    } finally {
      if (agent && agent.proc.exitCode === null) agent.proc.kill('SIGKILL');
      await a.stop();
      await b.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
);
