// `lifeboat playbook resume`: after the process dies between a step's effect and
// its record (LIFEBOAT_FAULT=after-step:…), the resumed run redoes only that
// step and runs the rest once; a changed playbook is refused.
import assert from 'node:assert/strict';
import { appendFileSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { AuditLog } from '../../src/audit/index.js';
import { recorded } from './fakeSteps.js';
import { lifeboat, TempDir } from './support.js';

describe('playbook resume', () => {
  const t = new TempDir();
  after(() => t.remove());
  const db = t.path('audit.db');

  const write = (name: string, log: string) =>
    t.write(
      name,
      `name: resumable
description: Three members re-added one at a time (fake steps)
variables:
  names: {type: list, default: [m2, m3, m4]}
steps:
  - id: restore
    type: record
    with: {log: ${log}, label: restore}
  - id: readd
    for-each: \${vars.names}
    as: name
    steps:
      - id: add-learner
        type: record
        with: {log: ${log}, label: "add-\${name}"}
      - id: promote
        type: record
        with: {log: ${log}, label: "promote-\${name}-after-\${steps.add-learner.label}"}
  - id: check
    type: record
    with: {log: ${log}, label: "check-\${steps.restore.label}"}
`,
    );

  function runIdOf(stdout: string, stderr: string): string {
    const m = /run (r-\d{8}-\d{6}-[0-9a-f]{4})/.exec(stdout + stderr);
    assert.ok(m, `no run ID in:\n${stdout}\n${stderr}`);
    return m[1];
  }

  test('killed right after readd[2].add-learner ran: resume runs it again (idempotent by contract) and everything after it once', () => {
    const log = t.path('calls.log');
    const file = write('resumable.yaml', log);
    const crashed = lifeboat(t.dir, ['playbook', 'run', file, '--reason', 'resume test', '--audit-db', db], {
      LIFEBOAT_FAULT: 'after-step:readd[2].add-learner',
    });
    assert.equal(crashed.code, 137, crashed.stdout + crashed.stderr);
    assert.deepEqual(recorded(log), ['restore', 'add-m2', 'promote-m2-after-add-m2', 'add-m3']);
    const runId = runIdOf(crashed.stdout, crashed.stderr);

    let audit = AuditLog.open(db, { readonly: true });
    try {
      assert.equal(audit.requireRun(runId).outcome, 'running', 'the crash left the run open');
      const steps = audit.steps(runId);
      assert.deepEqual(
        steps.map((s) => [s.stepId, s.status]),
        [
          ['restore', 'succeeded'],
          ['readd[1].add-learner', 'succeeded'],
          ['readd[1].promote', 'succeeded'],
          ['readd[2].add-learner', 'running'],
        ],
      );
      assert.equal(audit.lastRunState(runId).resumeFrom, 4);
    } finally {
      audit.close();
    }

    const resumed = lifeboat(t.dir, ['playbook', 'resume', runId, '--audit-db', db, '--reason', 'after the crash']);
    assert.equal(resumed.code, 0, resumed.stdout + resumed.stderr);
    assert.match(resumed.stdout, /^\d\d:\d\d:\d\d skip readd\[1\]\.promote: done in attempt 1$/m);
    assert.match(resumed.stdout, new RegExp(`^Run ${runId} succeeded: 5 steps run, 3 already done\\.$`, 'm'));
    // The interrupted step twice (its effect happened, its record did not); every other step once.
    assert.deepEqual(recorded(log), [
      'restore',
      'add-m2',
      'promote-m2-after-add-m2',
      'add-m3',
      'add-m3',
      'promote-m3-after-add-m3',
      'add-m4',
      'promote-m4-after-add-m4',
      'check-restore',
    ]);
    const head = /^Audit chain head: ([0-9a-f]{64})$/m.exec(resumed.stdout)![1];

    audit = AuditLog.open(db, { readonly: true });
    try {
      const run = audit.requireRun(runId);
      assert.equal(run.outcome, 'succeeded');
      assert.equal(run.resumes, 1);
      const latest = audit.lastRunState(runId).steps;
      assert.deepEqual(
        latest.map((s) => [s.ordinal, s.stepId, s.attempt, s.status]),
        [
          [1, 'restore', 1, 'succeeded'],
          [2, 'readd[1].add-learner', 1, 'succeeded'],
          [3, 'readd[1].promote', 1, 'succeeded'],
          [4, 'readd[2].add-learner', 2, 'succeeded'],
          [5, 'readd[2].promote', 1, 'succeeded'],
          [6, 'readd[3].add-learner', 1, 'succeeded'],
          [7, 'readd[3].promote', 1, 'succeeded'],
          [8, 'check', 1, 'succeeded'],
        ],
      );
      // The resumed steps used the recorded output of a step done before the crash.
      assert.deepEqual(latest[7].inputs, { log, label: 'check-restore' });
    } finally {
      audit.close();
    }
    const verify = lifeboat(t.dir, ['audit', 'verify', '--head', head, '--audit-db', db]);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);

    const again = lifeboat(t.dir, ['playbook', 'resume', runId, '--audit-db', db]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /already succeeded; there is nothing to resume/);
  });

  test('a refused run (no --yes) resumes with --yes from the confirm, not from the start', () => {
    const log = t.path('confirm.log');
    const file = t.write(
      'confirm.yaml',
      `name: confirming\ndescription: d\nsteps:\n  - {id: a, type: record, with: {log: ${log}, label: a}}\n  - {id: go, type: confirm, with: {message: "Go on?"}}\n  - {id: b, type: record, with: {log: ${log}, label: b}}\n`,
    );
    const first = lifeboat(t.dir, ['playbook', 'run', file, '--reason', 'confirm', '--audit-db', db]);
    assert.equal(first.code, 3);
    const runId = runIdOf(first.stdout, first.stderr);
    const second = lifeboat(t.dir, ['playbook', 'resume', runId, '--yes', '--audit-db', db]);
    assert.equal(second.code, 0, second.stdout + second.stderr);
    assert.deepEqual(recorded(log), ['a', 'b']);
  });

  test('refused when the playbook changed since the run started, naming both sha256 hashes', () => {
    const log = t.path('changed.log');
    const file = write('changed.yaml', log);
    const crashed = lifeboat(t.dir, ['playbook', 'run', file, '--reason', 'change test', '--audit-db', db], { LIFEBOAT_FAULT: 'after-step:restore' });
    assert.equal(crashed.code, 137);
    const runId = runIdOf(crashed.stdout, crashed.stderr);
    const audit = AuditLog.open(db, { readonly: true });
    const before = audit.requireRun(runId).playbookSha256!;
    audit.close();
    appendFileSync(file, '# edited\n');
    const r = lifeboat(t.dir, ['playbook', 'resume', runId, '--audit-db', db]);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, new RegExp(`playbook \\S+changed\\.yaml changed since run ${runId} started: its sha256 was ${before}, it is now [0-9a-f]{64}`));
    assert.deepEqual(recorded(log), ['restore'], 'nothing ran again');
  });

  test('an unknown run ID: exit 2', () => {
    const r = lifeboat(t.dir, ['playbook', 'resume', 'r-20000101-000000-abcd', '--audit-db', db]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /no run r-20000101-000000-abcd in /);
  });
});
