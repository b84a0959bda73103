// etcd's Auth API on a real Lifeboat member, driven by real etcdctl 3.4 and the npm
// etcd3 client: enabling auth, users and roles, refusals with etcd's texts (each
// next to the same request succeeding with good credentials), admin-only RPCs, and
// auth surviving a restart, a Lifeboat snapshot restore and a real etcd snapshot
// restore. Then no plain-text password anywhere in the member's logs or files.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Etcd3 } from 'etcd3';
import { LifeboatCluster, etcdctl, lifeboat, run, waitFor, type MemberProc } from '../support/lifeboatCluster.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { clientFor } from '../../src/client/etcdClient.js';
import { ROOT as ROOT_DIR } from '../support/lifeboatCluster.js';

// Distinctive, so that a grep of the data dir can only find them if they leaked.
const ROOT_PW = 'rootPw-7f3a9c1e';
const ALICE_PW = 'alicePw-2b8d4e6f';
const ROOT = `root:${ROOT_PW}`;
const ALICE = `alice:${ALICE_PW}`;

const err = (r: { stdout: string; stderr: string }) =>
  (r.stdout + r.stderr)
    .split('\n')
    .filter((l) => !l.startsWith('{"level"'))
    .join('\n');

describe('auth on a Lifeboat member (etcdctl 3.4, npm etcd3)', () => {
  let c: LifeboatCluster;
  let m: MemberProc;
  const ctl = (...args: string[]) => etcdctl(m.client, ...args);
  const root = (...args: string[]) => etcdctl(m.client, '--user', ROOT, ...args);
  const alice = (...args: string[]) => etcdctl(m.client, '--user', ALICE, ...args);

  before(async () => {
    c = await LifeboatCluster.start('auth-api', 1);
    m = c.members[0];
  });
  after(async () => c?.stopAll());

  test('auth enable needs a root user that holds the root role', async () => {
    const none = await ctl('auth', 'enable');
    assert.equal(none.code, 1);
    assert.match(err(none), /Error: etcdserver: root user does not exist/);
    assert.equal((await ctl('user', 'add', ROOT)).stdout.trim(), 'User root created');
    // etcdctl answers "root user does not have root role" by adding the role and granting it, as against etcd.
    const on = await ctl('auth', 'enable');
    assert.equal(on.code, 0, err(on));
    assert.equal(on.stdout.trim(), 'Authentication Enabled');
  });

  test('without a token a request is refused (user name is empty); a bad password fails; root may do everything', async () => {
    const anon = await ctl('put', 'a', '1');
    assert.equal(anon.code, 1);
    assert.match(err(anon), /Error: etcdserver: user name is empty/);
    const anonGet = await ctl('get', 'a');
    assert.match(err(anonGet), /Error: etcdserver: user name is empty/);
    const bad = await etcdctl(m.client, '--user', 'root:wrong', 'get', 'a');
    assert.notEqual(bad.code, 0);
    assert.match(err(bad), /etcdserver: authentication failed, invalid user ID or password/);
    assert.equal((await root('put', 'a', '1')).stdout.trim(), 'OK');
    assert.equal((await root('get', 'a')).stdout, 'a\n1\n');
    assert.equal((await root('put', 'secret', 's')).stdout.trim(), 'OK');
  });

  test('users and roles: add, grant, get, list, with etcd texts for the refusals', async () => {
    assert.equal((await root('user', 'add', ALICE)).stdout.trim(), 'User alice created');
    assert.match(err(await root('user', 'add', 'alice:other')), /etcdserver: user name already exists/);
    assert.equal((await root('role', 'add', 'app')).stdout.trim(), 'Role app created');
    assert.match(err(await root('role', 'add', 'app')), /etcdserver: role name already exists/);
    assert.equal((await root('role', 'grant-permission', 'app', 'readwrite', '/app/', '--prefix')).stdout.trim(), 'Role app updated');
    assert.equal((await root('role', 'grant-permission', 'app', 'write', 'a')).stdout.trim(), 'Role app updated');
    assert.equal((await root('user', 'grant-role', 'alice', 'app')).stdout.trim(), 'Role app is granted to user alice');
    assert.equal(
      (await root('role', 'get', 'app')).stdout,
      'Role app\nKV Read:\n\t[/app/, /app0) (prefix /app/)\nKV Write:\n\t[/app/, /app0) (prefix /app/)\n\ta\n',
    );
    assert.equal((await root('user', 'get', 'alice')).stdout, 'User: alice\nRoles: app\n');
    assert.equal((await root('user', 'list')).stdout, 'alice\nroot\n');
    assert.equal((await root('role', 'list')).stdout, 'app\nroot\n');
    const json = JSON.parse((await root('user', 'get', 'alice', '-w', 'json')).stdout) as Record<string, unknown>;
    assert.deepEqual(json.roles, ['app']);
    assert.equal(JSON.stringify(json).includes('$2'), false, 'no password hash in the answer');
    assert.match(err(await root('user', 'get', 'nobody')), /etcdserver: user name not found/);
    assert.match(err(await root('role', 'get', 'nobody')), /etcdserver: role name not found/);
    assert.match(err(await root('user', 'grant-role', 'alice', 'nope')), /etcdserver: role name not found/);
    assert.match(err(await root('user', 'revoke-role', 'alice', 'nope')), /etcdserver: role is not granted to the user/);
    assert.match(err(await root('role', 'revoke-permission', 'app', 'zzz')), /etcdserver: permission is not granted to the role/);
    assert.match(err(await root('user', 'delete', 'root')), /etcdserver: invalid auth management/);
    assert.match(err(await root('role', 'delete', 'root')), /etcdserver: invalid auth management/);
    // A user sees itself and its roles, nothing else.
    assert.equal((await alice('user', 'get', 'alice')).stdout, 'User: alice\nRoles: app\n');
    assert.match(err(await alice('user', 'get', 'root')), /etcdserver: permission denied/);
    assert.match(err(await alice('user', 'list')), /etcdserver: permission denied/);
    assert.match(err(await alice('role', 'get', 'root')), /etcdserver: permission denied/);
  });

  test('a user is refused on get, put and watch outside its permissions and served inside them', async () => {
    assert.equal((await alice('put', '/app/x', '1')).stdout.trim(), 'OK');
    assert.equal((await alice('get', '/app/x')).stdout, '/app/x\n1\n');
    assert.equal((await alice('put', 'a', '2')).stdout.trim(), 'OK');
    const getSecret = await alice('get', 'secret');
    assert.equal(getSecret.code, 1);
    assert.match(err(getSecret), /Error: etcdserver: permission denied/);
    assert.match(err(await alice('put', 'secret', 'x')), /Error: etcdserver: permission denied/);
    // write but no read: prev_kv needs read (etcd)
    assert.match(err(await alice('put', 'a', '3', '--prev-kv')), /Error: etcdserver: permission denied/);
    assert.match(err(await alice('get', '/', '--prefix')), /permission denied/);
    // watch: canceled by the server for `secret`, events for /app/
    const denied = await etcdctl(m.client, '--user', ALICE, 'watch', 'secret');
    assert.match(err(denied), /watch was canceled \(rpc error: code = PermissionDenied desc = etcdserver: permission denied\)/);
    // `watch` runs until stopped: stopped after 3 s, having printed the events it was sent.
    const allowed = await run('etcdctl', ['--endpoints', m.client, '--user', ALICE, 'watch', '/app/', '--prefix', '--rev', '1'], {
      timeoutMs: 3000,
      env: { ETCDCTL_API: '3' },
    });
    assert.match(allowed.stdout, /^PUT\n\/app\/x\n1\n/);
  });

  test('admin-only RPCs: member add and hashkv for root; member list and status for anyone', async () => {
    assert.match(err(await alice('member', 'add', 'x', '--peer-urls=http://127.0.0.1:1')), /Error: etcdserver: permission denied/);
    assert.match(err(await ctl('member', 'remove', '1234')), /Error: etcdserver: user name is empty/);
    const hash = await alice('endpoint', 'hashkv');
    assert.match(err(hash), /rpc error: code = Unknown desc = auth: permission denied/);
    assert.equal((await root('endpoint', 'hashkv')).code, 0);
    assert.equal((await alice('member', 'list')).code, 0);
    assert.equal((await ctl('endpoint', 'status')).code, 0);
  });

  test('lease revoke needs write access to every key on the lease; grant does not', async () => {
    const g = await alice('lease', 'grant', '100');
    assert.equal(g.code, 0, err(g));
    const theirs = /lease ([0-9a-f]+) granted/.exec(g.stdout)?.[1] ?? '';
    const mine = /lease ([0-9a-f]+) granted/.exec((await root('lease', 'grant', '100')).stdout)?.[1] ?? '';
    assert.equal((await root('put', 'secret', 's2', `--lease=${mine}`)).code, 0);
    assert.match(err(await alice('lease', 'revoke', mine)), /failed to revoke lease \(etcdserver: permission denied\)/);
    assert.match(err(await alice('put', '/app/l', 'v', `--lease=${mine}`)), /etcdserver: permission denied/);
    assert.match((await alice('lease', 'revoke', theirs)).stdout, /revoked/);
    assert.match((await root('lease', 'revoke', mine)).stdout, /revoked/);
  });

  test('the npm etcd3 client with auth {username, password}', async () => {
    const asRoot = new Etcd3({ hosts: m.clientUrl, auth: { username: 'root', password: ROOT_PW } });
    const asAlice = new Etcd3({ hosts: m.clientUrl, auth: { username: 'alice', password: ALICE_PW } });
    try {
      await asRoot.put('from-etcd3').value('v');
      assert.equal(await asRoot.get('from-etcd3').string(), 'v');
      await asAlice.put('/app/etcd3').value('w');
      assert.equal(await asAlice.get('/app/etcd3').string(), 'w');
      await assert.rejects(asAlice.get('from-etcd3').string(), /permission denied/);
      await assert.rejects(asAlice.put('from-etcd3').value('x').exec(), /permission denied/);
    } finally {
      asRoot.close();
      asAlice.close();
    }
  });

  test('users, roles and the switch survive a restart', async () => {
    await c.kill(m, 'SIGTERM');
    c.spawn(m, ['--initial-cluster', c.initialCluster(), '--initial-cluster-state', 'new']);
    await waitFor('the member to serve root again', async () => (await root('get', 'a')).code === 0, 30_000, 200);
    assert.match(err(await ctl('get', 'a')), /user name is empty/);
    assert.match(err(await alice('get', 'secret')), /permission denied/);
    assert.equal((await alice('get', '/app/x')).stdout, '/app/x\n1\n');
  });

  test('a Lifeboat snapshot restore keeps users and roles', async () => {
    const snap = path.join(c.dir, 'auth.snap');
    const saved = await root('snapshot', 'save', snap);
    assert.equal(saved.code, 0, err(saved));
    const r2 = c.define('r2');
    const restored = await lifeboat('snapshot', 'restore', snap, '--data-dir', r2.dataDir, '--name', 'r2', '--initial-advertise-peer-urls', r2.peerUrl);
    assert.equal(restored.code, 0, restored.stderr);
    c.spawn(r2, ['--initial-cluster', `r2=${r2.peerUrl}`]);
    const rootR2 = (...a: string[]) => etcdctl(r2.client, '--user', ROOT, ...a);
    await waitFor('the restored member to serve root', async () => (await rootR2('get', 'a')).code === 0, 30_000, 200);
    assert.match(err(await etcdctl(r2.client, '--user', ALICE, 'get', 'secret')), /permission denied/);
    assert.equal((await etcdctl(r2.client, '--user', ALICE, 'get', '/app/x')).stdout, '/app/x\n1\n');
    await c.kill(r2, 'SIGTERM');
  });

  test('no plain-text password in the logs, the raft log or kv.db', () => {
    const hits: string[] = [];
    const walk = (dir: string) => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.isFile()) {
          const data = fs.readFileSync(p);
          for (const pw of [ROOT_PW, ALICE_PW]) if (data.includes(pw)) hits.push(`${p}: ${pw}`);
        }
      }
    };
    walk(c.dir);
    assert.deepEqual(hits, []);
    assert.ok(fs.readdirSync(path.join(m.dataDir, 'member')).length > 0);
  });
});

describe('auth carried in a real etcd 3.4 snapshot', () => {
  let etcd: EtcdCluster | undefined;
  let c: LifeboatCluster | undefined;
  after(async () => {
    await etcd?.stop();
    await c?.stopAll();
  });

  test('users and roles of an etcd snapshot keep working after lifeboat snapshot restore', async () => {
    etcd = await EtcdCluster.start({ size: 1, portSeed: 'auth-etcd-snapshot' });
    const ep = etcd.members[0].clientUrl;
    const e = (...a: string[]) => etcdctl(ep, ...a);
    for (const args of [
      ['user', 'add', ROOT],
      ['role', 'add', 'app'],
      ['role', 'grant-permission', 'app', 'read', '/app/', '--prefix'],
      ['user', 'add', ALICE],
      ['user', 'grant-role', 'alice', 'app'],
      ['put', '/app/k', 'v'],
      ['put', 'secret', 's'],
      ['auth', 'enable'],
    ])
      assert.equal((await e(...args)).code, 0, args.join(' '));
    c = await LifeboatCluster.create('auth-etcd-restore', 1);
    const snap = path.join(c.dir, 'etcd.snap');
    assert.equal((await e('--user', ROOT, 'snapshot', 'save', snap)).code, 0);
    const r = c.define('r1');
    const restored = await lifeboat('snapshot', 'restore', snap, '--data-dir', r.dataDir, '--name', 'r1', '--initial-advertise-peer-urls', r.peerUrl);
    assert.equal(restored.code, 0, restored.stderr);
    assert.doesNotMatch(restored.stdout + restored.stderr, /authentication|does not serve/, 'nothing about auth left behind');
    c.spawn(r, ['--initial-cluster', `r1=${r.peerUrl}`]);
    await waitFor('the restored member to serve root', async () => (await etcdctl(r.client, '--user', ROOT, 'get', 'secret')).code === 0, 30_000, 200);
    assert.equal((await etcdctl(r.client, '--user', ALICE, 'get', '/app/k')).stdout, '/app/k\nv\n');
    assert.match(err(await etcdctl(r.client, '--user', ALICE, 'get', 'secret')), /permission denied/);
    assert.match(err(await etcdctl(r.client, 'get', 'secret')), /user name is empty/);
  });
});

describe('credentials in the toolkit', () => {
  let c: LifeboatCluster;
  let m: MemberProc;
  before(async () => {
    c = await LifeboatCluster.start('auth-toolkit', 1, ['--auth-token-ttl', '1']);
    m = c.members[0];
    for (const args of [
      ['user', 'add', ROOT],
      ['auth', 'enable'],
      ['--user', ROOT, 'put', 'k', 'v'],
    ])
      assert.equal((await etcdctl(m.client, ...args)).code, 0, args.join(' '));
  });
  after(async () => c?.stopAll());

  const lb = (env: NodeJS.ProcessEnv, ...args: string[]) =>
    run(process.execPath, [path.join(ROOT_DIR, 'bin', 'run.js'), ...args], {
      env: { LIFEBOAT_ENDPOINTS: '', ETCDCTL_ENDPOINTS: '', ...env },
      timeoutMs: 30_000,
    });

  test('--user, --password, ETCDCTL_* and LIFEBOAT_* (flags over LIFEBOAT_* over ETCDCTL_*)', async () => {
    const withFlag = await lb({}, 'get', 'k', '--endpoints', m.client, '--user', ROOT);
    assert.equal(withFlag.code, 0, withFlag.stderr);
    assert.match(withFlag.stdout, /v/);
    const withEnv = await lb({ ETCDCTL_ENDPOINTS: m.client, ETCDCTL_USER: 'root', ETCDCTL_PASSWORD: ROOT_PW }, 'get', 'k');
    assert.equal(withEnv.code, 0, withEnv.stderr);
    // LIFEBOAT_ENDPOINTS wins over ETCDCTL_ENDPOINTS (a dead one here), the flag over both.
    const dead = '127.0.0.1:1';
    const lifeboatWins = await lb({ ETCDCTL_ENDPOINTS: dead, LIFEBOAT_ENDPOINTS: m.client, LIFEBOAT_USER: ROOT }, 'get', 'k');
    assert.equal(lifeboatWins.code, 0, lifeboatWins.stderr);
    const flagWins = await lb({ LIFEBOAT_ENDPOINTS: dead, LIFEBOAT_USER: ROOT }, 'get', 'k', '--endpoints', m.client);
    assert.equal(flagWins.code, 0, flagWins.stderr);
    const password = await lb({}, 'get', 'k', '--endpoints', m.client, '--user', 'root', '--password', ROOT_PW);
    assert.equal(password.code, 0, password.stderr);
    // Refused without credentials; a wrong password fails without echoing it.
    const anon = await lb({}, 'get', 'k', '--endpoints', m.client);
    assert.notEqual(anon.code, 0);
    assert.match(anon.stderr, /user name is empty/);
    const wrong = await lb({}, 'get', 'k', '--endpoints', m.client, '--user', 'root:not-the-password-93c1');
    assert.notEqual(wrong.code, 0);
    assert.match(wrong.stderr, /authentication failed, invalid user ID or password/);
    assert.doesNotMatch(wrong.stderr + wrong.stdout, /not-the-password-93c1/);
    // No password and no terminal: an error naming the ways to give one.
    const noTty = await lb({}, 'get', 'k', '--endpoints', m.client, '--user', 'root');
    assert.equal(noTty.code, 2, noTty.stderr);
    assert.match(noTty.stderr, /no password and there is no terminal/);
  });

  test('a token that expires during long work is renewed, not a failure', async () => {
    const client = clientFor(m.client, { dialTimeoutMs: 2000, commandTimeoutMs: 5000, credentials: { user: 'root', password: ROOT_PW } });
    try {
      assert.equal((await client.range('k')).kvs[0]?.value.toString(), 'v');
      await new Promise((r) => setTimeout(r, 2500)); // --auth-token-ttl 1: the token is gone
      assert.equal((await client.range('k')).kvs[0]?.value.toString(), 'v');
    } finally {
      client.close();
    }
  });
});
