// `backup verify` on a store the real agent (`lifeboat backup run`) wrote from
// an etcd cluster under puts, multi-op Txns, a delete of 150 keys, a lease that
// expires and one revoked, and a compaction: verify passes, comparing the hash
// points the agent recorded, and a replay to the head holds, at each of 5
// revisions, the whole keyspace (values, create and mod revisions, versions,
// leases) the test read from the cluster there.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { lastStoredRevision, readCatalog } from '../../src/backup/catalog.js';
import { FileStore } from '../../src/backup/fileStore.js';
import { Replay } from '../../src/backup/replay.js';
import { chooseCluster, planReplay } from '../../src/backup/replayPlan.js';
import type { VerifyResult } from '../../src/backup/verify.js';
import { clientFor } from '../../src/client/etcdClient.js';
import { BackupFixture } from '../support/backupFixture.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { lifeboat, waitFor } from '../support/tools.js';
import { startAgent, type Agent } from './agentScenario.js';

const conn = { dialTimeoutMs: 2000, commandTimeoutMs: 10_000 };

describe('backup verify on a store the agent wrote (etcd)', () => {
  let cluster: EtcdCluster;
  let dir: string;
  let agent: Agent | undefined;
  const reads = new Map<number, string[]>();
  let head = 0;

  before(async () => {
    cluster = await EtcdCluster.start({ size: 1, portSeed: 'verifyAgent.test' });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-verify-agent-'));
    fs.mkdirSync(path.join(dir, 'store'));
    const a = startAgent([
      '--endpoints',
      cluster.endpoints,
      '--store',
      `file://${path.join(dir, 'store')}`,
      '--spool-dir',
      path.join(dir, 'spool'),
      '--delta-interval',
      '1s',
      '--hash-every',
      '40',
    ]);
    agent = a;
    const watching = () => a.lines.some((l) => /watching \S+ from revision/.test(l)) || (a.proc.exitCode !== null ? 'exited' : undefined);
    await waitFor('the agent to watch', () => Promise.resolve(watching()), { timeoutMs: 30_000 });
    assert.equal(a.proc.exitCode, null, a.lines.join('\n'));
    const c = clientFor(cluster.endpoints.split(','), conn);
    const note = async () => {
      head = (await c.status()).header.revision;
      reads.set(head, await BackupFixture.keyspace(c, head));
    };
    try {
      const lease = await c.leaseGrant(300);
      const short = await c.leaseGrant(2);
      for (let i = 0; i < 30; i++) await c.put(`/app/${i}`, `v${i}`, i % 10 === 0 ? { lease: lease.id } : {});
      await c.put('/app/short', 'expires', { lease: short.id });
      await note();
      await c.txn({ success: [{ put: { key: '/app/t', value: 'txn' } }, { deleteRange: { key: '/app/1' } }, { put: { key: '/app/2', value: 'again' } }] });
      await Promise.all(Array.from({ length: 150 }, (_, i) => c.put(`/bulk/${i}`, 'x')));
      await note();
      await c.deleteRange('/bulk/', { rangeEnd: '/bulk0' });
      await c.leaseRevoke(lease.id);
      await note();
      await waitFor('the short lease to expire', async () => (await c.range('/app/short')).kvs.length === 0, { timeoutMs: 10_000 });
      await note();
      await c.compact(head - 5);
      for (let i = 0; i < 10; i++) await c.put(`/app/late/${i}`, 'late');
      await note();
    } finally {
      c.close();
    }
    const store = new FileStore(`file://${path.join(dir, 'store')}`, path.join(dir, 'store'));
    await waitFor('the agent to store every revision', async () => lastStoredRevision((await readCatalog(store)).clusters[0]) >= head, { timeoutMs: 30_000 });
    a.proc.kill('SIGTERM');
    await Promise.race([a.exit, new Promise((r) => setTimeout(r, 15_000))]);
  });

  after(async () => {
    if (agent && agent.proc.exitCode === null && agent.proc.signalCode === null) agent.proc.kill('SIGKILL');
    await cluster?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('verify passes, and the replay holds the keyspace the cluster served at 5 revisions', async () => {
    const url = `file://${path.join(dir, 'store')}`;
    const r = await lifeboat('backup', 'verify', url, '--audit-db', path.join(dir, 'audit.db'), '-w', 'json');
    assert.equal(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout) as VerifyResult;
    assert.equal(result.revision, head);
    assert.ok(result.hashChecks.length >= 2 && result.hashChecks.every((h) => h.equal !== false), JSON.stringify(result.hashChecks));

    // One replay to the head, without compacting, keeps every revision: read each of the five there.
    const store = new FileStore(url, path.join(dir, 'store'));
    const catalog = await readCatalog(store);
    const replay = await Replay.run({ store, plan: planReplay(catalog, chooseCluster(catalog)), logDir: path.join(dir, 'logs'), checkHashPoints: false });
    try {
      assert.equal(reads.size, 5);
      for (const [rev, expected] of reads) assert.deepEqual(await BackupFixture.keyspace(replay.client, rev), expected, `revision ${rev}`);
    } finally {
      await replay.close();
    }
  });
});
