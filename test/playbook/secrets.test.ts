// Secret playbook variables (`type: secret`) through the CLI, without a terminal:
// given with --set or LIFEBOAT_SECRET_<NAME>, never printed, never in the audit
// database or its exports — recorded as `<redacted> hmac:…`, the same digest for
// the same value in one log and another for another value — and given again to
// resume a run.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { AuditLog } from '../../src/audit/index.js';
import { recorded } from './fakeSteps.js';
import { lifeboat, TempDir } from './support.js';

const SECRET = 'hunter2-S3cret!';
const OTHER = 'other-Pa55word';
const DIGEST = /^<redacted> hmac:[0-9a-f]{16}$/;

function runIdOf(stdout: string): string {
  const id = /^Run ID: (r-\d{8}-\d{6}-[0-9a-f]{4})$/m.exec(stdout)?.[1];
  assert.ok(id, `no run ID in:\n${stdout}`);
  return id;
}

describe('secret playbook variables', () => {
  const t = new TempDir();
  after(() => t.remove());
  const db = t.path('audit', 'audit.db');
  const log = t.path('calls.log');
  const playbook = t.write(
    'secret.yaml',
    `name: secret-test
description: Logs in with a token (fake steps)
variables:
  token:
    type: secret
    description: the API token
    validation: {pattern: "^.{8,}$"}
  log: {type: path}
steps:
  - id: login
    type: record
    name: Log in with \${vars.token}
    with: {log: "\${vars.log}", label: "login \${vars.token}"}
  - id: sure
    type: ask
    with: {question: "Really use \${vars.token}?"}
  - id: done
    type: record
    with: {log: "\${vars.log}", label: "done"}
`,
  );
  const failing = t.write(
    'failing.yaml',
    `name: secret-fail
description: Fails with the token in its error (fake steps)
variables:
  token: {type: secret}
steps:
  - id: boom
    type: fail
    with: {message: "cannot log in with \${vars.token}"}
`,
  );
  const run = (args: string[], env: NodeJS.ProcessEnv = {}) => lifeboat(t.dir, ['playbook', 'run', ...args, '--audit-db', db], env);
  const outputs: string[] = [];
  const keep = <R extends { stdout: string; stderr: string }>(r: R): R => {
    outputs.push(r.stdout, r.stderr);
    return r;
  };
  const recordedToken = (runId: string): unknown => {
    const audit = AuditLog.open(db, { readonly: true });
    try {
      return audit.requireRun(runId).variables.token;
    } finally {
      audit.close();
    }
  };

  test('a secret has no default and no choices in the playbook', () => {
    const bad = t.write('bad.yaml', 'name: bad\ndescription: x\nvariables:\n  pw: {type: secret, default: abc}\nsteps:\n  - {id: n, type: note}\n');
    const r = lifeboat(t.dir, ['playbook', 'show', bad]);
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /bad\.yaml:4:\d+: variables\.pw\.default: a secret has no default .*LIFEBOAT_SECRET_PW/);
  });

  test('without a terminal a missing secret is an error naming --set and its environment variable; nothing runs', () => {
    const r = keep(run([playbook, '--yes', '--reason', 'test', '--set', `log=${log}`]));
    assert.equal(r.code, 2, r.stdout + r.stderr);
    assert.match(r.stderr, /missing variable token \(secret\); give it with --set NAME=VALUE .*LIFEBOAT_SECRET_TOKEN/);
    assert.deepEqual(recorded(log), []);
  });

  test('a bad secret is refused without showing it, also under a misspelt name', () => {
    const short = keep(run([playbook, '--dry-run', '--set', `log=${log}`, '--set', 'token=short']));
    assert.equal(short.code, 2);
    assert.match(short.stderr, /--set token=<redacted>: the secret does not match the pattern/);
    assert.ok(!short.stderr.includes('short'), short.stderr);
    const typo = keep(run([playbook, '--dry-run', '--set', `log=${log}`, '--set', `tokne=${SECRET}`]));
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /--set tokne=<redacted>: playbook secret-test has no variable tokne \(did you mean "token"\?\)/);
  });

  test('--dry-run shows every step without the secret, as text and JSON', () => {
    const text = keep(run([playbook, '--dry-run', '--set', `log=${log}`, '--set', `token=${SECRET}`]));
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /token = <redacted> {2}\(--set\)/);
    assert.match(text.stdout, /label: login <redacted>/);
    const json = keep(run([playbook, '--dry-run', '--set', `log=${log}`, '--set', `token=${SECRET}`, '-w', 'json']));
    assert.equal(json.code, 0, json.stderr);
    assert.equal((JSON.parse(json.stdout) as { variables: { token: string } }).variables.token, '<redacted>');
  });

  let firstRun = '';
  test('a run stopped at a confirm: the output and the scripted equivalent never show the secret', () => {
    const r = keep(run([playbook, '--reason', 'INC-7', '--set', `log=${log}`, '--set', `token=${SECRET}`]));
    assert.equal(r.code, 3, r.stdout + r.stderr);
    assert.deepEqual(recorded(log), [`login ${SECRET}`], 'the step itself got the secret');
    assert.match(r.stdout, /token = <redacted> {2}\(--set\)/);
    assert.match(r.stdout, /Log in with <redacted>/);
    assert.match(r.stderr, /needs confirmation \("Really use <redacted>\?"\)/);
    assert.match(r.stdout, /The same run, scripted.*# secrets from the environment: LIFEBOAT_SECRET_TOKEN$/m);
    firstRun = runIdOf(r.stdout);
    assert.match(String(recordedToken(firstRun)), DIGEST);
  });

  test('resume needs the secret again; a different one is refused once a completed step used it', () => {
    const without = keep(lifeboat(t.dir, ['playbook', 'resume', firstRun, '--yes', '--audit-db', db]));
    assert.equal(without.code, 2, without.stdout + without.stderr);
    assert.match(without.stderr, /missing variable token .*LIFEBOAT_SECRET_TOKEN/);
    const changed = keep(lifeboat(t.dir, ['playbook', 'resume', firstRun, '--yes', '--audit-db', db], { LIFEBOAT_SECRET_TOKEN: OTHER }));
    assert.equal(changed.code, 3, changed.stdout + changed.stderr);
    assert.match(changed.stderr, /variable token cannot change: completed step login used <redacted>/);
    const same = keep(lifeboat(t.dir, ['playbook', 'resume', firstRun, '--yes', '--audit-db', db], { LIFEBOAT_SECRET_TOKEN: SECRET }));
    assert.equal(same.code, 0, same.stdout + same.stderr);
    assert.deepEqual(recorded(log), [`login ${SECRET}`, 'done']);
  });

  test('the digest: the same value in two runs of one log the same, another value another', () => {
    const again = keep(run([playbook, '--yes', '--reason', 'again', '--set', `log=${log}`], { LIFEBOAT_SECRET_TOKEN: SECRET }));
    assert.equal(again.code, 0, again.stdout + again.stderr);
    const other = keep(run([playbook, '--yes', '--reason', 'other', '--set', `log=${log}`, '--set', `token=${OTHER}`]));
    assert.equal(other.code, 0, other.stdout + other.stderr);
    const [a, b, c] = [firstRun, runIdOf(again.stdout), runIdOf(other.stdout)].map(recordedToken);
    assert.match(String(c), DIGEST);
    assert.equal(a, b);
    assert.notEqual(a, c);
    // The key is beside the log, readable by its owner only, and not in the log.
    assert.equal(statSync(`${db}.secret-key`).mode & 0o777, 0o600);
  });

  test('a step error carrying the secret: printed and recorded without it', () => {
    const r = keep(run([failing, '--yes', '--reason', 'fail', '--set', `token=${SECRET}`]));
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, /step boom.*cannot log in with <redacted>/);
    const audit = AuditLog.open(db, { readonly: true });
    try {
      const step = audit.steps(runIdOf(r.stdout))[0];
      assert.match(step.error ?? '', /^cannot log in with <redacted> hmac:[0-9a-f]{16}$/);
    } finally {
      audit.close();
    }
  });

  test('nothing printed, nothing in the audit database and nothing in its exports holds a secret', () => {
    const json = lifeboat(t.dir, ['audit', 'export', '--audit-db', db]);
    const csv = lifeboat(t.dir, ['audit', 'export', '--format', 'csv', '--audit-db', db]);
    assert.equal(json.code, 0, json.stderr);
    assert.equal(csv.code, 0, csv.stderr);
    assert.match(json.stdout, /<redacted> hmac:[0-9a-f]{16}/);
    assert.match(csv.stdout, /<redacted> hmac:[0-9a-f]{16}/);
    const dir = path.dirname(db);
    const files = readdirSync(dir).filter((f) => f.startsWith('audit.db') && !f.endsWith('.secret-key'));
    assert.ok(files.includes('audit.db'), files.join(', '));
    const texts = [
      ...files.map((f) => ({ where: f, text: readFileSync(path.join(dir, f)).toString('latin1') })),
      { where: 'export json', text: json.stdout },
      { where: 'export csv', text: csv.stdout },
      ...outputs.map((text, i) => ({ where: `output ${i}`, text })),
    ];
    assert.ok(outputs.length >= 20);
    for (const { where, text } of texts) {
      for (const secret of [SECRET, OTHER]) assert.ok(!text.includes(secret), `${where} holds ${secret}`);
    }
  });
});
