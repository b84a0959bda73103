// `recover plan` groups real etcd 3.4 sources by the cluster ID inspect reports: a
// data dir's (from its WAL) and a snapshot file's (derived from its founding
// members: etcd keeps none in its backend) are one cluster while membership never
// changed. A snapshot taken after a membership change is of unknown cluster: a
// group of its own, set aside beside the data dir, never merged or compared; two
// such snapshots alone are refused.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EtcdCluster } from '../support/etcdCluster.js';
import { etcdctl, expectOk, failsWithOneLine, lifeboat } from '../support/tools.js';
import { etcdJson } from '../etcdfile/etcdSource.js';

describe('recover plan groups etcd sources by cluster', () => {
  let cluster: EtcdCluster;
  let dataDir = '';
  let clusterId = '';
  let founding = '';
  let changed = '';
  let changedCopy = '';

  before(async () => {
    cluster = await EtcdCluster.start({ size: 1, portSeed: 'etcdClusterGroups.test' });
    const ep = cluster.endpoints;
    dataDir = path.resolve(cluster.members[0].dataDir);
    for (const k of ['a', 'b', 'c']) expectOk(await etcdctl('--endpoints', ep, 'put', k, 'v'));
    const status = etcdJson(expectOk(await etcdctl('--endpoints', ep, 'endpoint', 'status', '-w', 'json')))[0].Status;
    clusterId = BigInt(status.header.cluster_id).toString(16);
    founding = path.join(cluster.dir, 'founding.db');
    expectOk(await etcdctl('--endpoints', ep, 'snapshot', 'save', founding));
    // A learner added (never started): the membership changed, so a snapshot no longer tells its cluster.
    const [, peer] = await cluster.freePorts();
    expectOk(await etcdctl('--endpoints', ep, 'member', 'add', 'l1', '--learner', '--peer-urls', `http://127.0.0.1:${peer}`));
    expectOk(await etcdctl('--endpoints', ep, 'put', 'd', 'v'));
    changed = path.join(cluster.dir, 'changed.db');
    expectOk(await etcdctl('--endpoints', ep, 'snapshot', 'save', changed));
    changedCopy = path.join(cluster.dir, 'changed-copy.db');
    fs.copyFileSync(changed, changedCopy);
    await cluster.stopMember(cluster.members[0]);
  });
  after(async () => cluster?.stop());

  test('a data dir and a snapshot of the same cluster are one group, by the IDs inspect reports', async () => {
    const p = JSON.parse(expectOk(await lifeboat('recover', 'plan', '--from-data-dir', dataDir, '--from-snapshot', founding, '-w', 'json')));
    assert.equal(p.sources[0].report.clusterId, clusterId);
    assert.equal(p.sources[1].snapshot.clusterId, clusterId);
    assert.deepEqual(
      p.clusters.map((g: { clusterId: string; sources: number[] }) => [g.clusterId, g.sources]),
      [[clusterId, [0, 1]]],
    );
    assert.equal(p.clusterId, clusterId);
    assert.equal(p.recommended, 0);
  });

  test('a snapshot of unknown cluster is a group of its own, set aside beside the data dir and named in Lost', async () => {
    const p = JSON.parse(expectOk(await lifeboat('recover', 'plan', '--from-data-dir', dataDir, '--from-snapshot', changed, '-w', 'json')));
    assert.deepEqual(
      p.clusters.map((g: { clusterId: string | null; sources: number[] }) => [g.clusterId, g.sources]),
      [
        [clusterId, [0]],
        [null, [1]],
      ],
    );
    assert.equal(p.recommended, 0);
    assert.ok(
      p.loses.some((l: string) => l.startsWith(`the 4 keys in ${changed}, of unknown cluster: set aside`)),
      JSON.stringify(p.loses),
    );
    assert.ok(
      p.warnings.some((w: string) => w.startsWith(`${changed} is set aside: its cluster is unknown`)),
      JSON.stringify(p.warnings),
    );
    const text = expectOk(await lifeboat('recover', 'plan', '--from-data-dir', dataDir, '--from-snapshot', changed));
    assert.match(text.split('\n')[0], /^These sources may be from different clusters: /);
    assert.match(text, /^unknown cluster \(1 source, not recovered by this plan\):$/m);
  });

  test('two snapshots of unknown cluster alone are refused (exit 3); one alone is planned', async () => {
    const r = await lifeboat('recover', 'plan', '--from-snapshot', changed, '--from-snapshot', changedCopy);
    failsWithOneLine(r, 3, 'cannot tell whether', changed, changedCopy, 'plan with the one you mean alone');
    const one = JSON.parse(expectOk(await lifeboat('recover', 'plan', '--from-snapshot', changed, '-w', 'json')));
    assert.equal(one.clusterId, null);
    assert.equal(one.sources[one.recommended].path, changed);
  });
});
