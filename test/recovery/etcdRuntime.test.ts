// The main job on real etcd 3.4: a real 3-member etcd cluster loses quorum and the
// scripted recover-from-quorum-loss playbook rebuilds it as 3 real etcd voters with
// a new cluster ID; the old members, started again with their own command lines,
// stop and create nothing. Then, on the recovered etcd cluster: scale-out adds a
// real etcd learner and promotes it; a Lifeboat member for it is refused before
// anything changes; a member that cannot start fails the step at once and its
// learner is removed again; member add prints etcd's ETCD_* block.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EtcdCluster } from '../support/etcdCluster.js';
import { freePorts } from '../support/ports.js';
import { stopProcessesUnder } from '../support/processes.js';
import { etcdctl, lifeboat, run, ROOT, waitFor } from '../support/tools.js';

const BIN = path.join(ROOT, 'bin', 'run.js');

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

async function playbook(name: string, sets: Record<string, string>, auditDb: string, extra: string[] = []): Promise<{ code: number | null; out: string }> {
  const args = [BIN, 'playbook', 'run', name, '--yes', '--reason', `test: ${name} on etcd`, '--audit-db', auditDb, ...extra];
  for (const [k, v] of Object.entries(sets)) args.push('--set', `${k}=${v}`);
  const r = await run(process.execPath, args, { timeoutMs: 240_000 });
  return { code: r.code, out: `${r.stdout}\n${r.stderr}` };
}

/** Every file and directory under dir with its size and content hash: what "creates nothing" compares. */
function treeOf(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of fs.readdirSync(d).sort()) {
      const p = path.join(d, name);
      const st = fs.statSync(p);
      if (st.isDirectory()) {
        out.push(`${path.relative(dir, p)}/`);
        walk(p);
      } else out.push(`${path.relative(dir, p)} ${st.size}`);
    }
  };
  walk(dir);
  return out;
}

describe('the main job on real etcd 3.4', () => {
  let old: EtcdCluster;
  let newDir: string;
  let auditDb: string;
  let recovered: { name: string; peerUrl: string; clientUrl: string; dataDir: string }[] = [];

  before(async () => {
    old = await EtcdCluster.start({ size: 3, portSeed: 'etcd-runtime' });
    newDir = path.join(old.dir, 'new');
    fs.mkdirSync(newDir);
    auditDb = path.join(old.dir, 'audit.db');
  });
  after(async () => {
    await stopProcessesUnder(old.dir);
    await old?.stop();
  });

  test('an etcd snapshot becomes 3 real etcd voters with a new cluster ID; old members started with their own commands stop and create nothing', async () => {
    const first = old.members[0];
    const before = await memberList(old.endpoints);
    for (let i = 0; i < 200; i++) assert.equal((await etcdctl('--endpoints', old.endpoints, 'put', `k/${String(i).padStart(3, '0')}`, `v${i}`)).code, 0);
    const snap = path.join(old.dir, 'backup.db');
    assert.equal((await etcdctl('--endpoints', first.clientUrl, 'snapshot', 'save', snap)).code, 0);
    // Quorum lost for good: two members die, the third is stopped.
    await Promise.all(old.members.map((m) => old.stopMember(m)));
    const oldTrees = old.members.map((m) => treeOf(m.dataDir));

    recovered = old.members.map((m) => ({ name: m.name, peerUrl: m.peerUrl, clientUrl: m.clientUrl, dataDir: path.join(newDir, m.name) }));
    const [r1, ...rest] = recovered;
    const r = await playbook(
      'recover-from-quorum-loss',
      {
        source: snap,
        'data-dir': r1.dataDir,
        name: r1.name,
        'peer-url': r1.peerUrl,
        'client-url': r1.clientUrl,
        members: rest.map((m) => `${m.name}=${m.peerUrl},${m.clientUrl},${m.dataDir}`).join(';'),
        stabilization: '1s',
        'old-data-dirs': old.members.map((m) => m.dataDir).join(','),
      },
      auditDb,
    );
    assert.equal(r.code, 0, r.out);
    const head = /Audit chain head: ([0-9a-f]{64})/.exec(r.out)?.[1];
    assert.ok(head, r.out);

    // Real etcd, 3 voters, a new cluster ID, every key of the snapshot.
    const after = await memberList(r1.clientUrl);
    assert.notEqual(after.clusterId, before.clusterId);
    assert.equal(after.members.filter((m) => !m.isLearner).length, 3);
    const status = await etcdctl('--endpoints', recovered.map((m) => m.clientUrl).join(','), 'endpoint', 'status', '-w', 'json');
    for (const s of JSON.parse(status.stdout) as Array<{ Status: { version: string } }>) assert.equal(s.Status.version, '3.4.23');
    const keys = await etcdctl('--endpoints', r1.clientUrl, 'get', 'k/', '--prefix', '--keys-only');
    assert.equal(keys.stdout.split('\n').filter(Boolean).length, 200);

    // Fenced: each old member, started again with its own command (new, then existing), exits non-zero and creates nothing.
    for (const [i, m] of old.members.entries()) {
      assert.ok(fs.existsSync(path.join(m.dataDir, 'lifeboat-fence.json')), `${m.name} not fenced`);
      for (const state of ['new', 'existing']) {
        const args = m.args.map((a, k) => (m.args[k - 1] === '--initial-cluster-state' ? state : a));
        const p = spawnSync('etcd', args, { timeout: 20_000, encoding: 'utf8' });
        assert.notEqual(p.status, 0, `${m.name} started on its fenced data dir (${state})`);
        assert.notEqual(p.status, null, `${m.name} had to be killed (${state}): it ran`);
      }
      const now = treeOf(m.dataDir);
      // What fencing left (the member moved aside, an empty member/ and proxy/) and nothing more.
      assert.deepEqual(
        now.filter((x) => !x.startsWith('member.fenced-')),
        ['lifeboat-fence.json ' + fs.statSync(path.join(m.dataDir, 'lifeboat-fence.json')).size, 'member/', 'proxy/'],
      );
      assert.deepEqual(
        now.filter((x) => x.startsWith('member.fenced-')).map((x) => x.replace(/^member\.fenced-[0-9a-f]+/, 'member')),
        oldTrees[i],
      );
    }
    // Unfence gives the data dir back exactly as it was.
    const u = await lifeboat('datadir', 'unfence', old.members[2].dataDir);
    assert.equal(u.code, 0, u.stderr);
    assert.deepEqual(treeOf(old.members[2].dataDir), oldTrees[2]);
    const refence = await lifeboat('datadir', 'fence', old.members[2].dataDir, '--superseded-by', after.clusterId);
    assert.equal(refence.code, 0, refence.stderr);

    const verify = await lifeboat('audit', 'verify', '--audit-db', auditDb, '--head', head);
    assert.equal(verify.code, 0, verify.stderr);
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

    // Its client port taken: etcd exits at once; the step says so within seconds and removes the learner it added.
    const blocker = net.createServer((s) => s.destroy());
    await new Promise<void>((resolve, reject) => {
      blocker.once('error', reject);
      blocker.listen(client, '127.0.0.1', resolve);
    });
    const t0 = Date.now();
    const failed = await playbook('scale-out', { endpoints, members: member, stabilization: '1s' }, auditDb);
    const took = Date.now() - t0;
    await new Promise<void>((resolve) => blocker.close(() => resolve()));
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
});
