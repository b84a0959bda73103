// Survivors of two different clusters given together (a staging data dir beside
// production's): the smaller cluster has the higher Raft index, so comparing logs
// across clusters would pick it. The plan, the playbook and the recover session
// never choose between clusters: the operator names one (--cluster-id, or typed at
// the terminal), only that cluster's sources are compared, and Lost names the
// other cluster's keys.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ackedWriter } from '../support/ackedWriter.js';
import { BIN, LifeboatCluster, etcdctl, killByLock, lifeboat, run, waitFor } from '../support/lifeboatCluster.js';
import { requireTool } from '../support/tools.js';

const FENCE_RECORD = 'lifeboat-fence.json';

interface Inspected {
  clusterId: string;
  keyCount: number;
  lastTerm: number;
  lastIndex: number;
}

/** Puts through `endpoint` until `count` were acknowledged (bounded), under `prefix`. */
async function write(endpoint: string, prefix: string, count: number): Promise<void> {
  const w = ackedWriter(endpoint, prefix);
  try {
    await waitFor(`${count} acknowledged writes`, () => w.acked.length >= count, 30_000, 50);
  } finally {
    await w.stop();
  }
}

describe('survivors of two different clusters', () => {
  let staging: LifeboatCluster;
  let prod: LifeboatCluster;
  let stagingDir = '';
  let prodDir = '';
  let s: Inspected;
  let p: Inspected;
  const session = `lifeboat-twoclusters-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync('tmux', args, { encoding: 'utf8', timeout: 5000 });
  const screen = () => tmux('capture-pane', '-t', session, '-p', '-J', '-S', '-1000');
  const started: string[] = [];

  before(async () => {
    [staging, prod] = await Promise.all([LifeboatCluster.start('twoclusters-staging', 1), LifeboatCluster.start('twoclusters-prod', 1)]);
    stagingDir = staging.members[0].dataDir;
    prodDir = prod.members[0].dataDir;
    // Production: 60 keys. Staging: 150 writes, then all but 3 keys deleted, so a longer log and fewer keys.
    await write(prod.members[0].client, 'prod/', 60);
    await write(staging.members[0].client, 'tmp/', 150);
    assert.equal((await etcdctl(staging.members[0].client, 'del', '--prefix', 'tmp/')).code, 0);
    for (const k of ['a', 'b', 'c']) assert.equal((await etcdctl(staging.members[0].client, 'put', `staging/${k}`, 'v')).code, 0);
    await Promise.all([staging.kill(staging.members[0], 'SIGTERM'), prod.kill(prod.members[0], 'SIGTERM')]);
    const inspect = async (dir: string) => JSON.parse((await lifeboat('datadir', 'inspect', dir, '-w', 'json')).stdout) as Inspected;
    [s, p] = await Promise.all([inspect(stagingDir), inspect(prodDir)]);
    // The setup this is about: two clusters, and staging's log wins by Raft's rule while production holds more keys.
    assert.notEqual(s.clusterId, p.clusterId);
    assert.ok(s.keyCount < p.keyCount, `staging ${s.keyCount} keys, production ${p.keyCount}`);
    assert.ok(s.lastTerm > p.lastTerm || (s.lastTerm === p.lastTerm && s.lastIndex > p.lastIndex), JSON.stringify({ s, p }));
  });
  after(async () => {
    try {
      tmux('kill-session', '-t', session);
    } catch {
      // never started, or already gone
    }
    for (const d of started) killByLock(d);
    await Promise.all([staging?.stopAll(), prod?.stopAll()]);
  });

  test('the plan refuses to choose between clusters (exit 3, both named) and shows what each choice loses', async () => {
    const r = await lifeboat('recover', 'plan', '--from-data-dir', stagingDir, '--from-data-dir', prodDir);
    assert.equal(r.code, 3, `${r.stdout}\n${r.stderr}`);
    const err = r.stderr.trim();
    assert.equal(err.split('\n').length, 1, err);
    assert.match(err, /2 different clusters/);
    assert.ok(err.includes(s.clusterId) && err.includes(p.clusterId), err);
    assert.match(err, /pass --cluster-id ID/);
    // Said first, then the sources by cluster, then what each choice loses; nothing recommended.
    assert.match(r.stdout.split('\n')[0], /^These sources are from 2 different clusters/);
    assert.doesNotMatch(r.stdout, /Recommended:|nothing the sources hold/);
    assert.ok(r.stdout.includes(`choosing cluster ${s.clusterId} loses cluster ${p.clusterId}'s ${p.keyCount} keys held by ${prodDir}`), r.stdout);
    assert.ok(r.stdout.includes(`choosing cluster ${p.clusterId} loses cluster ${s.clusterId}'s ${s.keyCount} keys held by ${stagingDir}`), r.stdout);

    const j = await lifeboat('recover', 'plan', '--from-data-dir', stagingDir, '--from-data-dir', prodDir, '-w', 'json');
    assert.equal(j.code, 3, j.stderr);
    const o = JSON.parse(j.stdout);
    assert.deepEqual(
      o.clusters.map((g: { clusterId: string; sources: number[]; keys: number }) => [g.clusterId, g.sources.map((i) => o.sources[i].path), g.keys]),
      [
        [s.clusterId, [stagingDir], s.keyCount],
        [p.clusterId, [prodDir], p.keyCount],
      ],
    );
    assert.equal(o.recommended, undefined);
    assert.match(o.refused, /different clusters/);
  });

  test("--cluster-id: only that cluster is compared, Lost names the other cluster's keys; an unknown ID is refused (exit 2)", async () => {
    const r = await lifeboat('recover', 'plan', '--from-data-dir', stagingDir, '--from-data-dir', prodDir, '--cluster-id', p.clusterId);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout.split('\n')[0], /^These sources are from 2 different clusters/);
    assert.ok(r.stdout.includes(`Recommended: ${prodDir}\n`), r.stdout);
    assert.ok(r.stdout.includes(`cluster ${s.clusterId}'s ${s.keyCount} keys held by ${stagingDir}: another cluster`), r.stdout);
    assert.doesNotMatch(r.stdout, /nothing the sources hold/);

    // JSON carries the grouping and the chosen cluster; the ID as `datadir inspect` prints it (16 digits) is taken too.
    const j = await lifeboat(
      'recover',
      'plan',
      '--from-data-dir',
      stagingDir,
      '--from-data-dir',
      prodDir,
      '--cluster-id',
      p.clusterId.padStart(16, '0'),
      '-w',
      'json',
    );
    assert.equal(j.code, 0, j.stderr);
    const plan = JSON.parse(j.stdout);
    assert.equal(plan.sources[plan.recommended].path, prodDir);
    assert.equal(plan.clusterId, p.clusterId);
    assert.deepEqual(
      plan.clusters.map((g: { clusterId: string; sources: number[] }) => [g.clusterId, g.sources.map((i) => plan.sources[i].path)]),
      [
        [s.clusterId, [stagingDir]],
        [p.clusterId, [prodDir]],
      ],
    );
    assert.ok(
      plan.loses.some((l: string) => l.startsWith(`cluster ${s.clusterId}'s ${s.keyCount} keys held by ${stagingDir}`)),
      JSON.stringify(plan.loses),
    );

    // Naming staging recommends staging, and production's keys are what it loses.
    const other = JSON.parse(
      (await lifeboat('recover', 'plan', '--from-data-dir', stagingDir, '--from-data-dir', prodDir, '--cluster-id', s.clusterId, '-w', 'json')).stdout,
    );
    assert.equal(other.sources[other.recommended].path, stagingDir);
    assert.ok(
      other.loses.some((l: string) => l.startsWith(`cluster ${p.clusterId}'s ${p.keyCount} keys held by ${prodDir}`)),
      JSON.stringify(other.loses),
    );

    const unknown = await lifeboat('recover', 'plan', '--from-data-dir', stagingDir, '--from-data-dir', prodDir, '--cluster-id', 'abc123');
    assert.equal(unknown.code, 2, unknown.stderr);
    assert.equal(unknown.stderr.trim().split('\n').length, 1, unknown.stderr);
    assert.match(unknown.stderr, /--cluster-id abc123 is not the cluster of any source/);
    assert.ok(unknown.stderr.includes(`${s.clusterId} (${stagingDir})`) && unknown.stderr.includes(`${p.clusterId} (${prodDir})`), unknown.stderr);
  });

  test("the playbook refuses another cluster's data dir among old-data-dirs before anything changes", async () => {
    const target = path.join(prod.dir, 'never');
    started.push(target);
    const r = await run(
      process.execPath,
      [
        BIN,
        'playbook',
        'run',
        'recover-from-quorum-loss',
        '--yes',
        '--reason',
        'test: two clusters',
        '--audit-db',
        path.join(prod.dir, 'audit-refused.db'),
        '--set',
        `source=${prodDir}`,
        '--set',
        `old-data-dirs=${stagingDir}`,
        '--set',
        `data-dir=${target}`,
        '--set',
        'name=m1',
        '--set',
        `peer-url=${prod.members[0].peerUrl}`,
        '--set',
        `client-url=${prod.members[0].clientUrl}`,
      ],
      { timeoutMs: 60_000 },
    );
    assert.equal(r.code, 3, `${r.stdout}\n${r.stderr}`);
    assert.ok(
      (r.stdout + r.stderr).includes(`old data dir ${stagingDir} is of cluster ${s.clusterId}, not the source's cluster ${p.clusterId}`),
      r.stdout + r.stderr,
    );
    assert.ok(!fs.existsSync(target), 'recovery went ahead');
    assert.ok(!fs.existsSync(path.join(stagingDir, FENCE_RECORD)) && !fs.existsSync(path.join(prodDir, FENCE_RECORD)));
  });

  test("at a terminal the session asks which cluster, with no default, and offers only that cluster's source", async () => {
    requireTool('tmux');
    const auditDb = path.join(prod.dir, 'audit-terminal.db');
    tmux(
      'new-session',
      '-d',
      '-s',
      session,
      '-x',
      '250',
      '-y',
      '60',
      `${process.execPath} ${BIN} recover --from-data-dir ${stagingDir} --from-data-dir ${prodDir} --audit-db ${auditDb}; echo EXIT=$?; sleep 120`,
    );
    const waitScreen = (what: RegExp, ms = 30_000) =>
      waitFor(`${what} on the terminal`, () => (what.test(screen()) ? screen() : undefined), ms, 200).catch((e: Error) => {
        throw new Error(`${e.message}; the terminal shows:\n${screen()}`);
      });
    const asked = await waitScreen(/which cluster do you recover\? Type its ID/);
    assert.match(asked, /These sources are from 2 different clusters/);
    assert.doesNotMatch(asked, /Recover from/, 'a source was offered before the cluster was named');
    // Enter alone chooses nothing; a wrong ID is asked again.
    const beforeEnter = screen();
    tmux('send-keys', '-t', session, 'Enter');
    // The prompt takes the key (its screen changes) before the next is typed.
    await waitFor('Enter to be taken', () => screen() !== beforeEnter, 10_000, 100).catch(() => undefined);
    tmux('send-keys', '-t', session, '-l', 'ffff');
    tmux('send-keys', '-t', session, 'Enter');
    await waitScreen(/"ffff" is none of these clusters/);
    assert.doesNotMatch(screen(), /Recover from/);
    tmux('send-keys', '-t', session, '-l', p.clusterId);
    tmux('send-keys', '-t', session, 'Enter');
    const offered = await waitScreen(/Recover from .*\? \(y\/N\)/);
    assert.ok(offered.includes(`Recover from ${prodDir}?`), offered);
    tmux('send-keys', '-t', session, 'n', 'Enter');
    const out = await waitScreen(/EXIT=\d+/);
    assert.match(out, /EXIT=3/, out);
    assert.ok(!fs.existsSync(path.join(prodDir, FENCE_RECORD)) && !fs.existsSync(path.join(stagingDir, FENCE_RECORD)));
  });

  test('scripted, the session refuses a mix of clusters; with --cluster-id it recovers that cluster and leaves the other alone', async () => {
    const target = path.join(prod.dir, 'm1-new');
    const args = [
      'recover',
      '--from-data-dir',
      stagingDir,
      '--from-data-dir',
      prodDir,
      '--yes',
      '--reason',
      'test: two clusters',
      '--audit-db',
      path.join(prod.dir, 'audit-scripted.db'),
      '--set',
      `data-dir=${target}`,
      '--set',
      `client-url=${prod.members[0].clientUrl}`,
    ];
    const refused = await lifeboat(...args);
    assert.equal(refused.code, 3, `${refused.stdout}\n${refused.stderr}`);
    assert.match(refused.stderr, /2 different clusters.*pass --cluster-id ID/);
    assert.ok(!fs.existsSync(target), 'recovery went ahead');

    started.push(target);
    const r = await run(process.execPath, [BIN, ...args, '--cluster-id', p.clusterId], { timeoutMs: 120_000 });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const keys = await etcdctl(prod.members[0].clientUrl, 'get', '', '--from-key', '--keys-only');
    assert.equal(keys.code, 0, keys.stderr);
    const got = keys.stdout.split('\n').filter(Boolean);
    assert.equal(got.length, p.keyCount);
    assert.ok(
      got.every((k) => k.startsWith('prod/')),
      "only production's keys",
    );
    // Production's survivor is fenced as superseded; staging's data dir is another cluster's: untouched.
    assert.ok(fs.existsSync(path.join(prodDir, FENCE_RECORD)), "the recovered cluster's old data dir is fenced");
    assert.ok(!fs.existsSync(path.join(stagingDir, FENCE_RECORD)), "another cluster's data dir was fenced");
    const still = await lifeboat('datadir', 'inspect', stagingDir, '-w', 'json');
    assert.equal(JSON.parse(still.stdout).keyCount, s.keyCount);
  });
});
