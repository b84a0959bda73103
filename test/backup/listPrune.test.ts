// `lifeboat backup list` and `lifeboat backup prune` as an operator runs them,
// over stores holding hand-made manifests and objects (test/support/backupManifests.ts):
// a file:// directory and s3rver on 127.0.0.1; list's --endpoints against a real etcd.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, utimesSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import type { Manifest } from '../../src/backup/manifest.js';
import { readCatalog } from '../../src/backup/catalog.js';
import { ObjectLocked, type ObjectStore } from '../../src/backup/objectStore.js';
import { applyPrune } from '../../src/backup/prune.js';
import { planPrune } from '../../src/backup/prunePlan.js';
import { openBackupStore } from '../../src/cli/backupStoreFlags.js';
import { CLUSTER, full, gap, manifestKey, segment, writeFixture } from '../support/backupManifests.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { startS3Server, type S3Server } from '../support/s3Server.js';
import { etcdctl, expectOk, parseJsonIds, ROOT, run, type RunResult } from '../support/tools.js';

const H = 3_600_000;
const D = 24 * H;
const T = Date.now();
const tmp = mkdtempSync(path.join(os.tmpdir(), 'lifeboat-backup-list-'));
let s3: S3Server;
let etcd: EtcdCluster;

const storeFlags = { 'store-timeout': 10_000, 'store-attempts': 3, 'store-retry-for': 5_000 };

function cli(env: Record<string, string>, ...args: string[]): Promise<RunResult> {
  return run(process.execPath, [path.join(ROOT, 'bin', 'run.js'), ...args], { env: { PATH: process.env.PATH ?? '', HOME: tmp, NO_COLOR: '1', ...env } });
}

function fileStoreUrl(name: string): string {
  const dir = path.join(tmp, name);
  mkdirSync(dir, { recursive: true });
  return pathToFileURL(dir).href;
}

async function withStore<T>(url: string, endpoint: string | undefined, fn: (s: ObjectStore) => Promise<T>): Promise<T> {
  const store = await openBackupStore(url, { ...storeFlags, ...(endpoint ? { 's3-endpoint': endpoint } : {}) });
  try {
    return await fn(store);
  } finally {
    store.close();
  }
}

const keys = (url: string, endpoint?: string) => withStore(url, endpoint, async (s) => (await s.list('')).map((o) => o.key));

before(async () => {
  s3 = await startS3Server(path.join(tmp, 's3'), 'backup/listPrune');
  Object.assign(process.env, s3.env);
  etcd = await EtcdCluster.start({ size: 1, portSeed: 'backup/listPrune' });
});

after(async () => {
  await s3?.stop();
  await etcd?.stop();
  rmSync(tmp, { recursive: true, force: true });
});

describe('backup list', () => {
  const RECIPIENT = 'age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p';
  const rich: Manifest[] = [
    full(100, T - 3 * D),
    segment(101, 150, T - 3 * D + H, T - 2 * D),
    gap(151, 160, T - 2 * D + H),
    full(161, T - 2 * D + 2 * H, { recipients: [RECIPIENT] }),
    // caught up after an agent outage: the agent was last current 5 minutes before it saw 162
    segment(162, 200, T - 2 * D + 3 * H, T - D, { windowMs: 5 * 60_000 }),
    // after a hole nobody recorded: in no chain
    segment(211, 220, T - D + H, T - D + 2 * H),
  ];

  test('per cluster: the restorable window, chains with times, the gap, the hole, encryption, a wide window, orphans; and how far behind the cluster is', async () => {
    const url = fileStoreUrl('list');
    // The live cluster's own backups: a full at 2 and revisions 3..4, while the cluster goes on to 6.
    const status = parseJsonIds(expectOk(await etcdctl('--endpoints', etcd.endpoints, 'endpoint', 'status', '-w', 'json')));
    const live = (status[0].Status.header.cluster_id as string).padStart(16, '0');
    for (let i = 0; i < 5; i++) expectOk(await etcdctl('--endpoints', etcd.endpoints, 'put', `k${i}`, 'v'));
    await withStore(url, undefined, async (s) => {
      await writeFixture(s, [...rich, full(2, T - H, { clusterId: live }), segment(3, 4, T - H + 1000, T - H + 2000, { clusterId: live })]);
      await s.put(`${CLUSTER}/seg-junk.lbseg.gz`, Buffer.from('no manifest'));
    });

    const json = JSON.parse(expectOk(await cli({}, 'backup', 'list', url, '--endpoints', etcd.endpoints, '-w', 'json')));
    const byId = new Map((json.clusters as Array<{ clusterId: string }>).map((c) => [c.clusterId, c]));
    const c = byId.get(CLUSTER) as Record<string, any>;
    assert.deepEqual(c.restorable, {
      fromRevision: 100,
      toRevision: 200,
      fromTime: new Date(T - 3 * D).toISOString(),
      toTime: new Date(T - D).toISOString(),
    });
    assert.deepEqual(
      c.chains.map((ch: Record<string, number>) => [ch.fromRevision, ch.toRevision, ch.fullRevision, ch.segments, ch.widestWindowMs]),
      [
        [100, 150, 100, 1, 100],
        [161, 200, 161, 1, 300_000],
      ],
    );
    assert.deepEqual(c.holes, [
      { fromRevision: 151, toRevision: 160, recorded: true },
      { fromRevision: 201, toRevision: 210, recorded: false },
    ]);
    assert.deepEqual(
      c.gaps.map((g: Record<string, unknown>) => [g.fromRevision, g.toRevision, g.reason]),
      [[151, 160, 'compacted']],
    );
    assert.deepEqual(c.encryption, { objects: 5, encrypted: 1, recipients: [RECIPIENT] });
    assert.equal(c.storedSize, 100 + 50 + 100 + 50 + 50);
    assert.deepEqual(c.segments, { count: 3, revisions: 50 + 39 + 10, storedSize: 150 });
    assert.equal(c.behind, undefined, 'another cluster than the one asked');
    assert.deepEqual(json.orphans, { count: 1, size: 'no manifest'.length });
    // The live cluster: head 6 (5 puts on a new cluster), backed up to 4.
    assert.deepEqual((byId.get(live) as Record<string, unknown>).behind, { endpoint: etcd.endpoints, headRevision: 6, revisions: 2 });
    assert.deepEqual(json.head, { endpoint: etcd.endpoints, clusterId: live, revision: 6, inStore: true });

    const text = expectOk(await cli({}, 'backup', 'list', url));
    assert.match(text, new RegExp(`cluster ${CLUSTER}\\n  restorable: revisions 100\\.\\.200, `));
    assert.match(text, /revisions 161\.\.200 .* full 161 \+ 1 segment\(s\) .* widest time window 5m/);
    assert.match(text, /gap: +revisions 151\.\.160 \(compacted/);
    assert.match(text, /HOLE: +revisions 201\.\.210 are in no object and no gap records why/);
    assert.match(text, /1 of 5 objects encrypted \(age, 1 recipient\)/);
    assert.match(text, /1 object\(s\) without a manifest/);
    assert.doesNotMatch(text, /behind/, 'not asked without --endpoints');
  });
});

describe('backup prune', () => {
  const fixture: Manifest[] = [
    full(10, T - 10 * D),
    segment(11, 20, T - 10 * D + H, T - 9 * D),
    full(21, T - 5 * D),
    segment(22, 30, T - 5 * D + H, T - 4 * D),
    full(31, T - 2 * H),
    segment(32, 40, T - H, T - 10 * 60_000),
  ];
  const [f10, s11, f21, s22, f31, s32] = fixture;
  const policy = ['--keep-within', '24h', '--keep-last', '1', '--keep-daily', '0', '--keep-weekly', '0'];
  const both = (ms: Manifest[]) => ms.flatMap((m) => (m.kind === 'gap' ? [manifestKey(m)] : [m.object, manifestKey(m)])).sort();

  test('file store: --dry-run lists and deletes nothing; then the old fulls, their segments and the old orphan go, the rest stays listable', async () => {
    const url = fileStoreUrl('prune');
    const dir = new URL(url).pathname;
    const oldOrphan = `${CLUSTER}/seg-old-orphan.lbseg.gz`;
    const youngOrphan = `${CLUSTER}/seg-young-orphan.lbseg.gz`;
    await withStore(url, undefined, async (s) => {
      await writeFixture(s, fixture);
      await s.put(oldOrphan, Buffer.from('x'));
      await s.put(youngOrphan, Buffer.from('y'));
      await s.put('lock.json', Buffer.from('{}'));
    });
    const twoHoursAgo = new Date(T - 2 * H);
    utimesSync(path.join(dir, ...oldOrphan.split('/')), twoHoursAgo, twoHoursAgo);
    const before = await keys(url);

    const dry = expectOk(await cli({}, 'backup', 'prune', url, ...policy, '--dry-run'));
    for (const m of [f10, s11, f21, s22])
      assert.ok(dry.includes(`would delete ${m.kind} revisions ${m.fromRevision}..${m.toRevision}: ${(m as { object: string }).object}`), dry);
    assert.ok(dry.includes(`would delete orphan: ${oldOrphan}`), dry);
    assert.match(dry, /would delete 5 object\(s\)/);
    assert.deepEqual(await keys(url), before, 'a dry run deletes nothing');

    const result = JSON.parse(expectOk(await cli({}, 'backup', 'prune', url, ...policy, '-w', 'json')));
    assert.equal(result.deleted.length, 5);
    assert.deepEqual(result.skipped, []);
    assert.deepEqual(result.kept, [{ clusterId: CLUSTER, fulls: [{ revision: 31, reasons: ['last', 'within'] }], segments: 1, oldestRevision: 31 }]);
    assert.deepEqual(await keys(url), [...both([f31, s32]), youngOrphan, 'lock.json'].sort());

    const list = JSON.parse(expectOk(await cli({}, 'backup', 'list', url, '-w', 'json')));
    assert.deepEqual([list.clusters[0].restorable.fromRevision, list.clusters[0].restorable.toRevision], [31, 40]);
    // Nothing more to do: a second prune deletes nothing.
    assert.match(expectOk(await cli({}, 'backup', 'prune', url, ...policy)), /deleted 0 object\(s\)/);
  });

  test('s3 store: the same policy deletes the same objects', async () => {
    const url = s3.url('prune');
    await withStore(url, s3.endpoint, (s) => writeFixture(s, fixture));
    const out = expectOk(await cli(s3.env, 'backup', 'prune', url, '--s3-endpoint', s3.endpoint, ...policy));
    assert.match(out, /deleted 4 object\(s\)/);
    assert.deepEqual(await keys(url, s3.endpoint), both([f31, s32]));
  });

  test('--keep-last 0 is refused (a cluster always keeps its newest full), nothing deleted', async () => {
    const url = fileStoreUrl('prune-refused');
    await withStore(url, undefined, (s) => writeFixture(s, fixture));
    const r = await cli({}, 'backup', 'prune', url, '--keep-last', '0');
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^Error: --keep-last 0: give at least 1/);
    assert.equal((await keys(url)).length, 12);
  });

  test('each manifest is deleted before its object; what the object lock refuses is skipped and reported, a refused manifest keeps its object', async () => {
    const url = fileStoreUrl('prune-locked');
    await withStore(url, undefined, async (inner) => {
      await writeFixture(inner, fixture);
      const order: string[] = [];
      // The file store as an object-locked bucket would answer: f10's manifest and s22's object are under retention.
      const locked = new Set([manifestKey(f10), (s22 as { object: string }).object]);
      const store: ObjectStore = Object.assign(Object.create(inner) as ObjectStore, {
        delete: async (key: string) => {
          if (locked.has(key)) throw new ObjectLocked(inner.url, key, 'retention COMPLIANCE until 2030-01-01T00:00:00.000Z');
          order.push(key);
          await inner.delete(key);
        },
      });
      const plan = planPrune(await readCatalog(store), { keepWithinMs: D, keepLast: 1, keepDaily: 0, keepWeekly: 0 }, T);
      const result = await applyPrune(store, plan, false);
      assert.deepEqual(
        result.skipped.map((x) => [x.victim.fromRevision, x.key]),
        [
          [10, manifestKey(f10)],
          [22, (s22 as { object: string }).object],
        ],
      );
      assert.ok(result.skipped.every((x) => x.reason.includes('retention COMPLIANCE')));
      assert.deepEqual(
        result.deleted.map((v) => v.fromRevision),
        [21, 11],
      );
      for (const m of [s11, f21, s22]) {
        const mk = manifestKey(m);
        const ok = order.indexOf((m as { object: string }).object);
        assert.ok(order.indexOf(mk) >= 0 && (ok < 0 || order.indexOf(mk) < ok), `${mk} before its object: ${order.join(', ')}`);
      }
      // f10 stays whole (manifest and object); s22's object stays, now an orphan for a later prune.
      const left = (await inner.list('')).map((o) => o.key);
      assert.ok(left.includes(manifestKey(f10)) && left.includes((f10 as { object: string }).object));
      assert.ok(!left.includes(manifestKey(s22)) && left.includes((s22 as { object: string }).object));
    });
  });
});
