// Recovering a real etcd cluster that has auth enabled: the recovered cluster keeps
// auth (users, roles, the root password), so its member calls are root's. Without
// credentials the playbook refuses at its first step (exit 3) and nothing is built;
// with --user root it rebuilds 3 voters that still enforce auth.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { EtcdCluster } from '../support/etcdCluster.js';
import { freePorts } from '../support/ports.js';
import { stopProcessesUnder } from '../support/processes.js';
import { playbookRun } from '../support/playbookRun.js';
import { etcdctl, failsWithOneLine, lifeboat } from '../support/tools.js';

describe('recovering an etcd cluster with auth enabled', () => {
  let old: EtcdCluster;
  before(async () => {
    old = await EtcdCluster.start({ size: 1, portSeed: 'etcd-auth-recovery' });
  });
  after(async () => {
    await stopProcessesUnder(old.dir);
    await old?.stop();
  });

  test("without root's credentials the run is refused before anything changes; with --user root it yields 3 voters that still enforce auth", async () => {
    const ep = old.members[0].clientUrl;
    for (const args of [
      ['user', 'add', 'root:rootpw'],
      ['user', 'grant-role', 'root', 'root'],
      ['user', 'add', 'app:apppw'],
      ['auth', 'enable'],
    ]) {
      const r = await etcdctl('--endpoints', ep, ...args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    }
    assert.equal((await etcdctl('--endpoints', ep, '--user', 'root:rootpw', 'put', 'secured', 'kept')).code, 0);
    const snap = path.join(old.dir, 'auth-backup.db');
    assert.equal((await etcdctl('--endpoints', ep, '--user', 'root:rootpw', 'snapshot', 'save', snap)).code, 0);
    await old.stopMember(old.members[0]);

    const ports = await freePorts(6, 'etcd-auth-recovery-new');
    const url = (p: number) => `http://127.0.0.1:${p}`;
    const members = ['a1', 'a2', 'a3'].map((name, i) => ({
      name,
      peerUrl: url(ports[2 * i]),
      clientUrl: url(ports[2 * i + 1]),
      dataDir: path.join(old.dir, name),
    }));
    const [first, ...others] = members;
    const sets = {
      source: snap,
      'data-dir': first.dataDir,
      name: first.name,
      'peer-url': first.peerUrl,
      'client-url': first.clientUrl,
      members: others.map((m) => `${m.name}=${m.peerUrl},${m.clientUrl},${m.dataDir}`).join(';'),
      stabilization: '1s',
    };
    // The plan's command applying it logs in as root (the source has auth), the password by its environment variable.
    const planned = await lifeboat('recover', 'plan', '--from-snapshot', snap, '--dial-timeout', '3s');
    assert.equal(planned.code, 0, planned.stderr);
    const apply = /Apply it with:\n {2}(.*)/.exec(planned.stdout)?.[1] ?? '';
    assert.match(
      apply,
      /^lifeboat playbook run recover-from-quorum-loss .* --dial-timeout 3000ms --user root {3}# secrets from the environment: LIFEBOAT_PASSWORD$/,
      apply,
    );

    // No password from the environment: only what the run is given.
    const env = { ...process.env, ETCDCTL_PASSWORD: '', LIFEBOAT_PASSWORD: '' };
    const runPlaybook = (extra: string[]) => playbookRun('recover-from-quorum-loss', sets, path.join(old.dir, 'audit.db'), { extra, env, timeoutMs: 180_000 });

    const refused = await runPlaybook([]);
    assert.equal(refused.code, 3, `${refused.stdout}\n${refused.stderr}`);
    assert.match(refused.stdout + refused.stderr, /auth enabled.*--user root/);
    assert.ok(!fs.existsSync(first.dataDir), 'something was built before the refusal');

    // A wrong password is said to be wrong before any step, checked against the snapshot's own auth store (the cluster is down).
    const wrong = await runPlaybook(['--user', 'root:not-rootpw']);
    failsWithOneLine(wrong, 2, 'wrong password for user root');
    assert.ok(wrong.ms < 20_000, `refused after ${wrong.ms} ms`);
    assert.doesNotMatch(wrong.out, /Running playbook|not-rootpw/);
    assert.ok(!fs.existsSync(first.dataDir), 'something was built before the wrong password was refused');
    const missing = await runPlaybook(['--user', 'root', '--password-file', path.join(old.dir, 'no-such-file')]);
    failsWithOneLine(missing, 2, '--password-file', 'no such file');

    // The password from a file, as etcd's tools read secrets: its first line.
    const pwFile = path.join(old.dir, 'root.pw');
    fs.writeFileSync(pwFile, 'rootpw\nsecond line ignored\n', { mode: 0o600 });
    const r = await runPlaybook(['--user', 'root', '--password-file', pwFile]);
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const endpoints = members.map((m) => m.clientUrl).join(',');
    const list = await etcdctl('--endpoints', endpoints, '--user', 'root:rootpw', 'member', 'list');
    assert.equal(list.stdout.split('\n').filter((l) => l.includes(', started, ') && l.endsWith(', false')).length, 3, list.stdout);
    assert.equal((await etcdctl('--endpoints', first.clientUrl, '--user', 'root:rootpw', 'get', 'secured', '--print-value-only')).stdout, 'kept\n');
    // Auth still holds: no user, or a user without a role, is refused the key.
    assert.notEqual((await etcdctl('--endpoints', first.clientUrl, 'get', 'secured')).code, 0);
    assert.notEqual((await etcdctl('--endpoints', first.clientUrl, '--user', 'app:apppw', 'get', 'secured')).code, 0);
  });
});
