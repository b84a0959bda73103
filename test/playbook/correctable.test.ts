// A run that can be corrected: a value is checked on this host when it is entered
// (not twelve prompts later at its step), a failed run's variable of a step that
// has not run can be changed on resume (recorded; one a completed step used
// cannot), and a failed run prints the same run as a scripted command.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { after, describe, test } from 'node:test';
import { AuditLog } from '../../src/audit/index.js';
import { recorded } from './fakeSteps.js';
import { lifeboat, TempDir } from './support.js';

describe('a run that can be corrected', () => {
  const t = new TempDir();
  after(() => t.remove());

  test('a source that does not exist, or is no data dir, is refused when given: one line, exit 2, nothing recorded', () => {
    const db = t.path('check.db');
    const file = t.write(
      'source.yaml',
      `name: read-source
description: reads a source
variables:
  source: {type: path}
steps:
  - id: inspect
    type: inspect-sources
    with: {source: "\${vars.source}"}
`,
    );
    const missing = lifeboat(t.dir, ['playbook', 'run', file, '--reason', 'r', '--audit-db', db, '--set', `source=${t.path('nope')}`]);
    assert.equal(missing.code, 2, missing.stderr);
    assert.equal(missing.stderr.trim(), `Error: --set source=${t.path('nope')}: ${t.path('nope')} does not exist; check the path`);
    mkdirSync(t.path('plain'));
    const plain = lifeboat(t.dir, ['playbook', 'run', file, '--reason', 'r', '--audit-db', db, '--set', `source=${t.path('plain')}`]);
    assert.equal(plain.code, 2);
    assert.match(plain.stderr, /is a directory but not a member's data dir/);
    assert.equal(plain.stderr.trim().split('\n').length, 1, plain.stderr);
    writeFileSync(t.path('notes.txt'), 'not a snapshot at all, just some text that is long enough');
    const text = lifeboat(t.dir, ['playbook', 'run', file, '--reason', 'r', '--audit-db', db, '--set', `source=${t.path('notes.txt')}`]);
    assert.equal(text.code, 2);
    assert.match(text.stderr, /is not a snapshot lifeboat can read/);
    assert.ok(!existsSync(db), 'nothing was recorded');
  });

  test('a client URL whose port is taken on this host is refused when given; one a member of another host may use is not checked', async () => {
    const busy = net.createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as net.AddressInfo).port;
    try {
      const file = t.write(
        'start.yaml',
        `name: start-one
description: starts a member
variables:
  client-url: {type: url}
steps:
  - id: start
    type: start-member
    with: {name: m1, data-dir: ${t.path('m1')}, peer-url: "http://127.0.0.1:1", client-url: "\${vars.client-url}", initial-cluster: "m1=http://127.0.0.1:1"}
`,
      );
      const r = lifeboat(t.dir, ['playbook', 'run', file, '--dry-run', '--set', `client-url=http://127.0.0.1:${port}`]);
      assert.equal(r.code, 2, r.stdout + r.stderr);
      assert.equal(
        r.stderr.trim(),
        `Error: --set client-url=http://127.0.0.1:${port}: port ${port} of http://127.0.0.1:${port} is in use on this host (another process listens there); choose a free port or stop that process`,
      );
      const remote = lifeboat(t.dir, ['playbook', 'run', file, '--dry-run', '--set', `client-url=http://10.255.0.7:${port}`]);
      assert.equal(remote.code, 0, remote.stderr);
    } finally {
      busy.close();
    }
  });

  test('resume --set changes a variable of the failed step (recorded, the step runs again with it), refuses one a completed step used', () => {
    const db = t.path('resume.db');
    const calls = t.path('calls.log');
    const good = t.path('logs');
    mkdirSync(good);
    const file = t.write(
      'fix.yaml',
      `name: fixable
description: the second step writes where logdir says
variables:
  label: {type: string}
  logdir: {type: string}
  api-token: {type: string, default: ""}
steps:
  - id: first
    type: record
    with: {log: ${calls}, label: "\${vars.label}"}
  - id: second
    type: record
    with: {log: "\${vars.logdir}/second.log", label: "second \${vars.api-token}"}
`,
    );
    const first = lifeboat(t.dir, [
      'playbook',
      'run',
      file,
      '--yes',
      '--reason',
      'INC-1: fixable',
      '--audit-db',
      db,
      '--set',
      'label=one',
      '--set',
      `logdir=${t.path('missing')}`,
      '--set',
      'api-token=s3cret-value',
    ]);
    assert.equal(first.code, 1, first.stderr);
    const runId = /Run ID: (r-\S+)/.exec(first.stdout)?.[1] ?? '';
    assert.ok(runId, first.stdout);
    // The failed run prints itself as a scripted command, the secret left out.
    const scripted = /The same run, scripted \(for the runbook\): (.*)/.exec(first.stdout)?.[1] ?? '';
    assert.match(
      scripted,
      new RegExp(`^lifeboat playbook run ${file} --yes --reason 'INC-1: fixable' --audit-db ${db} --set label=one --set logdir=${t.path('missing')}`),
    );
    assert.match(scripted, /# plus --set for api-token \(secrets, left out\)$/);
    assert.doesNotMatch(first.stdout, /s3cret-value/);
    assert.match(first.stdout, /add --set NAME=VALUE to correct a variable of a step not yet done/);

    const refused = lifeboat(t.dir, ['playbook', 'resume', runId, '--audit-db', db, '--set', 'label=two']);
    assert.equal(refused.code, 3, refused.stderr);
    assert.equal(
      refused.stderr.trim(),
      `Error: variable label cannot change: completed step first used one; only variables of steps that have not run can change on resume (start a new run to change it)`,
    );
    const badValue = lifeboat(t.dir, ['playbook', 'resume', runId, '--audit-db', db, '--set', 'nosuch=1']);
    assert.equal(badValue.code, 2);
    assert.match(badValue.stderr, /has no variable nosuch/);

    const fixed = lifeboat(t.dir, ['playbook', 'resume', runId, '--audit-db', db, '--set', `logdir=${good}`]);
    assert.equal(fixed.code, 0, fixed.stdout + fixed.stderr);
    assert.match(fixed.stdout, /succeeded: 1 step run, 1 already done/);
    assert.deepEqual(recorded(calls), ['one'], 'the completed step did not run again');
    assert.deepEqual(recorded(`${good}/second.log`), ['second s3cret-value'], 'the failed step ran again with the new value');
    const audit = AuditLog.open(db, { readonly: true });
    try {
      const change = audit.events(runId).find((e) => e.kind === 'variable');
      assert.ok(change, 'the change is recorded');
      assert.equal(change.message, `variable logdir changed on resume: ${t.path('missing')} -> ${good} (--set)`);
      assert.deepEqual(change.data, { variable: 'logdir', from: t.path('missing'), to: good, by: '--set' });
      assert.ok(audit.verify().ok);
    } finally {
      audit.close();
    }
  });
});
