// `lifeboat recover --from-backup STORE@POINT` with real processes on 127.0.0.1,
// for both runtimes: a one-member cluster backed up (test/support/backupFixture.ts)
// is lost, and the recovery from a point older than the store's last revision
// ends with a healthy member of a new cluster serving exactly the keys the test
// read at that point, its revision bumped past the store's last recorded one and
// compacted there (etcd 3.4: by writes to one throwaway key). `recover plan` with
// that point and the newer survivor recommends the survivor and says what each
// choice loses; `recover` refuses the older backup unless --prefer-backup. Bad
// source strings fail in one line, and no member is started. The same store
// copied into an S3 server (s3rver): recover --from-backup s3://…@latest.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { clientFor, type EtcdClient } from '../../src/client/etcdClient.js';
import { BUMP_KEY } from '../../src/recovery/revisionBump.js';
import { BackupFixture } from '../support/backupFixture.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { LifeboatCluster } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';
import { stopProcessesUnder } from '../support/processes.js';
import { lifeboat, ROOT, run } from '../support/tools.js';
import { openStore } from '../../src/backup/openStore.js';
import { startS3Server } from '../support/s3Server.js';

const conn = { dialTimeoutMs: 2000, commandTimeoutMs: 10_000 };

/** `recover --from-backup SOURCE --yes`, recorded in AUDIT, starting one member on 127.0.0.1; `more` after. */
function recoverArgs(
  source: string,
  reason: string,
  audit: string,
  m: { dataDir: string; name: string; peer: number; client: number },
  ...more: string[]
): string[] {
  return [
    'recover',
    '--from-backup',
    source,
    '--yes',
    '--reason',
    reason,
    '--audit-db',
    audit,
    '--set',
    `data-dir=${m.dataDir}`,
    '--set',
    `name=${m.name}`,
    '--set',
    `peer-url=http://127.0.0.1:${m.peer}`,
    '--set',
    `client-url=http://127.0.0.1:${m.client}`,
    ...more,
  ];
}

interface Written {
  mid: number;
  atMid: string[];
  last: number;
  atLast: string[];
  clusterId: string;
}

/** A full, writes (a leased key among them), a segment: the point `mid` is older than the store's last revision. */
async function workload(c: EtcdClient, fx: BackupFixture): Promise<Written> {
  for (let i = 0; i < 10; i++) await c.put(`/app/a-${i}`, `value ${i}`);
  await fx.full();
  const lease = await c.leaseGrant(600);
  await c.put('/app/leased', 'mine', { lease: lease.id });
  const mid = (await c.put('/app/a-1', 'second version')).header.revision;
  const atMid = await BackupFixture.keyspace(c, mid);
  for (let i = 0; i < 20; i++) await c.put(`/app/b-${i}`, 'later');
  await c.deleteRange('/app/a-2');
  const s = await fx.segment();
  const atLast = await BackupFixture.keyspace(c, s.toRevision);
  return { mid, atMid, last: s.toRevision, atLast, clusterId: fx.clusterId.toString(16).padStart(16, '0') };
}

for (const runtime of ['lifeboat', 'etcd'] as const) {
  describe(`recover from a backup point (${runtime})`, () => {
    let dir: string;
    let store: string;
    let survivor: string;
    let written: Written;
    let cleanup: () => Promise<unknown>;
    let lose: () => Promise<unknown>;

    before(async () => {
      let endpoints: string[];
      if (runtime === 'etcd') {
        const c = await EtcdCluster.start({ size: 1, portSeed: 'recoverFromBackup.etcd' });
        dir = c.dir;
        endpoints = c.endpoints.split(',');
        survivor = c.members[0].dataDir;
        cleanup = () => c.stop();
        lose = () => c.stopMember(c.members[0]);
      } else {
        const c = await LifeboatCluster.start('recoverFromBackup.lifeboat', 1);
        dir = c.dir;
        endpoints = c.endpoints();
        survivor = c.members[0].dataDir;
        cleanup = () => c.stopAll();
        lose = () => c.kill(c.members[0]);
      }
      store = path.join(dir, 'store');
      const fx = new BackupFixture({ endpoints, runtime, storeDir: store });
      const client = clientFor(endpoints, conn);
      try {
        written = await workload(client, fx);
      } finally {
        client.close();
        fx.close();
      }
      // Every member lost: the survivor's data dir stays, stopped.
      await lose();
    });

    after(async () => {
      if (dir) await stopProcessesUnder(dir);
      await cleanup?.();
      if (dir && !process.env.LIFEBOAT_KEEP_TEST_DIRS) fs.rmSync(dir, { recursive: true, force: true });
    });

    test('recover --from-backup file://…@REV: a new cluster with exactly the keys at the point, its revision bumped past the store', async () => {
      const [client, peer] = await freePorts(2, `recoverFromBackup.new.${runtime}`);
      const dataDir = path.join(dir, 'r1');
      const r = await lifeboat(
        ...recoverArgs(`file://${store}@${written.mid}`, 'test: from a backup point', path.join(dir, 'audit.db'), { dataDir, name: 'r1', peer, client }),
      );
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
      assert.match(`${r.stdout}\n${r.stderr}`, /revision: (bumped|raised) by \d+/);
      const c = clientFor([`http://127.0.0.1:${client}`], conn);
      try {
        const st = await c.status();
        assert.notEqual(st.header.clusterId.toString(16).padStart(16, '0'), written.clusterId, 'a new cluster ID');
        assert.deepEqual(await BackupFixture.keyspace(c), written.atMid);
        assert.ok(st.header.revision >= written.last, `revision ${st.header.revision} < the store's last ${written.last}`);
        const h = await c.hashKV(0);
        assert.ok(h.compactRevision >= written.last, `compacted at ${h.compactRevision}, before the store's last ${written.last}`);
        if (runtime === 'etcd') {
          assert.equal(h.compactRevision, st.header.revision, 'the bump by writes ends with a compaction at its revision');
          assert.equal((await c.range(BUMP_KEY)).count, 0);
        }
      } finally {
        c.close();
      }
      const audit = await lifeboat('audit', 'verify', '--audit-db', path.join(dir, 'audit.db'));
      assert.equal(audit.code, 0, audit.stderr);
      await stopProcessesUnder(dataDir);
    });

    if (runtime === 'lifeboat')
      test('recover --from-backup s3://…@latest with --s3-endpoint: the keys of the last revision stored, no bump needed', async () => {
        const s3 = await startS3Server(path.join(dir, 's3'), 'recoverFromBackup.s3');
        try {
          Object.assign(process.env, s3.env);
          const from = await openStore(`file://${store}`);
          const to = await openStore(s3.url('etcd'), { endpoint: s3.endpoint });
          try {
            for (const o of await from.list('')) await to.put(o.key, await from.get(o.key));
          } finally {
            from.close();
            to.close();
          }
          const [client, peer] = await freePorts(2, 'recoverFromBackup.s3.new');
          const dataDir = path.join(dir, 'from-s3');
          const r = await run(
            process.execPath,
            [
              path.join(ROOT, 'bin', 'run.js'),
              ...recoverArgs(
                `${s3.url('etcd')}@latest`,
                'test: from s3',
                path.join(dir, 'audit-s3.db'),
                { dataDir, name: 's1', peer, client },
                '--s3-endpoint',
                s3.endpoint,
              ),
            ],
            { env: { ...process.env, ...s3.env, NO_COLOR: '1' } },
          );
          assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
          assert.match(r.stdout, /revision: no bump/);
          const c = clientFor([`http://127.0.0.1:${client}`], conn);
          try {
            assert.notEqual((await c.status()).header.clusterId.toString(16).padStart(16, '0'), written.clusterId);
            assert.deepEqual(await BackupFixture.keyspace(c), written.atLast);
          } finally {
            c.close();
          }
          await stopProcessesUnder(dataDir);
        } finally {
          await s3.stop();
        }
      });

    if (runtime === 'etcd')
      test('a bump by writes over max-bump-writes is refused before the data dir is made', async () => {
        const dataDir = path.join(dir, 'too-far');
        const r = await lifeboat(
          ...recoverArgs(
            `file://${store}@${written.mid}`,
            't',
            path.join(dir, 'audit-refused.db'),
            { dataDir, name: 't1', peer: 1, client: 2 },
            '--set',
            'max-bump-writes=10',
          ),
        );
        assert.equal(r.code, 3, `${r.stdout}\n${r.stderr}`);
        assert.match(r.stderr, /the revision bump needs \d+ writes .* over the limit of 10 .*--set max-bump-writes=N/);
        assert.ok(!fs.existsSync(dataDir));
      });

    test('recover plan: the survivor holds more than the backup point; recover refuses the older backup unless --prefer-backup', async () => {
      const point = `file://${store}@${written.mid}`;
      const plan = await lifeboat('recover', 'plan', '--from-data-dir', survivor, '--from-backup', point);
      assert.equal(plan.code, 0, plan.stderr);
      assert.match(plan.stdout, new RegExp(`Recommended: ${survivor}`));
      assert.match(
        plan.stdout,
        new RegExp(`holds more \\(revision ${written.last}\\) than the backup .*: choosing the backup loses revisions ${written.mid + 1}\\.\\.${written.last}`),
      );
      const preferred = await lifeboat('recover', 'plan', '--from-data-dir', survivor, '--from-backup', point, '--prefer-backup');
      assert.equal(preferred.code, 0, preferred.stderr);
      assert.ok(preferred.stdout.includes(`Recommended: ${point}`), preferred.stdout);
      assert.match(preferred.stdout, new RegExp(`--set last-revision=${written.last}`));
      const dataDir = path.join(dir, 'refused');
      const r = await lifeboat('recover', '--from-data-dir', survivor, '--from-backup', point, '--yes', '--reason', 't', '--set', `data-dir=${dataDir}`);
      assert.equal(r.code, 3, r.stderr);
      assert.match(r.stderr, /is older than .*--prefer-backup/);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
      assert.ok(!fs.existsSync(dataDir));
    });

    test('bad sources: no @POINT, an unknown scheme, a point outside the window: one line, nothing started', async () => {
      const dataDir = path.join(dir, 'bad');
      const sets = [
        '--yes',
        '--reason',
        't',
        '--set',
        `data-dir=${dataDir}`,
        '--set',
        'name=b',
        '--set',
        'peer-url=http://127.0.0.1:1',
        '--set',
        'client-url=http://127.0.0.1:2',
      ];
      for (const [source, code, message] of [
        [`file://${store}`, 2, /no @POINT/],
        [`ftp://host/x@latest`, 2, /unknown scheme ftp:\/\//],
        [
          `file://${store}@${written.last + 1000}`,
          3,
          new RegExp(`outside the restorable window; the nearest restorable revisions are ${written.last} before it`),
        ],
      ] as const) {
        const r = await lifeboat('recover', '--from-backup', source, ...sets);
        assert.equal(r.code, code, `${source}: ${r.stderr}`);
        assert.match(r.stderr, message);
        assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
        assert.ok(!fs.existsSync(dataDir));
      }
      // The playbook's --set source takes the same: refused before any step.
      const pb = await lifeboat('playbook', 'run', 'recover-from-quorum-loss', '--set', 'source=ftp://host/x@latest', ...sets);
      assert.equal(pb.code, 2, pb.stderr);
      assert.match(pb.stderr, /unknown scheme ftp:\/\//);
      assert.ok(!fs.existsSync(dataDir));
    });
  });
}
