// `lifeboat drill` against a real 3-member etcd 3.4 cluster: the scratch cluster
// is real etcd too (restored by etcd's own tools with a fresh token, two learners
// re-added and promoted), the drill passes by HashKV, tears every etcd it started
// down, and the source's revision, membership and alarms are unchanged. From an
// older etcdctl snapshot whose revision the source has compacted away, the data
// is compared by sampled keys instead, and the drill says so.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { clientFor } from '../../src/client/etcdClient.js';
import type { DrillResult } from '../../src/drill/drill.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { freePorts } from '../support/ports.js';
import { processesUnder, stopProcessesUnder } from '../support/processes.js';
import { etcdctl, run, ROOT } from '../support/tools.js';
import { sourceView } from './sourceView.js';

const conn = { dialTimeoutMs: 2000, commandTimeoutMs: 10_000 };

function drill(...args: string[]) {
  return run(process.execPath, [path.join(ROOT, 'bin', 'run.js'), 'drill', ...args], { timeoutMs: 120_000 });
}

describe('lifeboat drill on an etcd cluster', () => {
  let cluster: EtcdCluster;
  let dir: string;
  let auditDb: string;
  let endpoints: string[];
  let portsFrom: number;

  before(async () => {
    cluster = await EtcdCluster.start({ size: 3, portSeed: 'drillEtcd.test' });
    endpoints = cluster.endpoints.split(',');
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-drill-etcd-test-'));
    auditDb = path.join(dir, 'audit.db');
    portsFrom = Math.min(...(await freePorts(6, 'drillEtcd.test')));
    const c = clientFor(endpoints, conn);
    try {
      for (let i = 0; i < 200; i += 50) await Promise.all(Array.from({ length: 50 }, (_, j) => c.put(`/svc/${i + j}`, `v${i + j}`)));
    } finally {
      c.close();
    }
  });

  after(async () => {
    await stopProcessesUnder(dir);
    await cluster.stop();
    if (!process.env.LIFEBOAT_KEEP_TEST_DIRS) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a drill of 3 etcd members passes by HashKV, tears its etcd down, and leaves the source unchanged', async () => {
    const before = await sourceView(endpoints);
    const scratch = path.join(dir, 'scratch');
    const r = await drill(
      '--endpoints',
      endpoints.join(','),
      '--members',
      '3',
      '--stabilization',
      '500ms',
      '--ports-from',
      String(portsFrom),
      '--scratch-dir',
      scratch,
      '--audit-db',
      auditDb,
      '-w',
      'json',
    );
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const result = JSON.parse(r.stdout) as DrillResult;
    assert.equal(result.runtime, 'etcd');
    assert.equal(result.snapshot?.format, 'etcd');
    assert.equal(result.data?.method, 'hashkv');
    assert.equal(result.data?.keys.scratch, 200);
    assert.deepEqual(
      result.phases.map((p) => p.phase),
      ['snapshot', 'restore', 'first-write', 'member:drill-2', 'member:drill-3'],
    );
    assert.ok(result.checks.every((c) => c.ok));
    assert.notEqual(result.scratch.clusterId, result.source.before?.clusterId, 'a new cluster, not the source');
    assert.deepEqual(processesUnder(scratch), []);
    assert.equal(fs.existsSync(scratch), false);
    assert.deepEqual(await sourceView(endpoints), before);
  });

  test('from a snapshot whose revision the source compacted away, the keys are compared by sample, and it says so', async () => {
    const old = path.join(dir, 'old.db');
    const saved = await etcdctl('--endpoints', endpoints[0], 'snapshot', 'save', old);
    assert.equal(saved.code, 0, saved.stderr);
    const c = clientFor(endpoints, conn);
    let now: number;
    try {
      for (let i = 0; i < 5; i++) await c.put(`/svc/${i}`, `changed ${i}`);
      now = (await c.status()).header.revision;
      await c.compact(now);
    } finally {
      c.close();
    }
    const before = await sourceView(endpoints);
    const r = await drill(
      '--endpoints',
      endpoints.join(','),
      '--from-snapshot',
      old,
      '--scratch-dir',
      path.join(dir, 'scratch-old'),
      '--audit-db',
      auditDb,
      '-w',
      'json',
    );
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const result = JSON.parse(r.stdout) as DrillResult;
    assert.equal(result.data?.method, 'sampled-keys');
    assert.match(result.data?.why ?? '', /required revision has been compacted/);
    assert.equal(result.data?.keys.against, 'snapshot');
    assert.deepEqual(result.data?.sample, { compared: 195, skipped: 5 });
    assert.deepEqual(await sourceView(endpoints), before);
  });

  test('a truncated etcdctl snapshot fails its snapshot check as truncated (not as a raw member/snap/db), before anything is restored', async () => {
    const whole = path.join(dir, 'whole.db');
    const saved = await etcdctl('--endpoints', endpoints[0], 'snapshot', 'save', whole);
    assert.equal(saved.code, 0, saved.stderr);
    const cut = path.join(dir, 'cut.db');
    fs.writeFileSync(cut, fs.readFileSync(whole).subarray(0, fs.statSync(whole).size - 5000));
    const r = await drill('--endpoints', endpoints.join(','), '--from-snapshot', cut, '--audit-db', auditDb, '-w', 'json');
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    const result = JSON.parse(r.stdout) as DrillResult;
    assert.deepEqual(
      result.checks.map((c) => [c.name, c.ok]),
      [['snapshot', false]],
    );
    assert.match(result.checks[0].detail, new RegExp(`snapshot ${cut} is truncated \\(meta page \\d says \\d+ pages .*\\); copy it again or save a new one`));
    assert.doesNotMatch(result.checks[0].detail, /skip-hash-check|raw member/);
    assert.deepEqual(result.phases, []);
  });
});
