// The main job on real etcd 3.4: a real 3-member etcd cluster written to under load
// loses quorum and the scripted recover-from-quorum-loss playbook rebuilds it from
// the survivor's data dir as 3 real etcd voters with a new cluster ID and every
// acknowledged key; the old members, started again with their own command lines,
// stop and create nothing. The same from an etcdctl snapshot file, and from the
// tail fixture (entries past the commit index kept, or dropped on request). Then, on the recovered etcd cluster: scale-out adds a
// real etcd learner and promotes it; a Lifeboat member for it is refused before
// anything changes; a member that cannot start fails the step at once and its
// learner is removed again; member add prints etcd's ETCD_* block.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cutTrailingHardStates } from '../etcdfile/walFixture.js';
import { ackedWriter } from '../support/ackedWriter.js';
import { EtcdCluster, type EtcdMember } from '../support/etcdCluster.js';
import { treeState } from './treeState.js';
import { freePorts } from '../support/ports.js';
import { playbookRun } from '../support/playbookRun.js';
import { processesUnder, stopProcessesUnder } from '../support/processes.js';
import { clientFor } from '../../src/client/etcdClient.js';
import { restoreEtcdSnapshotFile } from '../../src/recovery/etcdRestore.js';
import { etcdctl, lifeboat, waitFor } from '../support/tools.js';

interface MemberJson {
  ID: string;
  name: string;
  peerURLs: string[];
  clientURLs?: string[];
  isLearner?: boolean;
}

async function memberList(endpoint: string): Promise<{ clusterId: string; members: MemberJson[] }> {
  const r = await etcdctl('--endpoints', endpoint, 'member', 'list', '-w', 'json');
  assert.equal(r.code, 0, r.stderr);
  // etcdctl prints uint64 IDs as JSON numbers: read them as text so no digit is lost.
  const j = JSON.parse(r.stdout.replace(/"(ID|cluster_id|member_id)":(\d+)/g, '"$1":"$2"')) as { header: { cluster_id: string }; members: MemberJson[] };
  return { clusterId: BigInt(j.header.cluster_id).toString(16), members: j.members };
}

type Recovered = { name: string; peerUrl: string; clientUrl: string; dataDir: string };

function playbook(name: string, sets: Record<string, string>, auditDb: string): Promise<{ code: number | null; out: string }> {
  return playbookRun(name, sets, auditDb);
}

describe('the main job on real etcd 3.4', () => {
  let old: EtcdCluster;
  let newDir: string;
  let auditDb: string;
  let recovered: Recovered[] = [];
  let snapFile: string;

  before(async () => {
    old = await EtcdCluster.start({ size: 3, portSeed: 'etcd-runtime' });
    newDir = path.join(old.dir, 'new');
    fs.mkdirSync(newDir);
    auditDb = path.join(old.dir, 'audit.db');
    snapFile = path.join(old.dir, 'backup.db');
  });
  after(async () => {
    await stopProcessesUnder(old.dir);
    await old?.stop();
  });

  test('a real etcd cluster written to under load loses quorum: plan changes no byte; the playbook from the survivor data dir yields 3 etcd voters, a new cluster ID, every acknowledged key; old members are fenced', async () => {
    const [m1, m2, m3] = old.members as [EtcdMember, EtcdMember, EtcdMember];
    const before = await memberList(old.endpoints);
    const w = ackedWriter(m1.clientUrl);
    await waitFor('100 acknowledged writes', () => Promise.resolve(w.acked.length >= 100), { timeoutMs: 60_000 });
    // A snapshot for the next test, taken while the writes go on.
    assert.equal((await etcdctl('--endpoints', m1.clientUrl, 'snapshot', 'save', snapFile)).code, 0);
    await waitFor('50 more acknowledged writes', () => Promise.resolve(w.acked.length >= 150), { timeoutMs: 60_000 });
    // Two members die for good (kill -9), mid-stream; the survivor is stopped.
    m2.proc?.kill('SIGKILL');
    m3.proc?.kill('SIGKILL');
    await Promise.all([old.stopMember(m2), old.stopMember(m3)]);
    await old.stopMember(m1);
    const acked = await w.stop();
    const oldMemberTrees = old.members.map((m) => treeState(path.join(m.dataDir, 'member')));

    // recover plan over the three data dirs: read-only, not a byte changed.
    const trees = old.members.map((m) => treeState(m.dataDir));
    const plan = await lifeboat('recover', 'plan', ...old.members.flatMap((m) => ['--from-data-dir', m.dataDir]), '-w', 'json');
    assert.equal(plan.code, 0, plan.stderr);
    old.members.forEach((m, i) => assert.deepEqual(treeState(m.dataDir), trees[i], `recover plan changed ${m.dataDir}`));
    const p = JSON.parse(plan.stdout) as { recommended: number; sources: Array<{ path: string }> };
    const source = old.members.find((m) => path.resolve(m.dataDir) === p.sources[p.recommended].path)!;

    // The recovered member keeps the survivor's URLs; the others come back on theirs, with new data dirs.
    recovered = [source, ...old.members.filter((m) => m !== source)].map((m) => ({
      name: m.name,
      peerUrl: m.peerUrl,
      clientUrl: m.clientUrl,
      dataDir: path.join(newDir, m.name),
    }));
    const [r1, ...rest] = recovered as [Recovered, ...Recovered[]];
    const r = await playbook(
      'recover-from-quorum-loss',
      {
        source: source.dataDir,
        'data-dir': r1.dataDir,
        name: r1.name,
        'peer-url': r1.peerUrl,
        'client-url': r1.clientUrl,
        members: rest.map((m) => `${m.name}=${m.peerUrl},${m.clientUrl},${m.dataDir}`).join(';'),
        stabilization: '1s',
        'old-data-dirs': old.members
          .filter((m) => m !== source)
          .map((m) => m.dataDir)
          .join(','),
      },
      auditDb,
    );
    assert.equal(r.code, 0, r.out);
    const head = /Audit chain head: ([0-9a-f]{64})/.exec(r.out)?.[1];
    assert.ok(head, r.out);

    // Real etcd, 3 voters, a new cluster ID, every acknowledged key on every member.
    const after = await memberList(r1.clientUrl);
    assert.notEqual(after.clusterId, before.clusterId);
    assert.equal(after.members.filter((m) => !m.isLearner).length, 3);
    const status = await etcdctl('--endpoints', recovered.map((m) => m.clientUrl).join(','), 'endpoint', 'status', '-w', 'json');
    for (const s of JSON.parse(status.stdout) as Array<{ Status: { version: string } }>) assert.equal(s.Status.version, '3.4.23');
    for (const m of recovered) {
      const got = await etcdctl('--endpoints', m.clientUrl, 'get', 'acked/', '--prefix', '--keys-only', '--consistency=s');
      const keys = new Set(got.stdout.split('\n').filter(Boolean));
      assert.deepEqual(
        acked.filter((k) => !keys.has(k)),
        [],
        `${m.name} misses acknowledged keys`,
      );
    }

    // Fenced: each old member, started again with its own command (new, then existing), exits non-zero and creates nothing.
    for (const [i, m] of old.members.entries()) {
      const fence = JSON.parse(fs.readFileSync(path.join(m.dataDir, 'lifeboat-fence.json'), 'utf8')) as { movedTo: string; supersededBy: string };
      assert.equal(fence.supersededBy, after.clusterId);
      const fenced = treeState(m.dataDir);
      for (const state of ['new', 'existing']) {
        const args = m.args.map((a, k) => (m.args[k - 1] === '--initial-cluster-state' ? state : a));
        const run = spawnSync('etcd', args, { timeout: 20_000, encoding: 'utf8' });
        assert.ok(run.status !== 0 && run.status !== null, `${m.name} started on its fenced data dir (${state}): ${run.status}`);
      }
      assert.deepEqual(treeState(m.dataDir), fenced, `${m.name}'s start created or changed something`);
      assert.deepEqual(treeState(path.join(m.dataDir, fence.movedTo)), oldMemberTrees[i], `${m.name}'s data was changed by the fence`);
    }
    // Unfence gives the data dir back exactly as it was; fence again.
    const last = old.members[2];
    const u = await lifeboat('datadir', 'unfence', last.dataDir);
    assert.equal(u.code, 0, u.stderr);
    assert.deepEqual(treeState(path.join(last.dataDir, 'member')), oldMemberTrees[2]);
    const refence = await lifeboat('datadir', 'fence', last.dataDir, '--superseded-by', after.clusterId);
    assert.equal(refence.code, 0, refence.stderr);

    const verify = await lifeboat('audit', 'verify', '--audit-db', auditDb, '--head', head);
    assert.equal(verify.code, 0, verify.stderr);
  });

  test('an etcdctl snapshot save file becomes 3 etcd voters with a new cluster ID and every key it held', async () => {
    assert.ok(fs.existsSync(snapFile), 'needs the snapshot of the test before');
    const ports = await freePorts(6, 'etcd-runtime-snap');
    const url = (p: number) => `http://127.0.0.1:${p}`;
    const members = ['s1', 's2', 's3'].map((name, i) => ({
      name,
      peerUrl: url(ports[2 * i]),
      clientUrl: url(ports[2 * i + 1]),
      dataDir: path.join(old.dir, `from-snapshot-${name}`),
    }));
    const [s1, ...others] = members as [Recovered, ...Recovered[]];
    const r = await playbook(
      'recover-from-quorum-loss',
      // The snapshot's old members are the cluster recovered above, alive on those URLs: declared dead here.
      {
        source: snapFile,
        'data-dir': s1.dataDir,
        name: s1.name,
        'peer-url': s1.peerUrl,
        'client-url': s1.clientUrl,
        members: others.map((m) => `${m.name}=${m.peerUrl},${m.clientUrl},${m.dataDir}`).join(';'),
        stabilization: '1s',
        'assume-dead': old.members.map((m) => m.name).join(','),
      },
      auditDb,
    );
    assert.equal(r.code, 0, r.out);
    // etcd 3.4's snapshot restore has no --bump-revision: asked for, the restore is refused in one line, nothing written.
    const bumped = path.join(old.dir, 'never-bumped');
    await assert.rejects(
      restoreEtcdSnapshotFile(snapFile, {
        dataDir: bumped,
        name: 'b',
        initialAdvertisePeerUrls: ['http://127.0.0.1:1'],
        bumpRevision: 100,
        markCompacted: true,
      }),
      /--bump-revision\/--mark-compacted need etcdutl .* etcd 3\.4\.23's etcdctl snapshot restore lacks them/,
    );
    assert.ok(!fs.existsSync(bumped) && !fs.existsSync(`${bumped}.part`));
    const status = JSON.parse((await etcdctl('snapshot', 'status', snapFile, '-w', 'json')).stdout) as { revision: number };
    const header = JSON.parse((await etcdctl('--endpoints', s1.clientUrl, 'get', 'x', '-w', 'json')).stdout) as { header: { revision: number } };
    assert.equal(header.header.revision, status.revision, 'the recovered etcd starts at the snapshot revision');
    const list = await memberList(s1.clientUrl);
    assert.equal(list.members.filter((m) => !m.isLearner).length, 3);
    assert.notEqual(list.clusterId, (await memberList(recovered[0].clientUrl)).clusterId, 'a cluster ID of its own');
    const hashes = JSON.parse((await etcdctl('--endpoints', members.map((m) => m.clientUrl).join(','), 'endpoint', 'hashkv', '-w', 'json')).stdout) as Array<{
      HashKV: { hash: number };
    }>;
    assert.equal(new Set(hashes.map((h) => h.HashKV.hash)).size, 1, 'HashKV equal on the 3 members');
    for (const m of members) await stopProcessesUnder(m.dataDir);
  });

  test('the tail fixture: entries past the survivor commit index are kept by default and dropped with discard-uncommitted', async () => {
    const solo = await EtcdCluster.start({ size: 1, portSeed: 'etcd-runtime-tail' });
    try {
      const m = solo.members[0];
      for (let i = 0; i < 20; i++) assert.equal((await etcdctl('--endpoints', m.clientUrl, 'put', `base/${i}`, 'v')).code, 0);
      await solo.stopMember(m);
      // The backend as it was before the tail's puts: a power cut can leave it so.
      const db = path.join(m.dataDir, 'member', 'snap', 'db');
      const dbBefore = fs.readFileSync(db);
      solo.restart(m);
      await solo.waitReady(m);
      const n = 5;
      for (let i = 0; i < n; i++) assert.equal((await etcdctl('--endpoints', m.clientUrl, 'put', `tail/${i}`, 'v')).code, 0);
      await solo.stopMember(m);
      fs.writeFileSync(db, dbBefore);
      const cut = cutTrailingHardStates(path.join(m.dataDir, 'member', 'wal'), n);
      assert.equal(cut.to - cut.from + 1, n);

      const inspect = JSON.parse((await lifeboat('datadir', 'inspect', m.dataDir, '-w', 'json')).stdout) as { uncommitted: { count: number } };
      assert.equal(inspect.uncommitted.count, n, 'the plan shows the entries past the commit index');
      for (const [discard, want] of [
        ['false', n],
        ['true', 0],
      ] as const) {
        const [client, peer] = await freePorts(2, `etcd-runtime-tail-${discard}`);
        const clientUrl = `http://127.0.0.1:${client}`;
        const dataDir = path.join(solo.dir, `recovered-${discard}`);
        // A copy per run: the run fences its source.
        const source = path.join(solo.dir, `survivor-${discard}`);
        fs.cpSync(m.dataDir, source, { recursive: true });
        // The kept-tail run has its WAL apart, as etcd's --wal-dir keeps it: the restore reads and replays it from there.
        const walDir = path.join(solo.dir, `survivor-${discard}-wal`);
        if (discard === 'false') fs.renameSync(path.join(source, 'member', 'wal'), walDir);
        const r = await playbook(
          'recover-from-quorum-loss',
          {
            source,
            'data-dir': dataDir,
            name: 'r',
            'peer-url': `http://127.0.0.1:${peer}`,
            'client-url': clientUrl,
            'discard-uncommitted': discard,
            ...(discard === 'false' ? { 'wal-dir': walDir } : {}),
          },
          path.join(solo.dir, `audit-${discard}.db`),
        );
        assert.equal(r.code, 0, r.out);
        // A failed get must not read as "no tail keys" (it once did, against another test's etcd).
        const tail = await etcdctl('--endpoints', clientUrl, 'get', 'tail/', '--prefix', '--keys-only');
        assert.equal(tail.code, 0, tail.stderr);
        const keys = tail.stdout.split('\n').filter(Boolean);
        assert.equal(keys.length, want, `discard-uncommitted=${discard}`);
        const base = (await etcdctl('--endpoints', clientUrl, 'get', 'base/', '--prefix', '--keys-only')).stdout.split('\n').filter(Boolean);
        assert.equal(base.length, 20);
        await stopProcessesUnder(dataDir);
      }
    } finally {
      await stopProcessesUnder(solo.dir);
      await solo.stop();
    }
  });

  test('scale-out on the recovered etcd cluster: a real etcd learner joins and is promoted; a Lifeboat member is refused before the add; a member that cannot start is noticed at once and its learner removed', async () => {
    assert.ok(recovered.length === 3, 'needs the recovered cluster of the test before');
    const endpoints = recovered.map((m) => m.clientUrl).join(',');
    const [client, peer] = await freePorts(2, 'etcd-runtime-grow');
    const m4 = { name: 'infra4', peerUrl: `http://127.0.0.1:${peer}`, clientUrl: `http://127.0.0.1:${client}`, dataDir: path.join(newDir, 'infra4') };
    const member = `${m4.name}=${m4.peerUrl},${m4.clientUrl},${m4.dataDir}`;
    const count = async () => (await memberList(endpoints)).members.length;
    assert.equal(await count(), 3);

    // A Lifeboat member for an etcd cluster: refused (exit 3), nothing added.
    const wrong = await playbook('scale-out', { endpoints, members: member, runtime: 'lifeboat', stabilization: '1s' }, auditDb);
    assert.equal(wrong.code, 3, wrong.out);
    assert.match(wrong.out, /runtime lifeboat was asked for, but the cluster .* is etcd/);
    assert.equal(await count(), 3);

    // A member that exits at once (here an etcd binary that fails: a port taken is now refused before the run,
    // when the members are given): the step says so within seconds and removes the learner it added.
    const t0 = Date.now();
    const failed = await playbook('scale-out', { endpoints, members: member, stabilization: '1s', 'etcd-bin': '/bin/false' }, auditDb);
    const took = Date.now() - t0;
    assert.equal(failed.code, 1, failed.out);
    assert.match(failed.out, /infra4 \(etcd\) stopped at once \(exit 1\)/);
    assert.match(failed.out, /which never started, was removed from the cluster/);
    assert.ok(took < 45_000, `the failure took ${took} ms to notice`);
    assert.equal(await count(), 3, 'the unstarted learner was left in the cluster');
    fs.rmSync(m4.dataDir, { recursive: true, force: true });

    // The same with the port free: a real etcd learner, caught up, promoted.
    const ok = await playbook('scale-out', { endpoints, members: member, stabilization: '1s' }, auditDb);
    assert.equal(ok.code, 0, ok.out);
    const list = await memberList(endpoints);
    assert.equal(list.members.filter((m) => !m.isLearner).length, 4);
    const st = await etcdctl('--endpoints', m4.clientUrl, 'endpoint', 'status', '-w', 'json');
    assert.equal((JSON.parse(st.stdout) as Array<{ Status: { version: string } }>)[0].Status.version, '3.4.23');

    // member add against etcd prints etcd's own block and an etcd command line.
    const [p5] = await freePorts(1, 'etcd-runtime-add');
    // etcd refuses a change until every voter has been connected for 5 s: the new voter just joined.
    const add = await waitFor(
      'member add to be accepted',
      async () => {
        const a = await lifeboat('member', 'add', 'infra5', '--peer-urls', `http://127.0.0.1:${p5}`, '--learner', '--endpoints', endpoints);
        if (a.code !== 0 && /unhealthy cluster/.test(a.stderr)) return undefined;
        return a;
      },
      { timeoutMs: 30_000, intervalMs: 1000 },
    );
    assert.equal(add.code, 0, add.stderr);
    assert.match(add.stdout, /^ETCD_NAME="infra5"$/m);
    assert.match(add.stdout, /^ETCD_INITIAL_CLUSTER_STATE="existing"$/m);
    assert.match(add.stdout, /^ {2}etcd --name infra5 /m);
    assert.doesNotMatch(add.stdout, /LIFEBOAT_|lifeboat server/);
    const added = (await memberList(endpoints)).members.find((m) => m.peerURLs.includes(`http://127.0.0.1:${p5}`));
    assert.ok(added);
    assert.equal((await etcdctl('--endpoints', endpoints, 'member', 'remove', BigInt(added.ID).toString(16))).code, 0);
  });

  test('the other playbooks on real etcd members: rolling-restart, scale-in, replace-failed-member, move-member, recover-from-nospace', async () => {
    assert.equal(recovered.length, 3, 'needs the recovered cluster of the tests before');
    const voters = async (endpoint: string) => (await memberList(endpoint)).members.filter((m) => !m.isLearner);
    const infra4 = path.join(newDir, 'infra4');
    const at = (m: Recovered) => m.clientUrl;
    let endpoints = [...recovered.map(at)].join(',');

    // rolling-restart: each member stopped (found by its WAL lock) and started again, the cluster whole after each.
    const [r1, r2, r3] = recovered as [Recovered, Recovered, Recovered];
    const pidsBefore = [r2, r3].map((m) => processesUnder(m.dataDir));
    const rr = await playbook(
      'rolling-restart',
      { endpoints, members: [r2, r3].map((m) => `${m.name}=${m.peerUrl},${m.clientUrl},${m.dataDir}`).join(';') },
      auditDb,
    );
    assert.equal(rr.code, 0, rr.out);
    [r2, r3].forEach((m, i) => assert.notDeepEqual(processesUnder(m.dataDir), pidsBefore[i], `${m.name} was not restarted`));
    assert.equal((await voters(at(r1))).length, 4);

    // scale-in: infra4 removed, named by its ID in decimal as etcdctl's JSON prints it; the removed etcd member stops by itself.
    const infra4Id = (await memberList(at(r1))).members.find((m) => m.name === 'infra4')?.ID;
    assert.ok(infra4Id && /^\d+$/.test(infra4Id), String(infra4Id));
    const si = await playbook('scale-in', { endpoints, remove: infra4Id }, auditDb);
    assert.equal(si.code, 0, si.out);
    assert.equal((await voters(at(r1))).length, 3);
    await waitFor('the removed etcd member to stop', () => Promise.resolve(processesUnder(infra4).length === 0), { timeoutMs: 30_000 });

    // replace-failed-member: r3 dies for good (kill -9) and is replaced by infra6 on new ports.
    for (const pid of processesUnder(r3.dataDir)) process.kill(pid, 'SIGKILL');
    const [c6, p6] = await freePorts(2, 'etcd-runtime-replace');
    const infra6 = { name: 'infra6', peerUrl: `http://127.0.0.1:${p6}`, clientUrl: `http://127.0.0.1:${c6}`, dataDir: path.join(newDir, 'infra6') };
    endpoints = [r1, r2].map(at).join(',');
    const rf = await playbook(
      'replace-failed-member',
      {
        endpoints,
        failed: r3.name,
        name: infra6.name,
        'peer-url': infra6.peerUrl,
        'client-url': infra6.clientUrl,
        'data-dir': infra6.dataDir,
        stabilization: '1s',
      },
      auditDb,
    );
    assert.equal(rf.code, 0, rf.out);
    const afterReplace = await voters(at(r1));
    assert.deepEqual(afterReplace.map((m) => m.name).sort(), [r1.name, r2.name, 'infra6'].sort());

    // move-member: r2 to a new data dir and peer URL, packed with checksums and unpacked.
    const [c7, p7] = await freePorts(2, 'etcd-runtime-move');
    endpoints = [r1, infra6].map(at).join(',');
    const moved = { dataDir: path.join(newDir, 'moved'), peerUrl: `http://127.0.0.1:${p7}`, clientUrl: `http://127.0.0.1:${c7}` };
    const mv = await playbook(
      'move-member',
      {
        endpoints,
        name: r2.name,
        'data-dir': r2.dataDir,
        'client-url': r2.clientUrl,
        archive: path.join(old.dir, 'move.tar.gz'),
        'new-data-dir': moved.dataDir,
        'new-peer-url': moved.peerUrl,
        'new-client-url': moved.clientUrl,
      },
      auditDb,
    );
    assert.equal(mv.code, 0, mv.out);
    const afterMove = (await memberList(at(r1))).members.find((m) => m.name === r2.name);
    assert.deepEqual(afterMove?.peerURLs, [moved.peerUrl]);

    // recover-from-nospace: a NOSPACE alarm (raised through the Maintenance API) refuses writes until the playbook has run.
    endpoints = [r1.clientUrl, infra6.clientUrl, moved.clientUrl].join(',');
    const c = clientFor(endpoints.split(','), { dialTimeoutMs: 2000, commandTimeoutMs: 5000 });
    try {
      await c.alarm('ACTIVATE', BigInt((await memberList(at(r1))).members[0].ID), 'NOSPACE');
    } finally {
      c.close();
    }
    const refused = await etcdctl('--endpoints', endpoints, 'put', 'after-nospace', 'v');
    assert.notEqual(refused.code, 0, 'writes are refused under the NOSPACE alarm');
    const ns = await playbook('recover-from-nospace', { endpoints }, auditDb);
    assert.equal(ns.code, 0, ns.out);
    assert.equal((await etcdctl('--endpoints', endpoints, 'put', 'after-nospace', 'v')).code, 0);
  });
});
