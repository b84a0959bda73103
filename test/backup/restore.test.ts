// `lifeboat backup restore --at POINT --output FILE` on stores written from real
// clusters of both runtimes (test/support/backupFixture.ts): the snapshot it
// writes is at exactly the revision asked, and a member restored from it (with
// `etcdctl snapshot restore` for etcd) serves exactly the keyspace the test read
// from the cluster at that revision. A damaged newest full falls back to an
// older one and says so; a revision two clusters share, a point past the window
// and a store without the identity are refused in one line with no output file.
// With --drop-leases the member serves the same keys with no lease, and has none.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { clientFor, type EtcdClient } from '../../src/client/etcdClient.js';
import { BackupFixture } from '../support/backupFixture.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { LifeboatCluster } from '../support/lifeboatCluster.js';
import { lifeboat } from '../support/tools.js';

const conn = { dialTimeoutMs: 2000, commandTimeoutMs: 10_000 };

interface Written {
  /** revisions the test read the keyspace at, with what it read */
  reads: Map<number, string[]>;
  /** the revision in the middle of the first segment */
  mid: number;
  last: number;
  fulls: string[];
}

/** A full, writes, a segment, a second full, writes, a segment. */
async function workload(c: EtcdClient, fx: BackupFixture): Promise<Written> {
  const reads = new Map<number, string[]>();
  for (let i = 0; i < 10; i++) await c.put(`/app/a-${i}`, `value ${i}`);
  const f1 = await fx.full();
  const lease = await c.leaseGrant(600);
  await c.put('/app/leased', 'mine', { lease: lease.id });
  const mid = (await c.put('/app/a-1', 'second version')).header.revision;
  reads.set(mid, await BackupFixture.keyspace(c, mid));
  await c.txn({ success: [{ put: { key: '/app/t1', value: 'one' } }, { deleteRange: { key: '/app/a-0' } }] });
  await c.deleteRange('/app/a-2');
  const s1 = await fx.segment();
  reads.set(s1.toRevision, await BackupFixture.keyspace(c, s1.toRevision));
  const f2 = await fx.full();
  await c.put('/app/z', 'last');
  await c.leaseRevoke(lease.id);
  const s2 = await fx.segment();
  reads.set(s2.toRevision, await BackupFixture.keyspace(c, s2.toRevision));
  return { reads, mid, last: s2.toRevision, fulls: [f1.object, f2.object] };
}

async function restore(store: string, at: string, output: string, ...args: string[]) {
  return lifeboat('backup', 'restore', store, '--at', at, '--output', output, ...args);
}

async function revisionOf(file: string): Promise<number> {
  const st = await lifeboat('snapshot', 'status', file, '-w', 'json');
  assert.equal(st.code, 0, st.stderr);
  return (JSON.parse(st.stdout) as { revision: number }).revision;
}

for (const runtime of ['etcd', 'lifeboat'] as const) {
  describe(`backup restore from a store of a ${runtime} cluster`, () => {
    let stopCluster: () => Promise<unknown>;
    let dir: string;
    let storeDir: string;
    let written: Written;
    /** the source cluster's ID and member names, as a snapshot status prints them */
    let source: { clusterId: string; members: string[] };

    before(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), `lifeboat-backup-restore-${runtime}-`));
      storeDir = path.join(dir, 'store');
      let endpoints: string[];
      if (runtime === 'etcd') {
        const c = await EtcdCluster.start({ size: 1, portSeed: 'backupRestore.etcd' });
        endpoints = c.endpoints.split(',');
        stopCluster = () => c.stop();
      } else {
        const c = await LifeboatCluster.start('backupRestore.lifeboat', 1);
        endpoints = c.endpoints();
        stopCluster = () => c.stopAll();
      }
      const fx = new BackupFixture({ endpoints, runtime, storeDir });
      const client = clientFor(endpoints, conn);
      try {
        written = await workload(client, fx);
        source = { clusterId: fx.clusterId.toString(16), members: (await client.memberList()).members.map((m) => m.name).sort() };
      } finally {
        client.close();
        fx.close();
      }
    });

    after(async () => {
      await stopCluster?.();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    test('a revision inside a segment, and latest: exactly that revision, exactly that keyspace', async () => {
      for (const [at, rev] of [
        [String(written.mid), written.mid],
        ['latest', written.last],
      ] as const) {
        const out = path.join(dir, `at-${at}.db`);
        const r = await restore(`file://${storeDir}`, at, out);
        assert.equal(r.code, 0, r.stderr);
        assert.match(r.stderr, /will use full .*revision \d+, \d+ bytes/);
        assert.equal(await revisionOf(out), rev);
        assert.deepEqual(await BackupFixture.restoredKeyspace(out, runtime, dir), written.reads.get(rev), `revision ${rev}`);
      }
    });

    test('--drop-leases: the same keys detached from their leases, and no lease left', async () => {
      const out = path.join(dir, 'no-leases.db');
      const r = await restore(`file://${storeDir}`, String(written.mid), out, '--drop-leases');
      assert.equal(r.code, 0, r.stderr);
      assert.match(r.stdout, /leases dropped \(--drop-leases\): 1 leases removed/);
      assert.equal(await revisionOf(out), written.mid);
      const withLeases = written.reads.get(written.mid)!;
      assert.ok(
        withLeases.some((k) => !k.endsWith('/0')),
        'the point has a leased key',
      );
      const served = await BackupFixture.restoredState(out, runtime, dir);
      assert.deepEqual(
        served.keys,
        withLeases.map((k) => k.replace(/\/[0-9a-f]+$/, '/0')),
      );
      assert.deepEqual(served.leases, []);
    });

    if (runtime === 'lifeboat')
      test("the snapshot carries the source's cluster ID and members, not a scratch member's", async () => {
        const out = path.join(dir, 'identity.db');
        const r = await restore(`file://${storeDir}`, String(written.mid), out);
        assert.equal(r.code, 0, r.stderr);
        const st = await lifeboat('snapshot', 'status', out, '-w', 'json');
        assert.equal(st.code, 0, st.stderr);
        const j = JSON.parse(st.stdout) as { clusterId: string; members: Array<{ name: string }> };
        assert.deepEqual({ clusterId: j.clusterId, members: j.members.map((m) => m.name).sort() }, source);
      });

    test('a damaged newest full: the older one is used, and the output says so', async () => {
      const damaged = path.join(dir, 'damaged');
      fs.cpSync(storeDir, damaged, { recursive: true });
      const f = path.join(damaged, written.fulls[1]);
      const bytes = fs.readFileSync(f);
      bytes[bytes.length >> 1] ^= 0x01;
      fs.writeFileSync(f, bytes);
      const out = path.join(dir, 'fallback.db');
      const r = await restore(`file://${damaged}`, 'latest', out);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(r.stdout.includes(`passed over ${written.fulls[1]}`), r.stdout);
      assert.ok(r.stdout.includes(`from ${written.fulls[0]}`), r.stdout);
      assert.equal(await revisionOf(out), written.last);
    });

    test('a point past the window is refused in one line, and nothing is written', async () => {
      const out = path.join(dir, 'past.db');
      const r = await restore(`file://${storeDir}`, String(written.last + 1000), out);
      assert.equal(r.code, 3, r.stderr);
      assert.match(r.stderr, new RegExp(`outside the restorable window; the nearest restorable revisions are ${written.last} before it`));
      assert.ok(!fs.existsSync(out) && !fs.existsSync(`${out}.part`));
    });
  });
}

describe('backup restore: a store of two clusters', () => {
  test('a revision both have is refused until the cluster is named', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-backup-restore-two-'));
    const a = await LifeboatCluster.start('backupRestore.two.a', 1);
    const b = await LifeboatCluster.start('backupRestore.two.b', 1);
    try {
      const storeDir = path.join(dir, 'store');
      const ids: string[] = [];
      for (const c of [a, b]) {
        const fx = new BackupFixture({ endpoints: c.endpoints(), runtime: 'lifeboat', storeDir });
        const client = clientFor(c.endpoints(), conn);
        try {
          for (let i = 0; i < 5; i++) await client.put(`/k${i}`, 'v');
          await fx.full();
          ids.push(fx.clusterId.toString(16).padStart(16, '0'));
        } finally {
          client.close();
          fx.close();
        }
      }
      const out = path.join(dir, 'out.db');
      const r = await restore(`file://${storeDir}`, '6', out);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /revision 6 is in the backups of 2 clusters/);
      for (const id of ids) assert.ok(r.stderr.includes(id), r.stderr);
      assert.equal(r.stderr.trim().split('\n').length, 1);
      assert.ok(!fs.existsSync(out));
      const named = await restore(`file://${storeDir}`, `${ids[1]}:6`, out);
      assert.equal(named.code, 0, named.stderr);
      assert.equal(await revisionOf(out), 6);
    } finally {
      await a.stopAll();
      await b.stopAll();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
