// Two recoveries of a real etcd 3.4 cluster in a row: the internal replay member
// (etcd --force-new-cluster under the name lifeboat-replay) and the old members
// never stay in the recovered cluster's membership. After each recovery `member
// list` and the member records of a `snapshot save` of the cluster hold exactly
// the three members the operator chose; the second recovery's survivor offers
// only them for re-adding. The hand-off of every member (env file, printed
// command) says `existing` with the whole membership: restarted from its env file
// it rejoins, and on a wiped data dir it bootstraps no new cluster.
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EtcdCluster } from '../support/etcdCluster.js';
import { readEnvFile } from '../support/envFile.js';
import { membersVar, playbookRun } from '../support/playbookRun.js';
import { freePorts } from '../support/ports.js';
import { processesUnder, stopProcessesUnder } from '../support/processes.js';
import { BoltDb } from '../../src/etcdfile/index.js';
import { ROOT, etcdctl, lifeboat, requireTool, waitFor } from '../support/tools.js';

interface Chosen {
  name: string;
  peerUrl: string;
  clientUrl: string;
  dataDir: string;
}

/** name=peerURL of every member `member list` shows, and their IDs (hex). */
async function liveMembers(endpoint: string): Promise<{ names: string[]; ids: string[] }> {
  const r = await etcdctl('--endpoints', endpoint, 'member', 'list', '-w', 'json');
  assert.equal(r.code, 0, r.stderr);
  const j = JSON.parse(r.stdout.replace(/"ID":(\d+)/g, '"ID":"$1"')) as { members: Array<{ ID: string; name: string; peerURLs: string[] }> };
  return {
    names: j.members.map((m) => `${m.name}=${m.peerURLs.join(',')}`).sort(),
    ids: j.members.map((m) => BigInt(m.ID).toString(16)).sort(),
  };
}

/** The member records of a `snapshot save` of the cluster, as `lifeboat snapshot status` reads them from the backend. */
async function savedMembers(endpoint: string, file: string): Promise<{ names: string[]; ids: string[] }> {
  const save = await etcdctl('--endpoints', endpoint, 'snapshot', 'save', file);
  assert.equal(save.code, 0, save.stderr);
  const s = await lifeboat('snapshot', 'status', file, '-w', 'json');
  assert.equal(s.code, 0, s.stderr);
  const j = JSON.parse(s.stdout) as { members: Array<{ id: string; name: string; peerURLs: string[] }> };
  return { names: j.members.map((m) => `${m.name}=${m.peerURLs.join(',')}`).sort(), ids: j.members.map((m) => BigInt(`0x${m.id}`).toString(16)).sort() };
}

describe('recovering a real etcd cluster twice in a row', () => {
  let old: EtcdCluster;
  before(async () => {
    old = await EtcdCluster.start({ size: 3, portSeed: 'etcd-ghost-members' });
  });
  after(async () => {
    await stopProcessesUnder(old.dir);
    await old?.stop();
  });

  test('after each recovery the membership is exactly the chosen members, live and in the saved snapshot: no lifeboat-replay, no old IDs', async () => {
    for (let i = 0; i < 20; i++) assert.equal((await etcdctl('--endpoints', old.endpoints, 'put', `k${i}`, `v${i}`)).code, 0);
    const [m1, m2, m3] = old.members;
    m2.proc?.kill('SIGKILL');
    m3.proc?.kill('SIGKILL');
    await Promise.all([old.stopMember(m2), old.stopMember(m3)]);
    await old.stopMember(m1);
    const chosenNames = old.members.map((m) => `${m.name}=${m.peerUrl}`).sort();

    let source = m1.dataDir;
    let others = [m2.dataDir, m3.dataDir];
    for (const round of ['first', 'second']) {
      // The same members on their own URLs each time, in new data dirs.
      const chosen: Chosen[] = old.members.map((m) => ({
        name: m.name,
        peerUrl: m.peerUrl,
        clientUrl: m.clientUrl,
        dataDir: path.join(old.dir, `${round}-${m.name}`),
      }));
      const [r1, ...rest] = chosen;
      if (round === 'second') {
        // What the survivor offers to re-add: the two other members, nothing else.
        const plan = await lifeboat('recover', 'plan', '--from-data-dir', source, '-w', 'json');
        assert.equal(plan.code, 0, plan.stderr);
        const p = JSON.parse(plan.stdout) as { sources: Array<{ report?: { members: Array<{ name: string; peerURLs: string[] }> } }> };
        assert.deepEqual(
          p.sources[0].report?.members.map((m) => `${m.name}=${m.peerURLs.join(',')}`).sort(),
          chosenNames,
          `${round} survivor's member records`,
        );
      }
      const r = await playbookRun(
        'recover-from-quorum-loss',
        {
          source,
          'data-dir': r1.dataDir,
          name: r1.name,
          'peer-url': r1.peerUrl,
          'client-url': r1.clientUrl,
          members: membersVar(rest),
          stabilization: '1s',
          'old-data-dirs': others.join(','),
        },
        path.join(old.dir, 'audit.db'),
        { extra: ['--supervisor', 'print'] },
      );
      assert.equal(r.code, 0, r.out);

      const live = await liveMembers(r1.clientUrl);
      assert.deepEqual(live.names, chosenNames, `${round} recovery: member list`);
      const saved = await savedMembers(r1.clientUrl, path.join(old.dir, `${round}.db`));
      assert.deepEqual(saved.names, chosenNames, `${round} recovery: the snapshot's member records`);
      assert.deepEqual(saved.ids, live.ids, `${round} recovery: the snapshot's member IDs are the live ones`);
      const got = await etcdctl('--endpoints', r1.clientUrl, 'get', 'k', '--prefix', '--keys-only');
      assert.equal(got.stdout.split('\n').filter(Boolean).length, 20, `${round} recovery: every key`);

      // Every member's hand-off: `existing`, the whole membership, in the env file and the printed command.
      for (const m of chosen) {
        const env = readEnvFile(`${m.dataDir}.env`);
        assert.equal(env.ETCD_INITIAL_CLUSTER_STATE, 'existing', `${m.name}'s env file`);
        assert.deepEqual(env.ETCD_INITIAL_CLUSTER.split(',').sort(), chosenNames, `${m.name}'s env file`);
        const command = new RegExp(`^ {4}command {7}etcd --name ${m.name} .*--initial-cluster (\\S+) --initial-cluster-state existing$`, 'm').exec(r.stdout);
        assert.deepEqual(command?.[1].split(',').sort(), chosenNames, `${m.name}'s printed command`);
      }
      if (round === 'first') {
        // Restarted from its env file alone, as its unit would, with its data dir: the member serves in its cluster again.
        await stopProcessesUnder(r1.dataDir);
        const fromUnit = spawn('etcd', [], { env: { PATH: process.env.PATH ?? '', ...readEnvFile(`${r1.dataDir}.env`) }, stdio: 'ignore' });
        try {
          await waitFor(
            'the member started from its env file to be healthy',
            async () => (await etcdctl('--endpoints', r1.clientUrl, 'endpoint', 'health')).code === 0,
            {
              timeoutMs: 30_000,
            },
          );
          assert.deepEqual((await liveMembers(r1.clientUrl)).ids, live.ids);
        } finally {
          fromUnit.kill('SIGTERM');
          await new Promise((resolve) => fromUnit.once('exit', resolve));
        }
      }

      // Quorum lost again: two recovered members die, the third is stopped and is the next survivor.
      for (const m of rest) for (const pid of processesUnder(m.dataDir)) process.kill(pid, 'SIGKILL');
      await stopProcessesUnder(r1.dataDir);
      await waitFor('the recovered members to stop', () => Promise.resolve(chosen.every((m) => processesUnder(m.dataDir).length === 0)), { timeoutMs: 20_000 });
      assert.ok(fs.existsSync(path.join(r1.dataDir, 'member')));
      source = r1.dataDir;
      others = rest.map((m) => m.dataDir);
    }

    // The last survivor's data dir wiped: its unit's settings try to join the (dead) cluster and fail; no new cluster is bootstrapped.
    const last = path.join(old.dir, 'second-infra1');
    fs.renameSync(last, `${last}.aside`);
    const wiped = spawnSync('etcd', [], { env: { PATH: process.env.PATH ?? '', ...readEnvFile(`${last}.env`) }, timeout: 60_000, encoding: 'utf8' });
    assert.ok(
      wiped.status !== null && wiped.status !== 0,
      `etcd on a wiped data dir did not exit with an error (${wiped.status}): ${wiped.stderr.slice(-500)}`,
    );
    assert.match(wiped.stderr, /could not retrieve cluster information|cannot fetch cluster info/);
    assert.ok(!fs.existsSync(path.join(last, 'member', 'wal')), 'a member was bootstrapped on the wiped data dir');
  });
});

describe('the recover session offers no stale member record', () => {
  let c: EtcdCluster;
  const session = `lifeboat-stale-defaults-${process.pid}`;
  const tmux = (...args: string[]) => execFileSync('tmux', args, { encoding: 'utf8', timeout: 5000 });
  const screen = () => tmux('capture-pane', '-t', session, '-p', '-J', '-S', '-1000');
  before(async () => {
    requireTool('tmux');
    c = await EtcdCluster.start({ size: 1, portSeed: 'etcd-ghost-defaults' });
  });
  after(async () => {
    try {
      tmux('kill-session', '-t', session);
    } catch {
      // already gone
    }
    await stopProcessesUnder(c.dir);
    await c?.stop();
  });

  test('a survivor whose backend holds its own old record (a raw etcd 3.4 restore keeps it) is offered nobody to re-add, not itself', async () => {
    const m = c.members[0];
    assert.equal((await etcdctl('--endpoints', m.clientUrl, 'put', 'kept', 'yes')).code, 0);
    const snap = path.join(c.dir, 'raw.db');
    assert.equal((await etcdctl('--endpoints', m.clientUrl, 'snapshot', 'save', snap)).code, 0);
    await c.stopMember(m);
    // etcdctl's own restore, run once and stopped: its backend keeps the old member's record beside the new one.
    const survivor = path.join(c.dir, 'survivor');
    const restore = await etcdctl(
      'snapshot',
      'restore',
      snap,
      '--data-dir',
      survivor,
      '--name',
      m.name,
      '--initial-cluster',
      `${m.name}=${m.peerUrl}`,
      '--initial-advertise-peer-urls',
      m.peerUrl,
    );
    assert.equal(restore.code, 0, restore.stderr);
    const urls = ['--listen-peer-urls', m.peerUrl, '--listen-client-urls', m.clientUrl, '--advertise-client-urls', m.clientUrl];
    const etcd = spawn('etcd', ['--name', m.name, '--data-dir', survivor, ...urls], { stdio: 'ignore' });
    try {
      await waitFor('the restored etcd to be healthy', async () => (await etcdctl('--endpoints', m.clientUrl, 'endpoint', 'health')).code === 0, {
        timeoutMs: 30_000,
      });
    } finally {
      etcd.kill('SIGTERM');
      await new Promise((resolve) => etcd.once('exit', resolve));
    }
    const plan = await lifeboat('recover', 'plan', '--from-data-dir', survivor, '-w', 'json');
    assert.equal(plan.code, 0, plan.stderr);
    const records = (JSON.parse(plan.stdout) as { sources: Array<{ report: { members: Array<{ name: string }> } }> }).sources[0].report.members;
    assert.deepEqual(
      records.map((r) => r.name),
      [m.name, m.name],
      'the survivor holds two records of itself',
    );

    tmux(
      'new-session',
      '-d',
      '-s',
      session,
      '-x',
      '250',
      '-y',
      '50',
      `${process.execPath} ${path.join(ROOT, 'bin', 'run.js')} recover --from-data-dir ${survivor} --audit-db ${path.join(c.dir, 'audit.db')}; sleep 60`,
    );
    const waitScreen = (what: RegExp) =>
      waitFor(`${what} on the terminal`, () => Promise.resolve(what.test(screen()) ? screen() : undefined), { timeoutMs: 30_000, intervalMs: 200 }).catch(
        (e: Error) => {
          throw new Error(`${e.message}; the terminal shows:\n${screen()}`);
        },
      );
    await waitScreen(/Recover from .*\? \(y\/N\)/);
    tmux('send-keys', '-t', session, 'y', 'Enter');
    await waitScreen(/New data dir for the recovered member/);
    tmux('send-keys', '-t', session, 'Enter');
    await waitScreen(/Client URL of the recovered member/);
    tmux('send-keys', '-t', session, 'Enter');
    const members = await waitScreen(/Enter the members, one at a time|Enter other members/);
    assert.doesNotMatch(members, /Re-add these/, members);
    assert.match(members, /Re-add nobody/);
  });
});

describe('a snapshot whose member records fill their own bbolt page', () => {
  let dir: string;
  after(async () => {
    await stopProcessesUnder(dir);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('recovered from it, the cluster holds only its new member, serves every key and takes writes', async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-etcd-members-page-'));
    const [peerPort, clientPort] = await freePorts(2, 'etcd-ghost-members-page');
    const peer = `http://127.0.0.1:${peerPort}`;
    const client = `http://127.0.0.1:${clientPort}`;
    // A long name and 40 peer URLs: one record over a quarter page, so bbolt gives the members bucket a page of its own.
    const name = 'n'.repeat(400);
    const old = spawn(
      'etcd',
      [
        '--name',
        name,
        '--data-dir',
        path.join(dir, 'old'),
        '--listen-peer-urls',
        peer,
        '--initial-advertise-peer-urls',
        peer,
        '--initial-cluster',
        `${name}=${peer}`,
        '--listen-client-urls',
        client,
        '--advertise-client-urls',
        client,
      ],
      { stdio: 'ignore' },
    );
    const snap = path.join(dir, 'backup.db');
    try {
      await waitFor('etcd to be healthy', async () => (await etcdctl('--endpoints', client, 'endpoint', 'health')).code === 0, { timeoutMs: 30_000 });
      const id = (await etcdctl('--endpoints', client, 'member', 'list')).stdout.split(',')[0];
      const urls = Array.from({ length: 40 }, (_, i) => `http://127.0.0.${i + 1}:${peerPort}`).join(',');
      assert.equal((await etcdctl('--endpoints', client, 'member', 'update', id, `--peer-urls=${urls}`)).code, 0);
      assert.equal((await etcdctl('--endpoints', client, 'put', 'kept', 'yes')).code, 0);
      assert.equal((await etcdctl('--endpoints', client, 'snapshot', 'save', snap)).code, 0);
    } finally {
      old.kill('SIGTERM');
      await new Promise((resolve) => old.once('exit', resolve));
    }
    const db = BoltDb.open(snap);
    assert.notEqual(db.bucket('members')?.root, 0n, 'the members bucket has a page of its own');
    db.close();

    const r = await playbookRun(
      'recover-from-quorum-loss',
      { source: snap, 'data-dir': path.join(dir, 'r1'), name: 'r1', 'peer-url': peer, 'client-url': client, runtime: 'etcd', 'assume-dead': name },
      path.join(dir, 'audit.db'),
      { extra: ['--supervisor', 'none'] },
    );
    assert.equal(r.code, 0, r.out);
    assert.deepEqual((await liveMembers(client)).names, [`r1=${peer}`]);
    assert.equal((await etcdctl('--endpoints', client, 'put', 'after', 'yes')).code, 0);
    assert.equal((await etcdctl('--endpoints', client, 'get', 'kept', '--print-value-only')).stdout, 'yes\n');
    assert.deepEqual((await savedMembers(client, path.join(dir, 'after.db'))).names, [`r1=${peer}`]);
  });
});
