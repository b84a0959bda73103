// The everyday commands through the CLI (node bin/run.js) against a real
// 3-member etcd 3.4 cluster, checked against etcdctl where both can answer.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { EXIT } from '../../src/cli/exitCodes.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { freePorts } from '../support/ports.js';
import { ROOT, etcdctl, expectOk as ok, failsWithOneLine, lifeboat, onPath, parseJsonIds, requireEtcdTools, run, waitFor } from '../support/tools.js';

let cluster: EtcdCluster;
/** --endpoints with all three members */
let all: string[];
/** --endpoints with the first member only */
let first: string[];

before(
  async () => {
    requireEtcdTools();
    cluster = await EtcdCluster.start({ size: 3, portSeed: 'interop/cluster.test' });
    all = ['--endpoints', cluster.endpoints];
    first = ['--endpoints', cluster.endpointOf(cluster.members[0])];
  },
  { timeout: 60_000 },
);

after(
  async () => {
    await cluster?.stop();
  },
  { timeout: 60_000 },
);

const lines = (s: string) =>
  s
    .trim()
    .split('\n')
    .filter((l) => l !== '');

interface Row {
  id: string;
  status: string;
  name: string;
  peer: string;
  client: string;
  learner: boolean;
}

/** etcdctl's own member list (simple output, hex IDs): the ground truth. */
async function etcdctlMembers(): Promise<Row[]> {
  const r = await etcdctl('--endpoints', all[1], 'member', 'list');
  assert.equal(r.code, 0, r.stderr);
  return lines(r.stdout).map((l) => {
    const [id, status, name, peer, client, learner] = l.split(', ');
    return { id: id, status: status, name: name, peer: peer, client: client, learner: learner === 'true' };
  });
}

async function clusterIdHex(): Promise<string> {
  const r = await etcdctl('--endpoints', all[1], 'member', 'list', '-w', 'json');
  return BigInt(/"cluster_id":(\d+)/.exec(r.stdout)![1]).toString(16);
}

interface StatusJson {
  Endpoint: string;
  Status: { header: { member_id: string; revision: number }; leader: string; version: string; isLearner: boolean; raftIndex: number };
}

async function leaderAndFollowers(): Promise<{ leader: string; followers: string[] }> {
  const r = await lifeboat('endpoint', 'status', ...all, '-w', 'json');
  const list = parseJsonIds(ok(r)) as StatusJson[];
  const leader = list[0].Status.leader;
  return { leader, followers: list.map((s) => s.Status.header.member_id).filter((id) => id !== leader) };
}

test('member list: simple output matches etcdctl; table and json carry the same members', async () => {
  const truth = await etcdctlMembers();
  assert.equal(truth.length, 3);

  const simple = ok(await lifeboat('member', 'list', ...all));
  const etcdctlSimple = (await etcdctl('--endpoints', all[1], 'member', 'list')).stdout;
  assert.deepEqual(lines(simple).sort(), lines(etcdctlSimple).sort(), 'same lines as etcdctl member list');
  for (const m of cluster.members) assert.ok(simple.includes(`, started, ${m.name}, ${m.peerUrl}, ${m.clientUrl}, false`), simple);

  const table = ok(await lifeboat('member', 'list', ...first, '-w', 'table'));
  assert.match(table, /\|\s+ID\s+\|\s+STATUS\s+\|\s+NAME\s+\|\s+PEER ADDRS\s+\|\s+CLIENT ADDRS\s+\|\s+IS LEARNER\s+\|/);
  for (const t of truth) {
    assert.match(table, new RegExp(`\\| ${t.id.padStart(16, '0')} \\| started \\| ${t.name}\\s+\\| ${t.peer}\\s+\\| ${t.client}\\s+\\|\\s+false \\|`));
  }

  // The IDs in JSON are etcdctl's: the same uint64 numbers, digit for digit.
  const idTexts = (t: string) => [...t.matchAll(/"(ID|cluster_id|member_id)":(\d+)[,}]/g)].map((m) => `${m[1]}=${m[2]}`).sort();
  const theirs = idTexts((await etcdctl('--endpoints', first[1], 'member', 'list', '-w', 'json')).stdout);
  assert.equal(theirs.length, 5);
  assert.deepEqual(idTexts(ok(await lifeboat('member', 'list', ...first, '-w', 'json'))), theirs);

  const json = parseJsonIds(ok(await lifeboat('member', 'list', ...first, '-w', 'json'))) as {
    header: { cluster_id: string; member_id: string };
    members: Array<{ ID: string; name: string; peerURLs: string[]; clientURLs: string[]; isLearner: boolean }>;
  };
  assert.equal(json.header.cluster_id, await clusterIdHex());
  assert.ok(truth.some((t) => t.id === json.header.member_id));
  assert.deepEqual(
    json.members
      .map((m) => ({ id: m.ID, name: m.name, peer: m.peerURLs.join(','), client: m.clientURLs.join(','), learner: m.isLearner }))
      .sort((a, b) => a.name.localeCompare(b.name)),
    truth.map((t) => ({ id: t.id, name: t.name, peer: t.peer, client: t.client, learner: t.learner })).sort((a, b) => a.name.localeCompare(b.name)),
  );
});

test('put, get and del: simple, json and table, --prefix, ranges, --rev, --limit, --keys-only, --count-only, --prev-kv', async () => {
  assert.equal(ok(await lifeboat('put', '/lb/a', '1', ...all)), 'OK\n');
  const firstRev = (parseJsonIds(ok(await lifeboat('get', '/lb/a', ...all, '-w', 'json'))) as { kvs: Array<{ mod_revision: number }> }).kvs[0].mod_revision;
  assert.equal(ok(await lifeboat('put', '/lb/b', '2', ...all)), 'OK\n');
  assert.equal(ok(await lifeboat('put', '/lb/c', '3', ...first)), 'OK\n');
  assert.equal(ok(await lifeboat('put', '/lb/a', '10', '--prev-kv', ...all)), 'OK\n/lb/a\n1\n');
  assert.equal((await etcdctl('--endpoints', all[1], 'get', '/lb/a', '--print-value-only')).stdout, '10\n', 'etcdctl sees the write');

  assert.equal(ok(await lifeboat('get', '/lb/a', ...all)), '/lb/a\n10\n');
  const prefix = ok(await lifeboat('get', '/lb/', '--prefix', ...all));
  assert.equal(prefix, '/lb/a\n10\n/lb/b\n2\n/lb/c\n3\n');
  assert.equal(prefix, (await etcdctl('--endpoints', all[1], 'get', '/lb/', '--prefix')).stdout, 'same as etcdctl get --prefix');
  assert.equal(ok(await lifeboat('get', '/lb/a', '/lb/c', ...all)), '/lb/a\n10\n/lb/b\n2\n', '[KEY, END)');
  assert.equal(ok(await lifeboat('get', '/lb/b', '--from-key', ...all)), '/lb/b\n2\n/lb/c\n3\n');
  assert.deepEqual(lines(ok(await lifeboat('get', '/lb/', '--prefix', '--keys-only', ...all))), ['/lb/a', '/lb/b', '/lb/c']);
  assert.equal(ok(await lifeboat('get', '/lb/', '--prefix', '--count-only', ...all)), '3\n');
  assert.equal(ok(await lifeboat('get', '/lb/a', '--rev', String(firstRev), ...all)), '/lb/a\n1\n', 'the value at an older revision');
  assert.equal(
    ok(await lifeboat('get', '/lb/', '--prefix', '--sort-by', 'VALUE', '--order', 'DESCEND', '--consistency', 's', ...all)),
    '/lb/c\n3\n/lb/b\n2\n/lb/a\n10\n',
  );

  const limited = parseJsonIds(ok(await lifeboat('get', '/lb/', '--prefix', '--limit', '2', ...all, '-w', 'json'))) as {
    header: { cluster_id: string; member_id: string; revision: number };
    kvs: Array<{ key: string; value: string; create_revision: number; mod_revision: number; version: number }>;
    more: boolean;
    count: number;
  };
  assert.equal(limited.kvs.length, 2);
  assert.equal(limited.more, true);
  assert.equal(limited.count, 3);
  assert.equal(Buffer.from(limited.kvs[0].key, 'base64').toString(), '/lb/a');
  assert.equal(Buffer.from(limited.kvs[0].value, 'base64').toString(), '10');
  assert.equal(limited.kvs[0].version, 2);
  assert.equal(limited.header.cluster_id, await clusterIdHex());
  assert.match(limited.header.member_id, /^[0-9a-f]+$/);

  const table = ok(await lifeboat('get', '/lb/', '--prefix', ...all, '-w', 'table'));
  assert.match(table, /\|\s+KEY\s+\|\s+VALUE\s+\|/);
  assert.match(table, /\| \/lb\/b \| 2\s+\|/);

  assert.equal(ok(await lifeboat('del', '/lb/c', '--prev-kv', ...all)), '1\n/lb/c\n3\n');
  assert.equal(ok(await lifeboat('del', '/lb/nothing', ...all)), '0\n');
  const delJson = parseJsonIds(ok(await lifeboat('del', '/lb/', '--prefix', ...all, '-w', 'json'))) as { deleted: number };
  assert.equal(delJson.deleted, 2);
  assert.equal(ok(await lifeboat('get', '/lb/', '--prefix', ...all)), '');
  assert.equal((await etcdctl('--endpoints', all[1], 'get', '/lb/', '--prefix')).stdout, '', 'etcdctl sees them gone');
});

test('endpoint status, health and hashkv: each endpoint on its own, and --cluster', async () => {
  const truth = await etcdctlMembers();
  const status = parseJsonIds(ok(await lifeboat('endpoint', 'status', ...all, '-w', 'json'))) as StatusJson[];
  assert.deepEqual(
    status.map((s) => s.Endpoint),
    all[1].split(','),
  );
  assert.deepEqual(status.map((s) => s.Status.header.member_id).sort(), truth.map((t) => t.id).sort(), 'each endpoint answered for itself');
  assert.equal(new Set(status.map((s) => s.Status.leader)).size, 1, 'one leader');
  assert.ok(status.every((s) => s.Status.version === '3.4.23' && !s.Status.isLearner));

  const simple = lines(ok(await lifeboat('endpoint', 'status', ...all)));
  assert.equal(simple.length, 3);
  assert.equal(simple.filter((l) => /, 3\.4\.23, \d+(\.\d)? kB, true, false, /.test(l)).length, 1, `one leader line: ${simple.join(' / ')}`);
  const table = ok(await lifeboat('endpoint', 'status', ...all, '-w', 'table'));
  assert.match(
    table,
    /ENDPOINT\s+\|\s+ID\s+\|\s+VERSION\s+\|\s+DB SIZE\s+\|\s+IS LEADER\s+\|\s+IS LEARNER\s+\|\s+RAFT TERM\s+\|\s+RAFT INDEX\s+\|\s+RAFT APPLIED INDEX\s+\|\s+ERRORS/,
  );

  const viaCluster = lines(ok(await lifeboat('endpoint', 'status', '--cluster', ...first)));
  assert.deepEqual(viaCluster.map((l) => l.split(', ')[0]).sort(), cluster.members.map((m) => m.clientUrl).sort());

  const health = lines(ok(await lifeboat('endpoint', 'health', ...all)));
  assert.equal(health.length, 3);
  for (const [i, ep] of all[1].split(',').entries()) {
    assert.match(health[i], new RegExp(`^${ep} is healthy: successfully committed proposal: took = [\\d.]+(µs|ms|s)$`));
  }
  const healthCluster = lines(ok(await lifeboat('endpoint', 'health', '--cluster', ...first)));
  assert.deepEqual(healthCluster.map((l) => l.split(' ')[0]).sort(), cluster.members.map((m) => m.clientUrl).sort());
  const healthJson = parseJsonIds(ok(await lifeboat('endpoint', 'health', ...first, '-w', 'json'))) as Array<{
    endpoint: string;
    health: boolean;
    took: string;
  }>;
  assert.equal(healthJson[0].health, true);

  // At one revision every member must hash the same; compare with etcdctl's numbers.
  const rev = status[0].Status.header.revision;
  const hashes = lines(ok(await lifeboat('endpoint', 'hashkv', '--cluster', '--rev', String(rev), ...first)));
  assert.equal(hashes.length, 3);
  assert.equal(new Set(hashes.map((l) => l.split(', ')[1])).size, 1, `same hash everywhere: ${hashes.join(' / ')}`);
  const etcdctlHash = lines((await etcdctl('--endpoints', all[1], 'endpoint', 'hashkv', '--rev', String(rev))).stdout);
  assert.deepEqual(
    hashes.map((l) => l.split(', ')[1]),
    etcdctlHash.map((l) => l.split(', ')[1]),
  );
  const hashJson = parseJsonIds(ok(await lifeboat('endpoint', 'hashkv', '--rev', String(rev), ...first, '-w', 'json'))) as Array<{
    HashKV: { header: { member_id: string }; hash: number };
  }>;
  assert.equal(String(hashJson[0].HashKV.hash), hashes[0].split(', ')[1]);
  assert.ok(
    truth.some((t) => t.id === hashJson[0].HashKV.header.member_id),
    "member_id as etcdctl's uint64 number",
  );

  // One endpoint down: the others still report, the dead one is one error line, exit 1.
  const [deadPort] = await freePorts(1, 'interop/cluster.test/dead');
  const mixed = await lifeboat('endpoint', 'status', '--endpoints', `${all[1]},127.0.0.1:${deadPort}`, '--dial-timeout', '500ms');
  assert.equal(mixed.code, EXIT.FAILURE);
  assert.equal(lines(mixed.stdout).length, 3);
  failsWithOneLine({ ...mixed, stdout: '' }, EXIT.FAILURE, `127.0.0.1:${deadPort}`, 'connection refused');
});

test('alarm list is empty; a raised NOSPACE alarm is listed and disarmed', async () => {
  assert.equal(ok(await lifeboat('alarm', 'list', ...all)), '');
  const truth = await etcdctlMembers();
  const target = BigInt(`0x${truth[0].id}`);
  const client = new EtcdClient({ endpoints: all[1] });
  try {
    await client.alarm('ACTIVATE', target, 'NOSPACE');
  } finally {
    client.close();
  }
  assert.equal(ok(await lifeboat('alarm', 'list', ...all)), `memberID:${truth[0].id} alarm:NOSPACE\n`);
  assert.match((await etcdctl('--endpoints', all[1], 'alarm', 'list')).stdout, /alarm:NOSPACE/);
  const listJson = parseJsonIds(ok(await lifeboat('alarm', 'list', ...all, '-w', 'json'))) as { alarms: Array<{ memberID: string; alarm: string }> };
  assert.deepEqual(listJson.alarms, [{ memberID: truth[0].id, alarm: 'NOSPACE' }]);
  assert.equal(ok(await lifeboat('alarm', 'disarm', ...all)), `memberID:${truth[0].id} alarm:NOSPACE\n`);
  assert.equal(ok(await lifeboat('alarm', 'list', ...all)), '');
  assert.equal(ok(await lifeboat('put', '/lb/after-alarm', 'x', ...all)), 'OK\n', 'writes work again');
});

test('compaction discards older revisions; defrag runs per endpoint and with --cluster', async () => {
  for (let i = 0; i < 3; i++) ok(await lifeboat('put', '/lb/compact', String(i), ...all));
  const rev = (parseJsonIds(ok(await lifeboat('get', '/lb/compact', ...all, '-w', 'json'))) as { header: { revision: number } }).header.revision;
  const compacted = parseJsonIds(ok(await lifeboat('compaction', String(rev - 1), '--physical', ...all, '-w', 'json'))) as {
    revision: number;
    header: { cluster_id: string };
  };
  assert.equal(compacted.revision, rev - 1);
  assert.equal(compacted.header.cluster_id, await clusterIdHex());
  failsWithOneLine(
    await lifeboat('get', '/lb/compact', '--rev', String(rev - 2), ...all),
    EXIT.FAILURE,
    'etcdserver: mvcc: required revision has been compacted',
  );
  failsWithOneLine(await lifeboat('compaction', 'abc', ...all), EXIT.USAGE, 'invalid revision "abc"');

  assert.equal(ok(await lifeboat('defrag', ...first)), `Finished defragmenting etcd member[${first[1]}]\n`);
  const defragAll = parseJsonIds(ok(await lifeboat('defrag', '--cluster', ...first, '--command-timeout', '20s', '-w', 'json'))) as Array<{
    endpoint: string;
    defragmented: boolean;
  }>;
  assert.deepEqual(defragAll.map((d) => `${d.endpoint} ${d.defragmented}`).sort(), cluster.members.map((m) => `${m.clientUrl} true`).sort());
});

test('snapshot save: one endpoint only; the file has the sha256 trailer and matches etcdctl snapshot status', async () => {
  const file = path.join(cluster.dir, 'backup.db');
  failsWithOneLine(await lifeboat('snapshot', 'save', file, ...all), EXIT.USAGE, 'exactly one endpoint, got 3');
  assert.equal(existsSync(file), false);

  for (let i = 0; i < 20; i++) ok(await lifeboat('put', `/lb/snap/${i}`, `v${i}`, ...first));
  // etcd's --flag=true|false for booleans, on oclif's path too (it read "false" as a stray argument: here a range end).
  assert.equal(ok(await lifeboat('get', '/lb/snap/', '--prefix=true', '--count-only=1', ...first)).trim(), '20');
  assert.equal(ok(await lifeboat('get', '/lb/snap/1', '--prefix=false', '--count-only=true', ...first)).trim(), '1');
  failsWithOneLine(await lifeboat('get', '/lb/snap/', '--prefix=maybe', ...first), EXIT.USAGE, 'invalid --prefix="maybe": expected true or false');
  const out = ok(await lifeboat('snapshot', 'save', file, ...first));
  const bytes = readFileSync(file);
  assert.equal(existsSync(`${file}.part`), false);
  assert.equal(bytes.length % 512, 32, 'a whole number of pages plus the 32-byte sha256');
  const db = bytes.subarray(0, bytes.length - 32);
  assert.deepEqual(createHash('sha256').update(db).digest(), bytes.subarray(bytes.length - 32), 'trailer = sha256 of the database');
  assert.equal(statSync(file).mode & 0o777, 0o600);

  const m =
    /^Snapshot saved at (.+)\nfrom (\S+): .* \((\d+) bytes\), revision (\d+), (\d+) keys\nfile sha256 ([0-9a-f]{64}) .*\ntook [\d.]+s, [\d.]+ MB\/s\n$/.exec(
      out,
    );
  assert.ok(m, `snapshot save output: ${out}`);
  assert.equal(m[1], file);
  assert.equal(Number(m[3]), bytes.length);
  assert.equal(m[6], createHash('sha256').update(bytes).digest('hex'), "printed sha256 is the whole file's");

  const st = await etcdctl('snapshot', 'status', file, '-w', 'json');
  assert.equal(st.code, 0, st.stderr);
  const status = JSON.parse(st.stdout) as { revision: number; totalKey: number; totalSize: number };
  assert.equal(Number(m[4]), status.revision, 'same revision as etcdctl snapshot status');
  // etcdctl counts every bbolt pair (all revisions, members, meta…); ours is the live keys.
  const live = Number(ok(await lifeboat('get', '', '--prefix', '--count-only', ...first)).trim());
  assert.equal(Number(m[5]), live);
  assert.ok(status.totalKey >= live, `etcdctl totalKey ${status.totalKey} ≥ live keys ${live}`);
  assert.equal(status.totalSize, db.length);

  // Saved again onto the same file: --force, or it is refused (the file may be the only backup).
  const json = parseJsonIds(ok(await lifeboat('snapshot', 'save', file, '--force', ...first, '-w', 'json'))) as {
    size: number;
    sha256: string;
    revision: number;
    keyCount: number;
  };
  assert.equal(json.sha256, createHash('sha256').update(readFileSync(file)).digest('hex'));

  // bin/run.js runs snapshot save without oclif: the flag forms oclif takes, and etcdctl's variables, work the same.
  const inline = parseJsonIds(ok(await lifeboat('snapshot', 'save', `--endpoints=${first[1]}`, '-wjson', '--command-timeout=30s', '--force=true', file))) as {
    keyCount: number;
  };
  assert.equal(inline.keyCount, live);
  const env: NodeJS.ProcessEnv = { ...process.env, ETCDCTL_ENDPOINTS: first[1], ETCDCTL_COMMAND_TIMEOUT: '30s' };
  for (const k of Object.keys(env)) if (k.startsWith('LIFEBOAT_')) delete env[k];
  const fromEnv = await run(process.execPath, [path.join(ROOT, 'bin', 'run.js'), 'snapshot', 'save', '-w', 'table', '--force', file], { env });
  assert.equal(fromEnv.code, 0, fromEnv.stderr);
  assert.match(fromEnv.stdout, /\| +PATH +\| +SIZE +\|/);
  const other = path.join(cluster.dir, 'not-written.db');
  failsWithOneLine(await lifeboat('snapshot', 'save', other, ...first, '--command-timeout', '5x'), EXIT.USAGE, 'invalid --command-timeout "5x"');
  failsWithOneLine(await lifeboat('snapshot', 'save', ...first), EXIT.USAGE, 'Missing 1 required arg: file');
  assert.equal(existsSync(other), false);
});

test("move-leader: to a follower via all endpoints, and back via a follower's endpoint alone", async () => {
  const { leader, followers } = await leaderAndFollowers();
  const target = followers[0];
  assert.equal(ok(await lifeboat('move-leader', target, ...all)), `Leadership transferred from ${leader} to ${target}\n`);
  await waitFor('the new leader', async () => (await leaderAndFollowers()).leader === target, { timeoutMs: 30_000 });

  // Only a follower's endpoint given: the leader is found through its client URLs.
  const truth = await etcdctlMembers();
  const follower = truth.find((t) => t.id !== target)!;
  const back = parseJsonIds(ok(await lifeboat('move-leader', leader, '--endpoints', follower.client, '-w', 'json'))) as { from: string; to: string };
  assert.deepEqual([back.from, back.to], [target, leader], "etcdctl's uint64 numbers");
  await waitFor('the old leader back', async () => (await leaderAndFollowers()).leader === leader, { timeoutMs: 30_000 });

  failsWithOneLine(await lifeboat('move-leader', 'abcdef', ...all), EXIT.FAILURE, 'etcdserver: bad leader transferee');
});

test('bad input: unknown member, malformed ID, unreachable endpoint, removing the leader without --yes', async () => {
  const before = await etcdctlMembers();

  failsWithOneLine(await lifeboat('member', 'remove', '1234abcd', ...first), EXIT.FAILURE, `${first[1]}: etcdserver: member not found`);
  const bad = failsWithOneLine(await lifeboat('member', 'remove', 'xyz', ...first), EXIT.USAGE);
  assert.equal(bad, 'Error: invalid member ID "xyz": expected hex, e.g. 8e9e05c52164694d, or the decimal ID -w json prints\n');
  failsWithOneLine(await lifeboat('member', 'promote', 'not-hex', ...first), EXIT.USAGE, 'invalid member ID "not-hex"');
  failsWithOneLine(await lifeboat('member', 'list', '--endpoints', 'localhost'), EXIT.USAGE, 'invalid endpoint "localhost"');
  failsWithOneLine(await lifeboat('member', 'list', ...first, '--dial-timeout', '2'), EXIT.USAGE, '--dial-timeout');

  const [deadPort] = await freePorts(1, 'interop/cluster.test/unreachable');
  const unreachable = await lifeboat('member', 'list', '--endpoints', `127.0.0.1:${deadPort}`, '--dial-timeout', '1s');
  failsWithOneLine(unreachable, EXIT.FAILURE, `cannot reach 127.0.0.1:${deadPort} within 1s (connection refused); check --endpoints`);
  assert.ok(unreachable.ms < 1000 + 4000, `gave up within the dial timeout (plus process start): ${unreachable.ms}ms`);

  const { leader } = await leaderAndFollowers();
  const refused = failsWithOneLine(await lifeboat('member', 'remove', leader, ...all), EXIT.REFUSED, 'it is the leader', '--yes', leader);
  assert.match(refused, /^Error: refusing to remove member [0-9a-f]+ \(infra\d\): it is the leader/);
  assert.deepEqual(await etcdctlMembers(), before, 'the cluster is unchanged');
});

test('on a terminal, removing the leader asks first and answering no changes nothing', async () => {
  assert.ok(onPath('script'), 'util-linux `script` is required for this test: apt-get install -y bsdutils');
  const before = await etcdctlMembers();
  const { leader } = await leaderAndFollowers();
  const cmd = [process.execPath, path.join(ROOT, 'bin', 'run.js'), 'member', 'remove', leader, ...all].map((a) => `'${a}'`).join(' ');
  const out = await new Promise<{ code: number | null; text: string }>((resolve) => {
    const child = spawn('script', ['-qec', `${cmd}; echo EXIT=$?`, '/dev/null'], { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' } });
    let text = '';
    let answered = false;
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      text += d;
      if (!answered && text.includes('Go ahead?')) {
        answered = true;
        child.stdin.write('n\r');
      }
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, text });
    });
  });
  const plain = stripVTControlCharacters(out.text);
  assert.match(plain, new RegExp(`About to remove member ${leader} \\(infra\\d\\): it is the leader`));
  assert.match(plain, /did not remove member .*: not confirmed; nothing changed/);
  assert.match(plain, /EXIT=3/);
  assert.deepEqual(await etcdctlMembers(), before);
});

test('member add --learner, start it for real from the printed settings, promote, update, remove', { timeout: 120_000 }, async () => {
  const [clientPort, peerPort] = await cluster.freePorts();
  const peerUrl = `http://127.0.0.1:${peerPort}`;
  const cid = await clusterIdHex();

  // etcd 3.4 refuses membership changes until every voter has been connected for 5 s.
  const added = await waitFor(
    'member add to pass the strict reconfiguration check',
    async () => {
      const r = await lifeboat('member', 'add', 'infra4', '--peer-urls', peerUrl, '--learner', ...all);
      if (r.code === 0) return r;
      if (r.stderr.includes('etcdserver: unhealthy cluster')) return false;
      throw new Error(`member add failed: ${r.stderr}`);
    },
    { timeoutMs: 30_000, intervalMs: 500 },
  );
  const out = added.stdout;
  const idMatch = new RegExp(`^Member ([0-9a-f]+) added as learner to cluster ${cid}\\n`).exec(out);
  assert.ok(idMatch, out);
  const id = idMatch[1];
  const expected = [...cluster.members.map((m) => `${m.name}=${m.peerUrl}`), `infra4=${peerUrl}`].sort();
  // Against etcd: etcd's own block, as etcdctl prints it, and an etcd command line.
  const initialCluster = /^ETCD_INITIAL_CLUSTER="(.*)"$/m.exec(out)?.[1] ?? '';
  assert.deepEqual(initialCluster.split(',').sort(), expected, 'every member by name, and the new one');
  assert.ok(out.includes(`ETCD_NAME="infra4"\n`), out);
  assert.ok(out.includes(`ETCD_INITIAL_ADVERTISE_PEER_URLS="${peerUrl}"\n`), out);
  assert.ok(out.includes(`ETCD_INITIAL_CLUSTER_STATE="existing"\n`), out);
  assert.doesNotMatch(out, /LIFEBOAT_/);
  assert.ok(
    out.includes(
      `etcd --name infra4 --data-dir infra4.etcd --listen-peer-urls ${peerUrl} --initial-advertise-peer-urls ${peerUrl} --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 --initial-cluster ${initialCluster} --initial-cluster-state existing`,
    ),
    out,
  );

  let rows = await etcdctlMembers();
  assert.deepEqual(
    rows.find((r) => r.id === id),
    { id, status: 'unstarted', name: '', peer: peerUrl, client: '', learner: true },
  );
  assert.match(ok(await lifeboat('member', 'list', ...all)), new RegExp(`^${id}, unstarted, , ${peerUrl}, , true$`, 'm'));

  // Phase 2: real etcd, configured by the printed environment as it is.
  const env = Object.fromEntries([...out.matchAll(/^(ETCD_[A-Z_]+)="(.*)"$/gm)].map((mm) => [mm[1], mm[2]]));
  assert.equal(Object.keys(env).length, 4);
  const learner = await cluster.startJoining('infra4', clientPort, peerPort, env, { learner: true });
  await waitFor('the learner to publish its name', async () => (await etcdctlMembers()).find((r) => r.id === id)?.status === 'started');
  assert.match(ok(await lifeboat('member', 'list', ...all)), new RegExp(`^${id}, started, infra4, ${peerUrl}, ${learner.clientUrl}, true$`, 'm'));

  // Promote once caught up: etcd refuses until the learner is in sync with the leader.
  const promoted = await waitFor(
    'the learner to be promotable',
    async () => {
      const r = await lifeboat('member', 'promote', id, ...all);
      if (r.code === 0) return r;
      if (r.stderr.includes('in sync with leader')) return false;
      throw new Error(`member promote failed: ${r.stderr}`);
    },
    { timeoutMs: 30_000, intervalMs: 500 },
  );
  assert.equal(promoted.stdout, `Member ${id} promoted in cluster ${cid}\n`);
  rows = await etcdctlMembers();
  assert.equal(rows.find((r) => r.id === id)?.learner, false);

  // Update with the same peer URL (a real change would need a restart with new flags),
  // naming the member by its hex ID and by the decimal ID -w json prints.
  assert.equal(ok(await lifeboat('member', 'update', id, '--peer-urls', peerUrl, ...all)), `Member ${id} updated in cluster ${cid}\n`);
  const decimal = BigInt(`0x${id}`).toString();
  assert.equal(ok(await lifeboat('member', 'update', decimal, '--peer-urls', peerUrl, ...all)), `Member ${id} updated in cluster ${cid}\n`);
  const updated = parseJsonIds(ok(await lifeboat('member', 'update', id, '--peer-urls', peerUrl, ...all, '-w', 'json'))) as {
    header: { cluster_id: string };
    members: Array<{ ID: string; peerURLs: string[] }>;
  };
  assert.equal(updated.header.cluster_id, cid);
  assert.deepEqual(updated.members.find((m) => m.ID === id)?.peerURLs, [peerUrl]);

  // A follower of 4 voters: routine, no --yes needed.
  const { leader } = await leaderAndFollowers();
  assert.notEqual(leader, id);
  const removed = await waitFor(
    'member remove to pass the strict reconfiguration check',
    async () => {
      const r = await lifeboat('member', 'remove', id, ...all);
      if (r.code === 0) return r;
      if (r.stderr.includes('etcdserver: unhealthy cluster')) return false;
      throw new Error(`member remove failed: ${r.stderr}`);
    },
    { timeoutMs: 30_000, intervalMs: 500 },
  );
  assert.equal(removed.stdout, `Member ${id} removed from cluster ${cid}\n`);
  await cluster.stopMember(learner);
  rows = await etcdctlMembers();
  assert.equal(rows.length, 3);
  assert.ok(!rows.some((r) => r.id === id));
});
