// The interactive recovery of a real etcd cluster with auth, onto a member serving
// clients over mutual TLS, at a real terminal (tmux): the password is asked before
// the first step and is on screen before it is answered (never under the progress),
// a confirmation answered late is recorded as the operator's wait apart from the
// step's own time, and the runbook line the run prints runs as printed (bash -c),
// with --user, --cacert, --cert, --key and the password from LIFEBOAT_PASSWORD.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { makeCerts, type TestCerts } from '../support/certs.js';
import { EtcdCluster } from '../support/etcdCluster.js';
import { BIN, waitFor } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';
import { stopProcessesUnder } from '../support/processes.js';
import { playbookRun } from '../support/playbookRun.js';
import { etcdctl, failsWithOneLine, lifeboat, requireTool, run } from '../support/tools.js';

const ROOT_PW = 'root-pw-7f3a';
const tmux = (...args: string[]) => execFileSync('tmux', args, { encoding: 'utf8' });
/** The pane as the operator sees it, wrapped lines joined. */
const screen = (s: string) => tmux('capture-pane', '-t', s, '-p', '-J', '-S', '-300');

describe('lifeboat playbook run recover-from-quorum-loss at a terminal, with auth and client TLS', () => {
  let old: EtcdCluster;
  let certs: TestCerts;
  const session = `lifeboat-cred-${process.pid}`;
  before(async () => {
    requireTool('tmux');
    old = await EtcdCluster.start({ size: 1, portSeed: 'interactive-credentials' });
    certs = await makeCerts(fs.mkdtempSync(path.join(old.dir, 'certs-')));
  });
  after(async () => {
    try {
      tmux('kill-session', '-t', session);
    } catch {
      // already gone
    }
    await stopProcessesUnder(old.dir);
    await old?.stop();
  });

  test('the password is asked up front and visible; the wait is recorded apart; the printed runbook line runs', async () => {
    const ep = old.members[0].clientUrl;
    for (const args of [
      ['user', 'add', `root:${ROOT_PW}`],
      ['user', 'grant-role', 'root', 'root'],
      ['auth', 'enable'],
    ]) {
      const r = await etcdctl('--endpoints', ep, ...args);
      assert.equal(r.code, 0, `${args.join(' ')}: ${r.stderr}`);
    }
    assert.equal((await etcdctl('--endpoints', ep, '--user', `root:${ROOT_PW}`, 'put', '/registry/kept', 'yes')).code, 0);
    const snap = path.join(old.dir, 'backup.db');
    assert.equal((await etcdctl('--endpoints', ep, '--user', `root:${ROOT_PW}`, 'snapshot', 'save', snap)).code, 0);
    await old.stopMember(old.members[0]);

    const [peer, client] = await freePorts(2, 'interactive-credentials-new');
    const dataDir = path.join(old.dir, 'r1');
    const clientUrl = `https://127.0.0.1:${client}`;
    const auditDb = path.join(old.dir, 'audit.db');
    const sets = {
      source: snap,
      'data-dir': dataDir,
      name: 'r1',
      'peer-url': `http://127.0.0.1:${peer}`,
      'client-url': clientUrl,
      'cert-file': certs.serverCert,
      'key-file': certs.serverKey,
      'trusted-ca-file': certs.ca,
      'client-cert-auth': 'true',
      members: '',
      'assume-dead': '',
      'discard-uncommitted': 'false',
      stabilization: '1s',
      remote: 'false',
    };
    const tls = ['--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey];
    const words = [BIN, 'playbook', 'run', 'recover-from-quorum-loss', '--user', 'root', ...tls, '--audit-db', auditDb];
    for (const [k, v] of Object.entries(sets)) words.push('--set', `${k}=${v}`);
    // No password from the environment: the terminal asks for it.
    const cmd = `env -u LIFEBOAT_PASSWORD -u ETCDCTL_PASSWORD ${process.execPath} ${words.join(' ')}; echo EXIT=$?; sleep 120`;
    tmux('new-session', '-d', '-s', session, '-x', '200', '-y', '50', cmd);
    /** Waits for `what` on the screen; a timeout fails with the screen as the operator saw it. */
    const onScreen = (what: string, pattern: RegExp, timeoutMs: number) =>
      waitFor(what, () => (pattern.test(screen(session)) ? screen(session) : undefined), timeoutMs, 200).catch((err: Error) =>
        assert.fail(`${err.message}; the screen:\n${screen(session).trimEnd()}`),
      );
    const answer = async (prompt: RegExp, keys: string) => {
      await onScreen(`the prompt ${prompt}`, prompt, 60_000);
      tmux('send-keys', '-t', session, keys, 'Enter');
      await waitFor(`the answer to ${prompt}`, () => !new RegExp(`${prompt.source}[^\\n]*$`).test(screen(session).trimEnd()), 10_000, 100).catch(
        () => undefined,
      );
    };
    // Every variable is given: the password is the first question, on screen, echo off, before any step runs.
    const asked = await onScreen('the password prompt', /^\? Password of root:/m, 30_000);
    assert.doesNotMatch(asked, /inspect|Running playbook/, `a step started before the password was asked:\n${asked}`);
    tmux('send-keys', '-t', session, '-l', ROOT_PW);
    tmux('send-keys', '-t', session, 'Enter');
    await answer(/Why are you running this playbook/, 'INC-56 at a terminal');
    // The go-ahead is asked mid-run, under the progress: answered 2.5 s after it is on screen.
    await onScreen('the go-ahead', /Build a NEW one-member cluster .*\(y\/N\)/, 60_000);
    await new Promise((r) => setTimeout(r, 2500));
    tmux('send-keys', '-t', session, 'y', 'Enter');
    // The old member is on "another host" (its data dir is not given): the operator confirms it was fenced there.
    await answer(/Has infra1 \S+ been fenced on/, 'y');
    const out = await onScreen('the run to end', /EXIT=\d+/, 120_000);
    assert.match(out, /EXIT=0/, out);
    assert.ok(!out.includes(ROOT_PW), 'the password is on screen');
    const get = ['--endpoints', clientUrl, '--cacert', certs.ca, '--cert', certs.clientCert, '--key', certs.clientKey, '--user', `root:${ROOT_PW}`];
    assert.equal((await etcdctl(...get, 'get', '/registry/kept', '--print-value-only')).stdout, 'yes\n');

    // The wait for the go-ahead is the operator's, not the step's.
    const runId = /Run ID: (r-\S+)/.exec(out)?.[1] ?? '';
    const shown = await lifeboat('audit', 'show', runId, '--audit-db', auditDb, '-w', 'json');
    const timeline = (JSON.parse(shown.stdout) as { timeline: Array<{ entry: string; stepId?: string; durationMs?: number; waitMs?: number }> }).timeline;
    const go = timeline.find((e) => e.entry === 'step' && e.stepId === 'go');
    assert.ok(go && (go.waitMs ?? 0) >= 2000 && (go.durationMs ?? 0) >= (go.waitMs ?? 0), JSON.stringify(go));
    const inspect = timeline.find((e) => e.entry === 'step' && e.stepId === 'inspect');
    assert.equal(inspect?.waitMs, 0, 'the password was waited for inside the inspect step');
    const text = await lifeboat('audit', 'show', runId, '--audit-db', auditDb);
    assert.match(text.stdout, /step \d+ go .*succeeded {2}\S+ \(\+ \S+ waiting for the operator\)/, text.stdout);
    const html = await lifeboat('audit', 'report', runId, '--audit-db', auditDb);
    assert.match(html.stdout, /waiting for the operator/);

    // The runbook line, run as printed (a fresh data dir: the first run's member stopped and its dir removed).
    const line = /The same run, scripted \(for the runbook\): (.*)$/m.exec(out)?.[1] ?? '';
    assert.match(line, / --user root /, line);
    assert.match(line, /# secrets from the environment: LIFEBOAT_PASSWORD$/, line);
    assert.ok(!line.includes(ROOT_PW), line);
    await stopProcessesUnder(dataDir);
    fs.rmSync(dataDir, { recursive: true, force: true });
    const shim = fs.mkdtempSync(path.join(old.dir, 'bin-'));
    fs.writeFileSync(path.join(shim, 'lifeboat'), `#!/bin/sh\nexec ${process.execPath} ${BIN} "$@"\n`, { mode: 0o755 });
    const again = await run('bash', ['-c', line], {
      env: { ...process.env, PATH: `${shim}:${process.env.PATH}`, LIFEBOAT_PASSWORD: ROOT_PW, ETCDCTL_PASSWORD: '' },
      timeoutMs: 180_000,
      cwd: '/',
    });
    assert.equal(again.code, 0, `${line}\n${again.stdout}\n${again.stderr}`);
    assert.equal((await etcdctl(...get, 'get', '/registry/kept', '--print-value-only')).stdout, 'yes\n');

    // Against a live cluster the password is checked by logging in, before the first step: wrong, one line, exit 2.
    const env = { ...process.env, LIFEBOAT_PASSWORD: '', ETCDCTL_PASSWORD: '' };
    const nospace = (extra: string[]) => playbookRun('recover-from-nospace', { endpoints: clientUrl }, auditDb, { extra: [...tls, ...extra], env });
    const runs = async () => (JSON.parse((await lifeboat('audit', 'list', '--audit-db', auditDb, '-w', 'json')).stdout) as unknown[]).length;
    const before = await runs();
    const wrong = await nospace(['--user', 'root:not-the-password']);
    failsWithOneLine(wrong, 2, 'wrong password for user root', 'refused it');
    assert.ok(!wrong.out.includes('not-the-password'), wrong.out);
    assert.equal(await runs(), before, 'a run was recorded for a wrong password');
    const pwFile = path.join(old.dir, 'root.pw');
    fs.writeFileSync(pwFile, `${ROOT_PW}\n`, { mode: 0o600 });
    const good = await nospace(['--user', 'root', '--password-file', pwFile]);
    assert.equal(good.code, 0, good.out);
    await stopProcessesUnder(dataDir);
  });
});
