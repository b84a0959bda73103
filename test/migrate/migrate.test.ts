// `lifeboat migrate` between real etcd 3.4 and Lifeboat, both ways, while a
// writer keeps changing the source: killed in the copy (fault hook) and while
// following (SIGKILL), started again, finished, and found equal by the command's
// own verification and by an independent dump of both sides.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EtcdCluster } from '../support/etcdCluster.js';
import { BIN, FAULTS_BIN, LifeboatCluster, lifeboat, run, waitFor } from '../support/lifeboatCluster.js';
import { etcdctl } from '../support/tools.js';
import { Background, RawKv } from '../watch/watchClients.js';

const key = (prefix: string, i: number) => `${prefix}${String(i).padStart(5, '0')}`;

/** Keys under `prefix` with a few revisions each, some deleted, and a key outside it. */
async function fill(kv: RawKv, prefix: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 100) await Promise.all(Array.from({ length: Math.min(100, n - i) }, (_, j) => kv.put(key(prefix, i + j), `v1-${i + j}`)));
  for (let i = 0; i < n; i += 7) await kv.put(key(prefix, i), `v2-${i}`);
  await kv.del(key(prefix, 10), key(prefix, 20));
  await kv.put('outside/1', 'not migrated');
}

/** `ops` changes in sequence: new keys, overwrites, single and range deletes. */
async function writeLoad(kv: RawKv, prefix: string, ops: number, tag: string): Promise<void> {
  for (let i = 0; i < ops; i++) {
    if (i % 40 === 39) await kv.del(key(prefix, 100 + i), key(prefix, 105 + i));
    else if (i % 5 === 0) await kv.del(key(prefix, 200 + i));
    else if (i % 2 === 0) await kv.put(key(prefix, i), `${tag}-${i}`);
    else await kv.put(`${prefix}new-${tag}-${i}`, `${tag}-${i}`);
  }
}

/** The keys under `prefix`, less the prefix, with their values, in order. */
async function dumpUnder(kv: RawKv, prefix: string): Promise<string[]> {
  return (await kv.dump()).filter((l) => l.startsWith(prefix)).map((l) => l.slice(prefix.length));
}

function record(file: string): { phase: string; copiedKeys: number; copyRevision: number; appliedRevision: number; verifiedRevision: number } {
  return JSON.parse(fs.readFileSync(file, 'utf8')).progress;
}

describe('lifeboat migrate', { timeout: 240_000 }, () => {
  let etcd: EtcdCluster;
  let lb: LifeboatCluster;
  let tmp: string;
  const kvs: RawKv[] = [];
  const open = (ep: string) => {
    const kv = new RawKv(ep);
    kvs.push(kv);
    return kv;
  };

  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-migrate-'));
    // Default progress files (the playbook's) go here, not into the user's state dir.
    process.env.XDG_STATE_HOME = tmp;
    [etcd, lb] = await Promise.all([EtcdCluster.start({ size: 1, portSeed: 'migrate-etcd' }), LifeboatCluster.start('migrate-lb', 1)]);
  });
  after(async () => {
    for (const kv of kvs) kv.close();
    await Promise.all([etcd?.stop(), lb?.stopAll()]);
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('from real etcd to Lifeboat while writes go on: killed in the copy and while following, resumed, finished by SIGINT, verified equal', async () => {
    const src = open(etcd.endpoints);
    const dst = open(lb.endpoints()[0]);
    await fill(src, 'app/', 2500);
    const file = path.join(tmp, 'to-lifeboat.json');
    const args = [BIN, 'migrate', '--from', etcd.endpoints, '--to', lb.endpoints()[0], '--prefix', 'app/', '--dest-prefix', 'moved/', '--progress-file', file];

    // Killed by the fault hook once two 1000-key pages of the copy are recorded.
    const killed = await run(process.execPath, [FAULTS_BIN, ...args.slice(1)], { env: { LIFEBOAT_FAULT: 'migrate-copy:2' }, timeoutMs: 60_000 });
    assert.notEqual(killed.code, 0, `the fault hook did not stop the run: ${killed.stderr}`);
    assert.equal(record(file).phase, 'copy');
    assert.equal(record(file).copiedKeys, 2000);
    const copyRevision = record(file).copyRevision;

    // Started again while a writer changes the source: the copy goes on at the same revision.
    let mig = new Background(process.execPath, args);
    const writes = writeLoad(src, 'app/', 300, 'a');
    await waitFor(
      'the copy to finish and changes to be applied',
      () => record(file).phase === 'follow' && record(file).appliedRevision > copyRevision,
      60_000,
      100,
    );
    assert.equal(record(file).copyRevision, copyRevision);
    // Killed while following, with writes still going on; then started again.
    await mig.stop();
    await writes;
    await writeLoad(src, 'app/', 100, 'b');
    mig = new Background(process.execPath, args);
    await waitFor('the resumed run to follow', () => /following changes/.test(mig.stderr), 30_000, 100);
    assert.match(mig.stderr, /resuming the migration recorded in/);
    await writeLoad(src, 'app/', 100, 'c');
    mig.signal('SIGINT');
    const code = await Promise.race([mig.exited, new Promise((r) => setTimeout(() => r('timeout'), 60_000))]);
    assert.equal(code, 0, `migrate did not finish: ${mig.stderr}`);
    const v = /verified: (\d+) keys equal at source revision (\d+)/.exec(mig.stdout);
    assert.ok(v, mig.stdout);

    const want = await dumpUnder(src, 'app/');
    assert.equal(Number(v[1]), want.length);
    assert.deepEqual(await dumpUnder(dst, 'moved/'), want);
    assert.deepEqual(await dumpUnder(dst, 'app/'), [], 'keys went under the source prefix');
    assert.deepEqual(await dumpUnder(dst, 'outside/'), [], 'a key outside --prefix was copied');
    assert.equal(record(file).verifiedRevision, Number(v[2]));
  });

  test('from Lifeboat to real etcd with --once while writes go on; the next --once catches up; both verified equal', async () => {
    const src = open(lb.endpoints()[0]);
    const dst = open(etcd.endpoints);
    await fill(src, 'svc/', 1500);
    const args = [
      'migrate',
      '--from',
      lb.endpoints()[0],
      '--to',
      etcd.endpoints,
      '--prefix',
      'svc/',
      '--once',
      '--progress-file',
      path.join(tmp, 'to-etcd.json'),
    ];
    const [first] = await Promise.all([lifeboat(...args), writeLoad(src, 'svc/', 200, 'd')]);
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stdout, /copied \d+ keys at revision \d+/);
    assert.match(first.stdout, /verified: \d+ keys equal at source revision \d+/);

    await writeLoad(src, 'svc/', 150, 'e');
    const second = await lifeboat(...args);
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stderr, /resuming the migration/);
    assert.match(second.stdout, /applied \d+ changes in \d+ revisions/);
    const want = await dumpUnder(src, 'svc/');
    assert.match(second.stdout, new RegExp(`verified: ${want.length} keys equal`));
    assert.deepEqual(await dumpUnder(dst, 'svc/'), want);

    // -w json carries the verification for scripts.
    const json = await lifeboat(...args, '-w', 'json');
    assert.equal(json.code, 0, json.stderr);
    const out = JSON.parse(json.stdout) as { verified: { equal: boolean; sourceKeys: number; sourceSha256: string; destSha256: string } };
    assert.equal(out.verified.equal, true);
    assert.equal(out.verified.sourceKeys, want.length);
    assert.equal(out.verified.sourceSha256, out.verified.destSha256);
  });

  test('the migrate-from-etcd playbook, scripted: without --yes it stops at the cut-over (exit 3); with it, copies, catches up and verifies', async () => {
    const src = open(etcd.endpoints);
    const dst = open(lb.endpoints()[0]);
    await fill(src, 'pb/', 400);
    const auditDb = path.join(tmp, 'audit.db');
    const args = [
      'playbook',
      'run',
      'migrate-from-etcd',
      '--reason',
      'test: migrate',
      '--audit-db',
      auditDb,
      '--set',
      `source=${etcd.endpoints}`,
      '--set',
      `destination=${lb.endpoints()[0]}`,
      '--set',
      'prefix=pb/',
    ];
    const stopped = await lifeboat(...args);
    assert.equal(stopped.code, 3, stopped.stdout + stopped.stderr);
    assert.match(stopped.stdout + stopped.stderr, /cut-over/);
    await writeLoad(src, 'pb/', 60, 'f');
    const done = await lifeboat(...args, '--yes');
    assert.equal(done.code, 0, done.stdout + done.stderr);
    const want = await dumpUnder(src, 'pb/');
    assert.match(done.stdout + done.stderr, new RegExp(`The destination holds ${want.length} keys equal to the source at revision \\d+`));
    assert.deepEqual(await dumpUnder(dst, 'pb/'), want);
    const verify = await lifeboat('audit', 'verify', '--audit-db', auditDb);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
  });

  test('refused: a non-empty destination, a prefix that feeds itself, a progress record of another migration, a damaged record', async () => {
    const ep = lb.endpoints()[0];
    const full = await lifeboat(
      'migrate',
      '--from',
      etcd.endpoints,
      '--to',
      ep,
      '--prefix',
      'app/',
      '--dest-prefix',
      'moved/',
      '--once',
      '--progress-file',
      path.join(tmp, 'fresh.json'),
    );
    assert.equal(full.code, 3, full.stderr);
    assert.match(full.stderr, /already holds \d+ keys under "moved\/"/);

    const self = await lifeboat(
      'migrate',
      '--from',
      ep,
      '--to',
      ep,
      '--prefix',
      'a/',
      '--dest-prefix',
      'a/b/',
      '--once',
      '--progress-file',
      path.join(tmp, 'self.json'),
    );
    assert.equal(self.code, 2, self.stderr);
    assert.match(self.stderr, /would copy its own writes/);

    const other = await lifeboat(
      'migrate',
      '--from',
      etcd.endpoints,
      '--to',
      ep,
      '--prefix',
      'svc/',
      '--dest-prefix',
      'moved/',
      '--once',
      '--progress-file',
      path.join(tmp, 'to-lifeboat.json'),
    );
    assert.equal(other.code, 3, other.stderr);
    assert.match(other.stderr, /records prefixes app\/ → moved\/, but this run has svc\/ → moved\//);

    const damaged = path.join(tmp, 'to-etcd.json');
    fs.writeFileSync(damaged, fs.readFileSync(damaged, 'utf8').replace(/"copiedKeys": \d+/, '"copiedKeys": 7'));
    const bad = await lifeboat('migrate', '--from', ep, '--to', etcd.endpoints, '--prefix', 'svc/', '--once', '--progress-file', damaged);
    assert.equal(bad.code, 1, bad.stderr);
    assert.match(bad.stderr, /is damaged \(checksum mismatch\); delete it or pass --restart/);
    assert.equal(bad.stderr.trim().split('\n').length, 1, bad.stderr);
  });

  test('copies roles with their permissions and users with their role grants, without passwords; refuses a user that differs on the destination', async () => {
    const ep = lb.endpoints()[0];
    const ctl = async (endpoint: string, ...args: string[]) => {
      const r = await etcdctl('--endpoints', endpoint, ...args);
      assert.equal(r.code, 0, `etcdctl ${args.join(' ')}: ${r.stderr}`);
      return r.stdout;
    };
    for (const args of [
      ['role', 'add', 'reader'],
      ['role', 'grant-permission', 'reader', 'read', 'authapp/', '--prefix'],
      ['role', 'add', 'writer'],
      ['role', 'grant-permission', 'writer', 'readwrite', 'authapp/one'],
      ['role', 'grant-permission', 'writer', 'write', 'authapp/a', 'authapp/m'],
      ['user', 'add', 'root', '--new-user-password', 'rootpw-source'],
      ['user', 'grant-role', 'root', 'root'],
      ['user', 'add', 'alice', '--new-user-password', 'alicepw-source'],
      ['user', 'grant-role', 'alice', 'reader'],
      ['user', 'grant-role', 'alice', 'writer'],
      ['user', 'add', 'bob', '--no-password'],
      ['user', 'grant-role', 'bob', 'reader'],
      ['put', 'authapp/one', '1'],
    ])
      await ctl(etcd.endpoints, ...args);
    // On the destination: an identical role (kept) and a user with other roles (refused).
    for (const args of [
      ['role', 'add', 'reader'],
      ['role', 'grant-permission', 'reader', 'read', 'authapp/', '--prefix'],
      ['user', 'add', 'alice', '--no-password'],
    ])
      await ctl(ep, ...args);
    const args = ['migrate', '--from', etcd.endpoints, '--to', ep, '--prefix', 'authapp/', '--once', '--progress-file', path.join(tmp, 'auth.json')];
    // --no-copy-auth: keys only, the differing user notwithstanding.
    const keysOnly = await lifeboat(...args.slice(0, -2), '--dest-prefix', 'keysonly/', '--no-copy-auth');
    assert.equal(keysOnly.code, 0, keysOnly.stderr);
    assert.doesNotMatch(keysOnly.stdout, /roles|users/);
    assert.equal(await ctl(ep, 'get', 'keysonly/one', '--print-value-only'), '1\n');
    const refused = await lifeboat(...args);
    assert.equal(refused.code, 3, refused.stderr);
    assert.match(refused.stderr, /user "alice" exists on the destination with other roles/);
    assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);
    assert.equal(await ctl(ep, 'role', 'list'), 'reader\n', 'a role was written before the refusal');
    assert.equal(await ctl(ep, 'get', 'authapp/one'), '', 'a key was written before the refusal');

    await ctl(ep, 'user', 'delete', 'alice');
    const r = await lifeboat(...args);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /copied 1 roles and 3 users with their permissions and role grants \(1 roles and 0 users already there, identical\)/);
    assert.match(r.stdout, /passwords are not copied .*etcdctl user passwd NAME \(alice, bob, root\)/);
    for (const what of [
      ['role', 'list'],
      ['role', 'get', 'reader'],
      ['role', 'get', 'writer'],
      ['user', 'list'],
      ['user', 'get', 'alice'],
      ['user', 'get', 'bob'],
      ['user', 'get', 'root'],
    ])
      assert.equal(await ctl(ep, ...what), await ctl(etcd.endpoints, ...what), what.join(' '));
    assert.equal(await ctl(ep, 'get', 'authapp/one', '--print-value-only'), '1\n');

    // The source's passwords did not come along: with root's set and auth on, alice's fails.
    const passwd = await run('etcdctl', ['--endpoints', ep, 'user', 'passwd', 'root', '--interactive=false'], { input: 'rootpw-dest\n' });
    assert.equal(passwd.code, 0, passwd.stderr);
    await ctl(ep, 'auth', 'enable');
    const alice = await etcdctl('--endpoints', ep, '--user', 'alice:alicepw-source', 'get', 'authapp/one');
    assert.notEqual(alice.code, 0, alice.stdout);
    assert.match(alice.stderr, /authentication failed, invalid user ID or password/);
    const root = await etcdctl('--endpoints', ep, '--user', 'root:rootpw-source', 'get', 'authapp/one');
    assert.notEqual(root.code, 0, root.stdout);
    assert.match(root.stderr, /authentication failed, invalid user ID or password/);
    assert.equal(await ctl(ep, '--user', 'root:rootpw-dest', 'user', 'get', 'alice'), 'User: alice\nRoles: reader writer\n');

    // Back, from the auth-enabled Lifeboat member as its root (asked for on no terminal: given apart) to etcd,
    // where every user and role is already there, identical; etcd's auth is off and stays off.
    const back = await run(
      process.execPath,
      [BIN, 'migrate', '--from', ep, '--from-user', 'root', '--to', etcd.endpoints, '--prefix', 'authapp/', '--dest-prefix', 'authback/', '--once'],
      { env: { LIFEBOAT_FROM_PASSWORD: 'rootpw-dest' }, timeoutMs: 60_000 },
    );
    assert.equal(back.code, 0, back.stderr);
    assert.match(back.stdout, /copied 0 roles and 0 users .*\(2 roles and 3 users already there, identical\)/);
    assert.match(back.stdout, /auth is enabled on the source, not on the destination: migrate does not enable it/);
    assert.doesNotMatch(back.stdout + back.stderr, /rootpw/);
    assert.equal(await ctl(etcd.endpoints, 'get', 'authback/one', '--print-value-only'), '1\n');
  });
});
