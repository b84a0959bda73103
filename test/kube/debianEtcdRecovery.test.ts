// `lifeboat recover --debian-etcd` on three hosts of Debian's packaged etcd
// (etcd.service with its env file, run through the systemctl stand-in; real
// etcd 3.4, mutual TLS). While the others run, it refuses in one line with
// nothing stopped; then, two hosts lost (one with its disk), the scripted run
// from the survivor ends with three healthy members, every key, a new cluster
// ID, env files that differ from the originals only in ETCD_DATA_DIR,
// ETCD_INITIAL_CLUSTER and its state, the old data dirs fenced; etcd restarted
// once more by systemctl keeps every key.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { makeDebianEtcdHosts, type DebianEtcdHost, type DebianEtcdHosts } from '../support/debianEtcdHosts.js';
import { freePorts } from '../support/ports.js';
import { assertFenced, assertVoters, clusterIdVia, revisionVia, waitEveryKey } from '../support/recoveredCluster.js';
import { etcdctl, failsWithOneLine, requireEtcdTools, requireTool, ROOT, run, waitFor } from '../support/tools.js';

const BIN = path.join(ROOT, 'bin', 'run.js');
const KEYS = 20;

describe('recover --debian-etcd', () => {
  let dir = '';
  let sys: DebianEtcdHosts | undefined;
  after(async () => {
    await sys?.stopAll();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('refused while the others run, nothing stopped; two hosts lost, the survivor rebuilds the cluster through etcd.service', async () => {
    requireEtcdTools();
    requireTool('openssl');
    dir = mkdtempSync(path.join(os.tmpdir(), 'lifeboat-debian-etcd-'));
    sys = await makeDebianEtcdHosts(dir, 3, 'kube/debianEtcdRecovery', freePorts);
    const s = sys;
    const [h1, h2, h3] = s.hosts;
    const tls = ['--cacert', s.certs.ca, '--cert', s.certs.clientCert, '--key', s.certs.clientKey];
    const ctl = (endpoints: string, ...args: string[]) => etcdctl('--endpoints', endpoints, ...tls, '--dial-timeout=2s', ...args);
    const all = s.hosts.map((h) => h.clientUrl).join(',');
    const original = new Map(s.hosts.map((h) => [h.name, readFileSync(h.envFile, 'utf8')]));
    for (const h of s.hosts) assert.equal((await s.systemctl('start', h.unit)).code, 0);
    await waitFor('the cluster', async () => (await ctl(all, 'endpoint', 'health')).code === 0, { timeoutMs: 30_000 });
    for (let k = 0; k < KEYS; k++) assert.equal((await ctl(h1.clientUrl, 'put', `/k/${k}`, `v${k}`)).code, 0);
    const clusterId = () => clusterIdVia((...a) => ctl(h1.clientUrl, ...a));
    const oldClusterId = await clusterId();
    const auditDb = path.join(dir, 'audit.db');
    const members = [h2, h3].map((h) => `${h.name}=${h.peerUrl},${h.clientUrl},${h.envFile}`).join(';');
    const recover = () =>
      run(
        process.execPath,
        [
          BIN,
          'recover',
          '--debian-etcd',
          '--etcd-env-file',
          h1.envFile,
          ...tls,
          '--yes',
          '--reason',
          'test: debian etcd',
          '--audit-db',
          auditDb,
          '--set',
          `members=${members}`,
          '--set',
          'stabilization=1s',
        ],
        { env: s.env, timeoutMs: 180_000 },
      );

    // No such env file: one line (exit 2).
    const missing = await run(
      process.execPath,
      [BIN, 'recover', '--debian-etcd', '--etcd-env-file', path.join(dir, 'nowhere'), ...tls, '--yes', '--reason', 'x'],
      {
        env: s.env,
      },
    );
    failsWithOneLine(missing, 2, `${path.join(dir, 'nowhere')} does not exist`, '--etcd-env-file');
    // The others still run: refused (exit 3) before anything is stopped or written.
    failsWithOneLine(await recover(), 3, 'etcd2 answers at', 'assume-dead');
    assert.deepEqual(
      s.calls(),
      s.hosts.map((h) => `start ${h.unit}`),
    );
    assert.equal(readFileSync(h1.envFile, 'utf8'), original.get('etcd1'));

    // A snapshot, then 5 writes (the keys unchanged): older than etcd1's data dir.
    const revision = () => revisionVia((...a) => ctl(h1.clientUrl, ...a));
    const snap = path.join(dir, 'etcd1.snapshot');
    assert.equal((await ctl(h1.clientUrl, 'snapshot', 'save', snap)).code, 0);
    const snapRevision = await revision();
    for (let k = 0; k < 5; k++) assert.equal((await ctl(h1.clientUrl, 'put', '/k/0', 'v0')).code, 0);
    // Two hosts lost: their etcd stopped, etcd3's disk gone too.
    assert.equal((await s.systemctl('stop', h2.unit)).code, 0);
    assert.equal((await s.systemctl('stop', h3.unit)).code, 0);
    rmSync(h3.dataDir, { recursive: true, force: true });
    // Dry run: the change to the env file as a diff, nothing stopped or written.
    const dry = await run(
      process.execPath,
      [BIN, 'recover', '--debian-etcd', '--etcd-env-file', h1.envFile, ...tls, '--dry-run', '--set', `members=${members}`],
      {
        env: s.env,
      },
    );
    assert.equal(dry.code, 0, dry.stderr);
    for (const line of [`-ETCD_DATA_DIR="${h1.dataDir}"`, `+ETCD_DATA_DIR="${h1.dataDir}-restored"`, `+ETCD_INITIAL_CLUSTER="etcd1=${h1.peerUrl}"`])
      assert.ok(dry.stdout.includes(line), `${line}\n${dry.stdout}`);
    assert.equal(readFileSync(h1.envFile, 'utf8'), original.get('etcd1'));
    // From that snapshot, the dry run says the revision would go back, and the bump.
    const dryOlder = await run(
      process.execPath,
      [BIN, 'recover', '--debian-etcd', '--etcd-env-file', h1.envFile, ...tls, '--dry-run', '--from-snapshot', snap, '--set', `members=${members}`],
      { env: s.env },
    );
    assert.equal(dryOlder.code, 0, dryOlder.stderr);
    assert.match(
      dryOlder.stdout,
      new RegExp(`would go back from ${snapRevision + 5} to ${snapRevision}; once etcd is healthy and before any other member rejoins`),
    );
    assert.equal(s.calls().length, 5);
    const r = await recover();
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    // The survivor stopped and started by its unit, each rejoining host likewise, one at a time.
    assert.deepEqual(s.calls().slice(5), [`stop ${h1.unit}`, `start ${h1.unit}`, `stop ${h2.unit}`, `start ${h2.unit}`, `stop ${h3.unit}`, `start ${h3.unit}`]);

    // Three healthy voters over mutual TLS, every key on each, a new cluster ID.
    assert.equal((await ctl(all, 'endpoint', 'health')).code, 0);
    await assertVoters((...a) => ctl(h1.clientUrl, ...a), ['etcd1', 'etcd2', 'etcd3']);
    assert.notEqual(await clusterId(), oldClusterId);
    const onHost = (h: DebianEtcdHost) => ({ name: h.name, ctl: (...a: string[]) => ctl(h.clientUrl, ...a) });
    await waitEveryKey(s.hosts.map(onHost), '/k/', KEYS);

    // The env files: only ETCD_DATA_DIR, ETCD_INITIAL_CLUSTER and ETCD_INITIAL_CLUSTER_STATE changed, in place; the originals kept.
    const changed = (h: DebianEtcdHost) => {
      const a = original.get(h.name)!.split('\n');
      const b = readFileSync(h.envFile, 'utf8').split('\n');
      assert.equal(b.length, a.length, `${h.name}: no line added or removed`);
      assert.equal(readFileSync(`${h.envFile}.before-lifeboat`, 'utf8'), original.get(h.name));
      return a.flatMap((line, i) => (line === b[i] ? [] : [b[i]]));
    };
    // "new" was already the state: that line stays as it was; the changed ones keep their quotes.
    assert.deepEqual(changed(h1), [`ETCD_DATA_DIR="${h1.dataDir}-restored"`, `ETCD_INITIAL_CLUSTER="etcd1=${h1.peerUrl}"`]);
    // Each rejoined with the cluster as its learner add gave it: the members so far and itself.
    // (The learner add lists members in the member list's order: etcd3's may be the original line, unchanged.)
    for (const [i, h] of [h2, h3].entries()) {
      const c = changed(h);
      const cluster = 'ETCD_INITIAL_CLUSTER="';
      assert.deepEqual(
        c.filter((l) => !l.startsWith(cluster)),
        [`ETCD_DATA_DIR="${h.dataDir}-rejoined"`, 'ETCD_INITIAL_CLUSTER_STATE="existing"'],
      );
      const line = readFileSync(h.envFile, 'utf8')
        .split('\n')
        .find((l) => l.startsWith(cluster))!;
      assert.deepEqual(
        line.slice(cluster.length, -1).split(',').sort(),
        s.hosts.slice(0, i + 2).map((x) => `${x.name}=${x.peerUrl}`),
      );
    }
    // The old data dirs fenced (etcd3's disk was gone).
    await assertFenced([h1, h2]);
    assert.ok(!existsSync(path.join(h3.dataDir, 'member')));

    // systemctl restarts etcd once more: every key is still there (its data dir is the one the env file names).
    assert.equal((await s.systemctl('stop', h1.unit)).code, 0);
    assert.equal((await s.systemctl('start', h1.unit)).code, 0);
    await waitFor('etcd1 healthy again', async () => (await ctl(h1.clientUrl, 'endpoint', 'health')).code === 0, { timeoutMs: 30_000 });
    await waitEveryKey([onHost(h1)], '/k/', KEYS);
  });
});
