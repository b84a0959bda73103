// Every everyday command through the CLI (node bin/run.js) against ONE 3-member
// Lifeboat cluster, each output format checked: IDs in hex (padded to 16 in
// tables), JSON IDs as exact uint64 numbers (parseJsonIds refuses strings).
// Membership changes come last, in order:
// add a learner from the printed environment, promote, update, the refusals,
// shrink to one voter, then join a member from the printed command line.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { EXIT } from '../../src/cli/exitCodes.js';
import { LifeboatCluster, parseEtcdJson, type MemberProc } from '../support/lifeboatCluster.js';
import { etcdctl, expectOk as ok, failsWithOneLine, lifeboat, parseJsonIds, waitFor, type RunResult } from '../support/tools.js';

let c: LifeboatCluster;
/** --endpoints with every running member / the first only */
let all: string[];
let first: string[];

before(
  async () => {
    c = await LifeboatCluster.start('client-cluster', 3);
    all = ['--endpoints', c.endpoints().join(',')];
    first = ['--endpoints', c.members[0].client];
  },
  { timeout: 60_000 },
);

after(async () => c?.stopAll(), { timeout: 60_000 });

const lines = (s: string) =>
  s
    .trim()
    .split('\n')
    .filter((l) => l !== '');
const HEX = /^[0-9a-f]+$/;

/** The three formats of one read-only command, run side by side. */
async function formats(...args: string[]): Promise<{ simple: string; json: any; table: string }> {
  const [s, j, t] = await Promise.all([lifeboat(...args), lifeboat(...args, '-w', 'json'), lifeboat(...args, '-w', 'table')]);
  return { simple: ok(s), json: parseJsonIds(ok(j)), table: ok(t) };
}

interface Row {
  id: string;
  status: string;
  name: string;
  peer: string;
  client: string;
  learner: boolean;
}

/** etcdctl's member list (hex IDs): the ground truth. */
async function truth(endpoint = c.endpoints()[0]): Promise<Row[]> {
  const r = await etcdctl('--endpoints', endpoint, 'member', 'list');
  assert.equal(r.code, 0, r.stderr);
  return lines(r.stdout).map((l) => {
    const [id, status, name, peer, client, learner] = l.split(', ');
    return { id: id, status: status, name: name, peer: peer, client: client, learner: learner === 'true' };
  });
}

async function clusterIdHex(endpoint = c.endpoints()[0]): Promise<string> {
  const r = await etcdctl('--endpoints', endpoint, 'member', 'list', '-w', 'json');
  return BigInt(parseEtcdJson(r.stdout).header.cluster_id).toString(16);
}

const idOf = async (m: MemberProc) => (await truth()).find((r) => r.name === m.name)!.id;

/** The leader's hex ID, asked through etcdctl (cheaper than a CLI start for a poll). */
async function leaderId(): Promise<string> {
  const r = await etcdctl('--endpoints', c.endpoints()[0], 'endpoint', 'status', '-w', 'json');
  return BigInt(parseEtcdJson(r.stdout)[0].Status.leader).toString(16);
}

/** Retry a membership change the server refuses for now (strict reconfiguration, learner catching up). */
function retried(what: string, args: string[], transient: RegExp): Promise<RunResult> {
  return waitFor(
    what,
    async () => {
      const r = await lifeboat(...args);
      if (r.code === 0) return r;
      if (transient.test(r.stderr)) return false;
      throw new Error(`${args.join(' ')}: exit ${r.code}: ${r.stderr}`);
    },
    { timeoutMs: 30_000, intervalMs: 500 },
  );
}

test('member list: simple, table (IDs padded to 16) and json (IDs as exact uint64 numbers, as etcdctl prints them)', async () => {
  const rows = await truth();
  const cid = await clusterIdHex();
  const out = await formats('member', 'list', ...all);
  assert.deepEqual(lines(out.simple).sort(), rows.map((r) => `${r.id}, started, ${r.name}, ${r.peer}, ${r.client}, false`).sort());
  for (const m of c.members) assert.ok(out.simple.includes(`, started, ${m.name}, ${m.peerUrl}, ${m.clientUrl}, false`), out.simple);
  assert.match(out.table, /\|\s+ID\s+\|\s+STATUS\s+\|\s+NAME\s+\|\s+PEER ADDRS\s+\|\s+CLIENT ADDRS\s+\|\s+IS LEARNER\s+\|/);
  for (const r of rows)
    assert.match(out.table, new RegExp(`\\| ${r.id.padStart(16, '0')} \\| started \\| ${r.name}\\s+\\| ${r.peer}\\s+\\| ${r.client}\\s+\\|\\s+false \\|`));
  assert.equal(out.json.header.cluster_id, cid);
  assert.match(out.json.header.member_id, HEX);
  assert.deepEqual(
    out.json.members.map((m: any) => `${m.ID} ${m.name} ${m.peerURLs} ${m.clientURLs} ${m.isLearner}`).sort(),
    rows.map((r) => `${r.id} ${r.name} ${r.peer} ${r.client} false`).sort(),
  );
});

test('put, get and del in each format', async () => {
  assert.equal(ok(await lifeboat('put', '/e/a', '1', ...all)), 'OK\n');
  const putJson = parseJsonIds(ok(await lifeboat('put', '/e/b', '2', ...all, '-w', 'json')));
  assert.equal(putJson.header.cluster_id, await clusterIdHex());
  assert.match(putJson.header.member_id, HEX);
  assert.equal((await etcdctl('--endpoints', c.members[0].client, 'put', '/e/a', '10')).code, 0);
  assert.equal((await etcdctl('--endpoints', c.members[1].client, 'get', '/e/a', '--print-value-only')).stdout, '10\n', 'etcdctl sees the write');

  const got = await formats('get', '/e/', '--prefix', ...all);
  assert.equal(got.simple, '/e/a\n10\n/e/b\n2\n');
  assert.deepEqual(
    got.json.kvs.map((kv: any) => [Buffer.from(kv.key, 'base64').toString(), Buffer.from(kv.value, 'base64').toString(), kv.version]),
    [
      ['/e/a', '10', 2],
      ['/e/b', '2', 1],
    ],
  );
  assert.equal(got.json.count, 2);
  assert.match(got.json.header.member_id, HEX);
  assert.match(got.table, /\|\s+KEY\s+\|\s+VALUE\s+\|\s+CREATE REVISION\s+\|\s+MOD REVISION\s+\|\s+VERSION\s+\|\s+LEASE\s+\|/);
  assert.match(got.table, /\| \/e\/a \| 10\s+\|/);

  assert.equal(ok(await lifeboat('del', '/e/a', '--prev-kv', ...all)), '1\n/e/a\n10\n');
  assert.equal(parseJsonIds(ok(await lifeboat('del', '/e/b', ...all, '-w', 'json'))).deleted, 1);
  assert.match(ok(await lifeboat('del', '/e/', '--prefix', ...all, '-w', 'table')), /0/);
  assert.equal((await etcdctl('--endpoints', c.members[2].client, 'get', '/e/', '--prefix')).stdout, '', 'etcdctl sees them gone');
});

test('endpoint status, health and hashkv in each format, per endpoint and --cluster', async () => {
  const rows = await truth();
  const eps = c.endpoints();
  const status = await formats('endpoint', 'status', ...all);
  assert.deepEqual(
    status.json.map((s: any) => s.Endpoint),
    eps,
  );
  assert.deepEqual(status.json.map((s: any) => s.Status.header.member_id).sort(), rows.map((r) => r.id).sort(), 'each endpoint answered for itself, hex');
  assert.equal(new Set(status.json.map((s: any) => s.Status.leader)).size, 1);
  assert.ok(
    rows.some((r) => r.id === status.json[0].Status.leader),
    'leader as a hex string',
  );
  assert.equal(lines(status.simple).length, 3);
  assert.equal(lines(status.simple).filter((l) => /, 3\.4\.23-lifeboat, [\d.]+ k?B, true, false, \d+, \d+, \d+,/.test(l)).length, 1, status.simple);
  assert.match(
    status.table,
    /ENDPOINT\s+\|\s+ID\s+\|\s+VERSION\s+\|\s+DB SIZE\s+\|\s+IS LEADER\s+\|\s+IS LEARNER\s+\|\s+RAFT TERM\s+\|\s+RAFT INDEX\s+\|\s+RAFT APPLIED INDEX\s+\|\s+ERRORS/,
  );
  for (const r of rows) assert.ok(status.table.includes(`| ${r.id.padStart(16, '0')} |`), status.table);
  const viaCluster = lines(ok(await lifeboat('endpoint', 'status', '--cluster', ...first)));
  assert.deepEqual(viaCluster.map((l) => l.split(', ')[0]).sort(), c.members.map((m) => m.clientUrl).sort());

  const health = await formats('endpoint', 'health', '--cluster', ...first);
  assert.deepEqual(
    lines(health.simple)
      .map((l) => /^(\S+) is healthy: successfully committed proposal: took = [\d.]+(µs|ms|s)$/.exec(l)?.[1])
      .sort(),
    c.members.map((m) => m.clientUrl).sort(),
  );
  assert.ok(health.json.length === 3 && health.json.every((h: any) => h.health === true), JSON.stringify(health.json));
  assert.match(health.table, /ENDPOINT\s+\|\s+HEALTH\s+\|\s+TOOK\s+\|\s+ERROR/);
  assert.equal((health.table.match(/\|\s+true \|/g) ?? []).length, 3);

  const rev = status.json[0].Status.header.revision as number;
  const hash = await formats('endpoint', 'hashkv', '--rev', String(rev), ...all);
  const hashes = lines(hash.simple).map((l) => l.split(', ')[1]);
  assert.equal(hashes.length, 3);
  assert.equal(new Set(hashes).size, 1, `members agree at revision ${rev}: ${hash.simple}`);
  assert.deepEqual(
    hash.json.map((h: any) => String(h.HashKV.hash)),
    hashes,
  );
  assert.ok(hash.json.every((h: any) => HEX.test(h.HashKV.header.member_id)));
  assert.match(hash.table, /ENDPOINT\s+\|\s+HASH\s+\|\s+COMPACT REVISION/);
  const etcdctlHash = lines((await etcdctl('--endpoints', eps.join(','), 'endpoint', 'hashkv', '--rev', String(rev))).stdout);
  assert.deepEqual(
    etcdctlHash.map((l) => l.split(', ')[1]),
    hashes,
    'same numbers as etcdctl',
  );
});

test('alarm list and disarm in each format', async () => {
  assert.deepEqual(parseJsonIds(ok(await lifeboat('alarm', 'list', ...all, '-w', 'json'))).alarms, []);
  const id = await idOf(c.members[1]);
  const client = new EtcdClient({ endpoints: c.endpoints().join(',') });
  try {
    await client.alarm('ACTIVATE', BigInt(`0x${id}`), 'NOSPACE');
  } finally {
    client.close();
  }
  const raised = await formats('alarm', 'list', ...all);
  assert.equal(raised.simple, `memberID:${id} alarm:NOSPACE\n`);
  assert.deepEqual(raised.json.alarms, [{ memberID: id, alarm: 'NOSPACE' }]);
  assert.match(raised.table, new RegExp(`\\| ${id.padStart(16, '0')} \\| NOSPACE \\|`));
  assert.match((await etcdctl('--endpoints', c.endpoints().join(','), 'alarm', 'list')).stdout, new RegExp(`memberID:${BigInt(`0x${id}`)} alarm:NOSPACE`));
  const disarmed = parseJsonIds(ok(await lifeboat('alarm', 'disarm', ...all, '-w', 'json')));
  assert.deepEqual(disarmed.alarms, [{ memberID: id, alarm: 'NOSPACE' }]);
  assert.equal(ok(await lifeboat('alarm', 'list', ...all)), '', 'nothing left');
  assert.equal((await etcdctl('--endpoints', c.endpoints().join(','), 'put', '/e/after-alarm', 'x')).code, 0, 'writes work again');
});

test('compaction, defrag and move-leader in each format', async () => {
  for (let i = 0; i < 4; i++) assert.equal((await etcdctl('--endpoints', c.endpoints()[0], 'put', '/e/compact', String(i))).code, 0);
  const rev = Number(parseEtcdJson((await etcdctl('--endpoints', c.endpoints()[0], 'get', '/e/compact', '-w', 'json')).stdout).header.revision);
  assert.equal(ok(await lifeboat('compaction', String(rev - 3), ...all)), `compacted revision ${rev - 3}\n`);
  const cj = parseJsonIds(ok(await lifeboat('compaction', String(rev - 2), ...all, '-w', 'json')));
  assert.equal(cj.revision, rev - 2);
  assert.match(cj.header.member_id, HEX);
  assert.equal(ok(await lifeboat('compaction', String(rev - 1), '--physical', ...all, '-w', 'table')), `compacted revision ${rev - 1}\n`);
  assert.match((await etcdctl('--endpoints', c.endpoints()[0], 'get', '/e/compact', '--rev', String(rev - 2))).stderr, /required revision has been compacted/);

  const defrag = await formats('defrag', '--cluster', ...first);
  assert.deepEqual(lines(defrag.simple).sort(), c.members.map((m) => `Finished defragmenting etcd member[${m.clientUrl}]`).sort());
  assert.deepEqual(defrag.json.map((d: any) => [d.endpoint, d.defragmented]).sort(), c.members.map((m) => [m.clientUrl, true]).sort());
  assert.equal((defrag.table.match(/\|\s+true \|/g) ?? []).length, 3);

  const rows = await truth();
  for (const format of ['simple', 'table', 'json']) {
    const from = await leaderId();
    const to = rows.find((r) => r.id !== from)!.id;
    const out = ok(await lifeboat('move-leader', to, ...all, '-w', format));
    if (format === 'json') {
      const j = parseJsonIds(out);
      assert.deepEqual([j.from, j.to, typeof j.header.member_id], [from, to, 'string'], out);
    } else {
      assert.equal(out, `Leadership transferred from ${from} to ${to}\n`);
    }
    await waitFor(`${to} to lead`, async () => (await leaderId()) === to);
  }
});

test(
  'member add --learner, start it from the printed environment, promote, update; then the refusals and shrinking to one voter',
  { timeout: 180_000 },
  async () => {
    const cid = await clusterIdHex();
    const m4 = c.define('m4');
    const added = await retried(
      'member add to pass the strict reconfiguration check',
      ['member', 'add', 'm4', '--peer-urls', m4.peerUrl, '--learner', ...all],
      /unhealthy cluster/,
    );
    const id = new RegExp(`^Member ([0-9a-f]+) added as learner to cluster ${cid}\\n`).exec(added.stdout)?.[1];
    assert.ok(id, added.stdout);
    const env = Object.fromEntries([...added.stdout.matchAll(/^(LIFEBOAT_[A-Z_]+)="(.*)"$/gm)].map((mm) => [mm[1], mm[2]]));
    assert.deepEqual(Object.keys(env), ['LIFEBOAT_NAME', 'LIFEBOAT_INITIAL_CLUSTER', 'LIFEBOAT_INITIAL_ADVERTISE_PEER_URLS', 'LIFEBOAT_INITIAL_CLUSTER_STATE']);
    assert.deepEqual(env.LIFEBOAT_INITIAL_CLUSTER.split(',').sort(), [...c.members, m4].map((m) => `${m.name}=${m.peerUrl}`).sort());
    assert.deepEqual(
      (await truth()).find((r) => r.id === id),
      { id, status: 'unstarted', name: '', peer: m4.peerUrl, client: '', learner: true },
    );

    // Phase 2 from the printed variables: only where to listen and store comes as flags.
    c.spawnServer(
      m4,
      ['--data-dir', m4.dataDir, '--listen-peer-urls', m4.peerUrl, '--listen-client-urls', m4.clientUrl, '--advertise-client-urls', m4.clientUrl],
      { env },
    );
    await waitFor('the learner to publish its name', async () => (await truth()).find((r) => r.id === id)?.status === 'started');
    const listed = await formats('member', 'list', ...all);
    assert.match(listed.simple, new RegExp(`^${id}, started, m4, ${m4.peerUrl}, ${m4.clientUrl}, true$`, 'm'));
    assert.match(listed.table, new RegExp(`\\| ${id.padStart(16, '0')} \\| started \\| m4\\s+\\|.*\\|\\s+true \\|`));
    assert.deepEqual(
      listed.json.members.find((m: any) => m.ID === id),
      { ID: id, name: 'm4', peerURLs: [m4.peerUrl], clientURLs: [m4.clientUrl], isLearner: true },
    );

    const promoted = await retried('the learner to be promotable', ['member', 'promote', id, ...all], /in sync with leader|unhealthy cluster/);
    assert.equal(promoted.stdout, `Member ${id} promoted in cluster ${cid}\n`);
    assert.equal((await truth()).find((r) => r.id === id)?.learner, false);

    // Update with the same peer URL (a real move needs a restart with new flags), in each format.
    assert.equal(ok(await lifeboat('member', 'update', id, '--peer-urls', m4.peerUrl, ...all)), `Member ${id} updated in cluster ${cid}\n`);
    assert.equal(ok(await lifeboat('member', 'update', id, '--peer-urls', m4.peerUrl, ...all, '-w', 'table')), `Member ${id} updated in cluster ${cid}\n`);
    const updated = parseJsonIds(ok(await lifeboat('member', 'update', id, '--peer-urls', m4.peerUrl, ...all, '-w', 'json')));
    assert.equal(updated.header.cluster_id, cid);
    assert.equal(updated.members.find((m: any) => m.ID === id)?.peerURLs[0], m4.peerUrl);

    // Removing the leader without a terminal: refused, exit 3, nothing changed.
    const leader = await leaderId();
    const refused = failsWithOneLine(await lifeboat('member', 'remove', leader, ...all), EXIT.REFUSED, 'it is the leader', '--yes', leader);
    assert.match(refused, /^Error: refusing to remove member [0-9a-f]+ \(m\d\): it is the leader/);
    assert.equal((await truth()).length, 4);

    // Two routine removals of followers (4 → 3 → 2 voters), the removed members stop with 78.
    const byId = async (x: string) => {
      const name = (await truth()).find((r) => r.id === x)?.name;
      return c.members.find((m) => m.name === name)!;
    };
    for (const format of ['simple', 'json']) {
      const rows = await truth();
      // The leader now, not before: a slow machine may have held an election since.
      const lead = await leaderId();
      const target = rows.find((r) => r.id !== lead)!;
      const member = await byId(target.id);
      const r = await retried(`removing ${target.name}`, ['member', 'remove', target.id, ...all, '-w', format], /unhealthy cluster/);
      if (format === 'json') assert.ok(!parseJsonIds(r.stdout).members.some((m: any) => m.ID === target.id), r.stdout);
      else assert.equal(r.stdout, `Member ${target.id} removed from cluster ${cid}\n`);
      assert.equal(await c.exitOf(member), 78, `${member.name} stops for good once removed`);
      all = ['--endpoints', c.endpoints().join(',')];
    }
    assert.equal((await truth(c.endpoints()[0])).length, 2);

    // A 2-voter cluster: removing the follower needs --yes; --yes does it.
    const lead = await leaderId();
    const follower = (await truth(c.endpoints()[0])).find((r) => r.id !== lead)!;
    const followerProc = await byId(follower.id);
    failsWithOneLine(await lifeboat('member', 'remove', follower.id, ...all), EXIT.REFUSED, 'the cluster has 2 voting members', '--yes');
    assert.equal((await truth(c.endpoints()[0])).length, 2, 'nothing changed');
    const yes = await retried('removing with --yes', ['member', 'remove', follower.id, '--yes', ...all, '-w', 'table'], /unhealthy cluster/);
    assert.equal(yes.stdout, `Member ${follower.id} removed from cluster ${cid}\n`);
    assert.equal(await c.exitOf(followerProc), 78);
    all = ['--endpoints', c.endpoints().join(',')];
    assert.deepEqual(
      (await truth(c.endpoints()[0])).map((r) => r.id),
      [lead],
    );
  },
);

test('member add prints a lifeboat server line that, run as printed, starts a member that joins', { timeout: 120_000 }, async () => {
  const m5 = c.define('m5');
  const r = parseJsonIds(
    ok(await lifeboat('member', 'add', 'm5', '--peer-urls', m5.peerUrl, '--client-urls', m5.clientUrl, '--learner', ...all, '-w', 'json')),
  );
  assert.match(r.member.ID, HEX);
  assert.match(r.header.cluster_id, HEX);
  const argv = (r.command as string).split(' ');
  assert.deepEqual(argv.slice(0, 2), ['lifeboat', 'server']);
  assert.ok(argv.includes('--data-dir') && argv.includes('--listen-peer-urls') && argv.includes('--listen-client-urls'), r.command);
  // The default data dir is relative: run it where an operator would, in a fresh directory.
  const cwd = path.join(c.dir, 'host5');
  fs.mkdirSync(cwd);
  m5.dataDir = path.join(cwd, 'm5.etcd');
  c.spawnServer(m5, argv.slice(2), { cwd, env: {} });
  await waitFor('m5 to join and publish its name', async () => (await truth()).find((x) => x.id === r.member.ID)?.status === 'started');
  assert.match(ok(await lifeboat('member', 'list', ...all)), new RegExp(`^${r.member.ID}, started, m5, ${m5.peerUrl}, ${m5.clientUrl}, true$`, 'm'));
  ok(await lifeboat('put', '/e/joined', 'yes', ...all));
  await waitFor(
    'm5 to have the latest write',
    async () => (await lifeboat('get', '/e/joined', '--consistency', 's', '--endpoints', m5.client)).stdout === '/e/joined\nyes\n',
  );
  assert.ok(fs.existsSync(path.join(m5.dataDir, 'member')), 'the data dir the line named');
});
