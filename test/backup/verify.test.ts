// `lifeboat backup verify` and the replay rules, on stores written from real
// clusters of both runtimes (test/support/backupFixture.ts): puts, a multi-op
// Txn, a lease and its revocation, a delete of 150 keys in one revision (above
// etcd's default --max-txn-ops), a revision of one delete, a compaction. Verify
// passes through the CLI and is recorded as a drill; the replay at a revision
// holds exactly the keyspace the test read from the cluster there. A flipped
// byte, a missing segment and a wrong key each fail (exit 1) naming the object.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { FileStore } from '../../src/backup/fileStore.js';
import type { SegmentManifest } from '../../src/backup/manifest.js';
import { replayTo } from '../../src/backup/replay.js';
import type { VerifyResult } from '../../src/backup/verify.js';
import { clientFor, type EtcdClient } from '../../src/client/etcdClient.js';
import { BackupFixture } from '../support/backupFixture.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { LifeboatCluster } from '../support/lifeboatCluster.js';
import { lifeboat } from '../support/tools.js';

const conn = { dialTimeoutMs: 2000, commandTimeoutMs: 10_000 };

interface Written {
  segments: SegmentManifest[];
  /** the keyspace the cluster served at a revision */
  reads: Map<number, string[]>;
}

/** The writes every store here holds: a full, then three segments. */
async function workload(c: EtcdClient, fx: BackupFixture): Promise<Written> {
  const reads = new Map<number, string[]>();
  for (let i = 0; i < 20; i++) await c.put(`/app/a-${i}`, `value ${i}`);
  await fx.full();
  const lease = await c.leaseGrant(600);
  await c.put('/app/leased', 'mine', { lease: lease.id });
  await c.txn({ success: [{ put: { key: '/app/t1', value: 'one' } }, { put: { key: '/app/t2', value: 'two' } }, { deleteRange: { key: '/app/a-0' } }] });
  await c.put('/app/a-1', 'second version');
  const s1 = await fx.segment();
  reads.set(s1.toRevision, await BackupFixture.keyspace(c, s1.toRevision));
  await Promise.all(Array.from({ length: 150 }, (_, i) => c.put(`/bulk/${String(i).padStart(3, '0')}`, 'x'.repeat(100))));
  await c.deleteRange('/bulk/', { rangeEnd: '/bulk0' });
  await c.deleteRange('/app/a-2');
  await c.leaseRevoke(lease.id);
  const s2 = await fx.segment();
  reads.set(s2.toRevision, await BackupFixture.keyspace(c, s2.toRevision));
  await c.compact(s1.toRevision);
  await c.put('/app/z', 'last');
  await c.put('/app/a-3', 'changed');
  const s3 = await fx.segment();
  return { segments: [s1, s2, s3], reads };
}

async function verify(store: string, auditDb: string, ...args: string[]): Promise<{ code: number | null; result: VerifyResult; stderr: string }> {
  const r = await lifeboat('backup', 'verify', store, '--audit-db', auditDb, '-w', 'json', ...args);
  assert.ok(r.stdout.trim().startsWith('{'), `no JSON result (exit ${r.code}): ${r.stderr}`);
  return { code: r.code, result: JSON.parse(r.stdout) as VerifyResult, stderr: r.stderr };
}

/** The keyspace a replay to `at` holds. */
async function replayedKeyspace(storeDir: string, at: number, logDir: string): Promise<string[]> {
  const r = await replayTo({ store: new FileStore(`file://${storeDir}`, storeDir), at, logDir });
  try {
    assert.ok(r.hashChecks.length > 0 && r.hashChecks.every((h) => h.equal), JSON.stringify(r.hashChecks));
    return await BackupFixture.keyspace(r.client);
  } finally {
    await r.close();
  }
}

function copyStore(from: string, to: string): string {
  fs.cpSync(from, to, { recursive: true });
  return to;
}

describe('backup verify on an etcd cluster', () => {
  let cluster: EtcdCluster;
  let dir: string;
  let storeDir: string;
  let auditDb: string;
  let written: Written;
  let encryptedDir: string;
  let identity: string;

  before(async () => {
    cluster = await EtcdCluster.start({ size: 1, portSeed: 'backupVerify.etcd' });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-backup-verify-'));
    storeDir = path.join(dir, 'store');
    auditDb = path.join(dir, 'audit.db');
    const fx = new BackupFixture({ endpoints: cluster.endpoints.split(','), runtime: 'etcd', storeDir });
    const c = clientFor(cluster.endpoints.split(','), conn);
    const age = await import('age-encryption');
    identity = await age.generateX25519Identity();
    encryptedDir = path.join(dir, 'encrypted');
    const enc = new BackupFixture({
      endpoints: cluster.endpoints.split(','),
      runtime: 'etcd',
      storeDir: encryptedDir,
      recipients: [await age.identityToRecipient(identity)],
    });
    try {
      written = await workload(c, fx);
      await enc.full();
      await c.put('/app/encrypted', 'yes');
      await enc.segment();
    } finally {
      c.close();
      fx.close();
      enc.close();
    }
  });

  after(async () => {
    await cluster?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('verify passes, compares every hash point, and is recorded as a drill', async () => {
    const { code, result, stderr } = await verify(`file://${storeDir}`, auditDb);
    assert.equal(code, 0, stderr);
    assert.equal(result.passed, true);
    assert.equal(result.revision, written.segments[2].toRevision);
    assert.equal(result.segments.length, 3);
    assert.deepEqual(
      result.hashChecks.map((h) => h.equal),
      [true, true, true, true],
    );
    const report = await lifeboat('audit', 'report', '--drills', '--markdown', '--audit-db', auditDb);
    assert.equal(report.code, 0, report.stderr);
    assert.match(report.stdout, new RegExp(`${result.runId}\`? \\| etcd \\| 1 \\| passed`));
    const one = await lifeboat('audit', 'report', result.runId, '--markdown', '--audit-db', auditDb);
    assert.match(one.stdout, new RegExp(`replayed from the backup of cluster ${result.clusterId} in file://${storeDir} to revision ${result.revision}`));
  });

  test('the replay at a revision holds the keyspace the cluster served there', async () => {
    const at = await verify(`file://${storeDir}`, auditDb, '--at', String(written.segments[0].toRevision));
    assert.equal(at.code, 0, at.stderr);
    assert.deepEqual(
      [at.result.revision, at.result.segments, at.result.hashChecks.map((h) => h.revision)],
      [written.segments[0].toRevision, [written.segments[0].object], [written.segments[0].fromRevision - 1, written.segments[0].toRevision]],
    );
    for (const rev of [written.segments[0].toRevision, written.segments[1].toRevision]) {
      assert.deepEqual(await replayedKeyspace(storeDir, rev, path.join(dir, 'logs')), written.reads.get(rev), `revision ${rev}`);
    }
  });

  test('an encrypted store verifies with its age identity, and without it fails naming the object; the identity is never shown', async () => {
    const file = path.join(dir, 'key.txt');
    fs.writeFileSync(file, `# created: now\n${identity}\n`, { mode: 0o600 });
    const ok = await verify(`file://${encryptedDir}`, auditDb, '--identity-file', file);
    assert.equal(ok.code, 0, ok.stderr);
    const without = await verify(`file://${encryptedDir}`, auditDb);
    assert.equal(without.code, 1);
    assert.match(without.result.failures.join('; '), /full-\d{20}-\S+\.db\.gz\.age: encrypted to age1\w+; give the age identity \(--identity-file\)/);
    const audit = await lifeboat('audit', 'export', '--audit-db', auditDb);
    for (const text of [ok.stderr, JSON.stringify(ok.result), without.stderr, audit.stdout])
      assert.ok(!text.includes(identity.slice(16)), 'the identity was shown');
  });

  test('a flipped byte, a missing segment and a wrong key each fail, naming the object', async () => {
    const [, s2, s3] = written.segments;
    const flipped = copyStore(storeDir, path.join(dir, 'flipped'));
    const f = path.join(flipped, s2.object);
    const bytes = fs.readFileSync(f);
    bytes[Math.floor(bytes.length / 2)] ^= 0x01;
    fs.writeFileSync(f, bytes);
    const missing = copyStore(storeDir, path.join(dir, 'missing'));
    fs.rmSync(path.join(missing, s2.object));
    const wrong = copyStore(storeDir, path.join(dir, 'wrong'));
    await BackupFixture.rewriteSegment(wrong, s3, (records) =>
      records.map((r) =>
        r.kind === 'revision' && r.events[0].kv.key.toString() === '/app/z'
          ? { ...r, events: [{ ...r.events[0], kv: { ...r.events[0].kv, key: Buffer.from('/app/y') } }] }
          : r,
      ),
    );
    for (const [store, object, why] of [
      [flipped, s2.object, /sha256/],
      [missing, s2.object, /not in the store/],
      [wrong, s3.object, /HashKV at revision \d+ differs/],
    ] as const) {
      const { code, result } = await verify(`file://${store}`, auditDb);
      assert.equal(code, 1, `${store}: ${JSON.stringify(result)}`);
      assert.equal(result.passed, false);
      assert.match(result.failures.join('; '), why);
      assert.ok(result.failures.join('; ').includes(object), `${store}: ${result.failures.join('; ')} does not name ${object}`);
    }
  });
});

describe('backup verify on a Lifeboat cluster', () => {
  let cluster: LifeboatCluster;
  let dir: string;
  let storeDir: string;
  let written: Written;

  before(async () => {
    cluster = await LifeboatCluster.start('backupVerify.lifeboat', 1);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-backup-verify-lb-'));
    storeDir = path.join(dir, 'store');
    const fx = new BackupFixture({ endpoints: cluster.endpoints(), runtime: 'lifeboat', storeDir });
    const c = clientFor(cluster.endpoints(), conn);
    try {
      written = await workload(c, fx);
    } finally {
      c.close();
      fx.close();
    }
  });

  after(async () => {
    await cluster?.stopAll();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('verify passes, and the replay at a revision holds the keyspace the cluster served there', async () => {
    const { code, result, stderr } = await verify(`file://${storeDir}`, path.join(dir, 'audit.db'));
    assert.equal(code, 0, stderr);
    assert.equal(result.runtime, 'lifeboat');
    assert.ok(result.hashChecks.length === 4 && result.hashChecks.every((h) => h.equal), JSON.stringify(result.hashChecks));
    const rev = written.segments[1].toRevision;
    assert.deepEqual(await replayedKeyspace(storeDir, rev, path.join(dir, 'logs')), written.reads.get(rev));
  });

  test('the in-process replay stops at a DELETE that finds no key, and at a HashKV that differs, naming the object', async () => {
    const [, s2, s3] = written.segments;
    const noKey = copyStore(storeDir, path.join(dir, 'no-key'));
    await BackupFixture.rewriteSegment(noKey, s2, (records) =>
      records.map((r) =>
        r.kind === 'revision' && r.events.length === 1 && r.events[0].type === 'DELETE' && r.events[0].kv.key.toString() === '/app/a-2'
          ? { ...r, events: [{ ...r.events[0], kv: { ...r.events[0].kv, key: Buffer.from('/app/never') } }] }
          : r,
      ),
    );
    const wrong = copyStore(storeDir, path.join(dir, 'wrong'));
    await BackupFixture.rewriteSegment(wrong, s3, (records) =>
      records.map((r) =>
        r.kind === 'revision' && r.events[0].kv.key.toString() === '/app/z'
          ? { ...r, events: [{ ...r.events[0], kv: { ...r.events[0].kv, key: Buffer.from('/app/y') } }] }
          : r,
      ),
    );
    for (const [store, object, why] of [
      [noKey, s2.object, /the DELETE of "\/app\/never" found no such key/],
      [wrong, s3.object, /HashKV at revision \d+ differs/],
    ] as const) {
      const { code, result, stderr } = await verify(`file://${store}`, path.join(dir, 'audit.db'));
      assert.equal(code, 1, `${store}: ${JSON.stringify(result)}`);
      assert.match(stderr, /\(in-process\)/);
      assert.match(result.failures.join('; '), why);
      assert.ok(result.failures.join('; ').includes(object), `${store}: ${result.failures.join('; ')} does not name ${object}`);
    }
  });
});
