// `lifeboat playbook list | show | run` as an operator or a runbook runs them
// (no terminal), with the fake steps added by the test entry point (lifeboat()).
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import { AuditLog } from '../../src/audit/index.js';
import { recorded } from './fakeSteps.js';
import { lifeboat, releaseLifeboat, TempDir } from './support.js';

/** `Run ID: …` and `Audit chain head: …` from a run's output. */
function runInfo(stdout: string): { runId: string; head: string } {
  const runId = /^Run ID: (r-\d{8}-\d{6}-[0-9a-f]{4})$/m.exec(stdout)?.[1];
  const head = /^Audit chain head: ([0-9a-f]{64})$/m.exec(stdout)?.[1];
  assert.ok(runId && head, `no run ID or head in:\n${stdout}`);
  return { runId, head };
}

describe('playbook commands', () => {
  const t = new TempDir();
  after(() => t.remove());
  const db = t.path('audit.db');
  const log = t.path('calls.log');

  const playbook = t.write(
    'readd.yaml',
    `name: readd-test
description: Re-add members one at a time (fake steps)
variables:
  members:
    type: list
    items: member
    prompt: Members to re-add
    validation: {min: 1}
  label: {type: string, default: run}
  log: {type: path}
steps:
  - id: start
    type: record
    name: Start \${vars.label}
    with: {log: "\${vars.log}", label: "start-\${vars.label}"}
  - id: readd
    for-each: \${vars.members}
    as: m
    steps:
      - id: add
        type: record
        name: Add \${m.name}
        with: {log: "\${vars.log}", label: "add-\${m.name}-\${m.peerUrl}"}
      - id: promote
        type: record
        with: {log: "\${vars.log}", label: "promote-\${steps.add.label}"}
  - id: done
    type: note
    with: {message: "re-added \${vars.label}"}
`,
  );

  test('list: the shipped playbooks with their descriptions (-w json)', () => {
    const r = lifeboat(t.dir, ['playbook', 'list', '-w', 'json']);
    assert.equal(r.code, 0, r.stderr);
    const list = JSON.parse(r.stdout) as Array<{ name: string; description: string; file: string; error?: string }>;
    assert.ok(list.length > 0, 'playbooks/ ships at least one playbook');
    for (const p of list) {
      assert.match(p.name, /^[a-z][a-z0-9-]*$/);
      assert.ok(p.description.length > 0, `${p.name} has a description`);
      assert.ok(p.file.endsWith('.yaml') || p.file.endsWith('.yml'));
      assert.equal(p.error, undefined, `${p.name}: ${p.error}`);
    }
    const text = lifeboat(t.dir, ['playbook', 'list']);
    assert.equal(text.code, 0);
    for (const p of list) assert.match(text.stdout, new RegExp(`^${p.name}\\s+\\S`, 'm'));
  });

  test('every shipped playbook passes validation (show by NAME)', () => {
    const list = JSON.parse(lifeboat(t.dir, ['playbook', 'list', '-w', 'json']).stdout) as Array<{ name: string }>;
    for (const p of list) {
      const r = lifeboat(t.dir, ['playbook', 'show', p.name]);
      assert.equal(r.code, 0, `${p.name}: ${r.stderr}`);
      assert.match(r.stdout, new RegExp(`^Playbook ${p.name}: `));
    }
    const missing = lifeboat(t.dir, ['playbook', 'show', 'no-such-playbook']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /no shipped playbook no-such-playbook; see 'lifeboat playbook list'/);
  });

  test('show FILE: variables and steps, as text and JSON', () => {
    const r = lifeboat(t.dir, ['playbook', 'show', playbook]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^ {2}members \(list of member\) required; at least 1 items\n {6}prompt: Members to re-add$/m);
    assert.match(r.stdout, /^ {2}2\. readd: for each m in \$\{vars\.members\}$/m);
    assert.match(r.stdout, /^ {5}2\.1\. add \[record\] Add \$\{m\.name\}$/m);
    const j = JSON.parse(lifeboat(t.dir, ['playbook', 'show', playbook, '-w', 'json']).stdout);
    assert.equal(j.name, 'readd-test');
    assert.deepEqual(
      j.variables.map((v: { name: string }) => v.name),
      ['members', 'label', 'log'],
    );
    assert.equal(j.steps[1].forEach, '${vars.members}');
    assert.deepEqual(
      j.steps[1].steps.map((s: { id: string }) => s.id),
      ['add', 'promote'],
    );
  });

  const members = 'members=m2=http://10.0.0.2:2380,http://10.0.0.2:2379;m3=http://10.0.0.3:2380,http://10.0.0.3:2379';

  test('--dry-run prints every step resolved (for-each expanded) and changes nothing', () => {
    const r = lifeboat(t.dir, ['playbook', 'run', playbook, '--dry-run', '--set', members, '--set', `log=${log}`, '--audit-db', db]);
    assert.equal(r.code, 0, r.stderr);
    const out = r.stdout;
    assert.match(out, /^Dry run of playbook readd-test .*nothing is changed, nothing is recorded\.$/m);
    assert.match(
      out,
      /^ {2}members = m2=http:\/\/10\.0\.0\.2:2380,http:\/\/10\.0\.0\.2:2379; m3=http:\/\/10\.0\.0\.3:2380,http:\/\/10\.0\.0\.3:2379 {2}\(--set\)$/m,
    );
    assert.match(out, /^ {2}label {3}= run {2}\(default\)$/m);
    assert.match(out, /^ {2}1\. start \[record\] Start run$/m);
    assert.match(out, /^ {2}for-each readd: for each m in \$\{vars\.members\} \(2 items\)$/m);
    assert.match(out, /^ {4}2\. readd\[1\]\.add \[record\] Add m2$/m);
    assert.match(out, /^ {9}label: add-m2-http:\/\/10\.0\.0\.2:2380$/m);
    assert.match(out, new RegExp(`^         → append "add-m2-http://10\\.0\\.0\\.2:2380" to ${log.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`, 'm'));
    assert.match(out, /^ {4}3\. readd\[1\]\.promote \[record\]$/m);
    assert.match(out, /^ {9}label: promote-<steps\.add\.label>$/m);
    assert.match(out, /^ {9}→ known at run time \(uses \$\{steps\.add\.label\}\)$/m);
    assert.match(out, /^ {4}5\. readd\[2\]\.promote \[record\]$/m);
    assert.match(out, /^ {2}6\. done \[note\]$/m);
    assert.ok(!existsSync(log), 'no step ran');
    assert.ok(!existsSync(db), 'no audit log was written');
    assert.ok(!existsSync(t.path('state')), 'nothing under XDG_STATE_HOME');
    const j = JSON.parse(lifeboat(t.dir, ['playbook', 'run', playbook, '--dry-run', '--set', members, '--set', `log=${log}`, '-w', 'json']).stdout);
    assert.equal(j.dryRun, true);
    assert.deepEqual(
      j.steps.filter((s: { kind: string }) => s.kind === 'step').map((s: { id: string }) => s.id),
      ['start', 'readd[1].add', 'readd[1].promote', 'readd[2].add', 'readd[2].promote', 'done'],
    );
  });

  test('a scripted run with --vars and --set: every step once, the run ID and head printed, the audit log verifies', () => {
    const vars = t.write(
      'vars.yaml',
      `members:\n  - {name: m2, peerUrl: "http://10.0.0.2:2380", clientUrl: "http://10.0.0.2:2379"}\nlabel: from-file\nlog: ${log}\n`,
    );
    const r = lifeboat(t.dir, ['playbook', 'run', playbook, '--vars', vars, '--set', 'label=from-set', '--reason', 'INC-1: scripted test', '--audit-db', db]);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(recorded(log), ['start-from-set', 'add-m2-http://10.0.0.2:2380', 'promote-add-m2-http://10.0.0.2:2380']);
    // Plain log lines, no terminal control codes.
    assert.ok(!r.stdout.includes('\x1b['), r.stdout);
    assert.match(r.stdout, /^\d\d:\d\d:\d\d step readd\[1\]\.add: Add m2$/m);
    assert.match(r.stdout, /^\d\d:\d\d:\d\d {3}done: note: re-added from-set$/m);
    assert.match(r.stdout, /^Run r-\S+ succeeded: 4 steps run\.$/m);
    const { runId, head } = runInfo(r.stdout);

    const audit = AuditLog.open(db, { readonly: true });
    try {
      const run = audit.requireRun(runId);
      assert.equal(run.outcome, 'succeeded');
      assert.equal(run.reason, 'INC-1: scripted test');
      assert.equal(run.playbook, 'readd-test');
      assert.equal((run.variables as { label: string }).label, 'from-set');
      const steps = audit.steps(runId);
      assert.deepEqual(
        steps.map((s) => s.stepId),
        ['start', 'readd[1].add', 'readd[1].promote', 'done'],
      );
      assert.ok(steps.every((s) => s.status === 'succeeded' && s.endedAt !== null));
      assert.deepEqual(steps[1].inputs, { log, label: 'add-m2-http://10.0.0.2:2380' });
      assert.equal(audit.headHash(), head);
      assert.ok(
        audit.events(runId).some((e) => e.kind === 'warning' && e.message === 'step types added (not built in): record, typed, fail, unsafe, ask, ids'),
        'test steps are recorded as such',
      );
    } finally {
      audit.close();
    }
    const verify = lifeboat(t.dir, ['audit', 'verify', '--head', head, '--audit-db', db]);
    assert.equal(verify.code, 0, verify.stdout + verify.stderr);
    const show = lifeboat(t.dir, ['audit', 'show', runId, '--audit-db', db]);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /readd\[1\]\.promote/);
  });

  test('the release CLI has the built-in step types only: no environment variable loads a module of steps', () => {
    const steps = t.path('release.log');
    const file = t.write(
      'release.yaml',
      `name: release-test\ndescription: One fake step\nsteps:\n  - id: one\n    type: record\n    with: {log: "${steps}", label: one}\n`,
    );
    const run = ['playbook', 'run', file, '--reason', 'INC-2: release entry', '--audit-db', t.path('release.db')];
    // What the playbook tests set until it was removed: a release run imported the module it named.
    const fakeSteps = fileURLToPath(new URL('./fakeSteps.js', import.meta.url));
    const release = releaseLifeboat(t.dir, run, { LIFEBOAT_TEST_STEPS: fakeSteps });
    assert.equal(release.code, 2, release.stdout + release.stderr);
    assert.match(release.stderr, /unknown step type "record"/);
    assert.match(release.stderr, /refused: 1 problem/, 'the unknown type is the only problem');
    assert.deepEqual(recorded(steps), []);
    // The same playbook through the test entry point, which adds the fake steps through the API.
    const withSteps = lifeboat(t.dir, run);
    assert.equal(withSteps.code, 0, withSteps.stdout + withSteps.stderr);
    assert.deepEqual(recorded(steps), ['one']);
  });

  test('-w json: the run as JSON on stdout, the log lines on stderr', () => {
    const r = lifeboat(t.dir, [
      'playbook',
      'run',
      playbook,
      '--set',
      members,
      '--set',
      `log=${t.path('json.log')}`,
      '--reason',
      'json',
      '--audit-db',
      db,
      '-w',
      'json',
    ]);
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout);
    assert.equal(j.outcome, 'succeeded');
    assert.deepEqual(j.ran, ['start', 'readd[1].add', 'readd[1].promote', 'readd[2].add', 'readd[2].promote', 'done']);
    assert.match(j.head, /^[0-9a-f]{64}$/);
    assert.match(r.stderr, /step readd\[2\]\.add: Add m3/);
  });

  test('without a terminal: --reason is required (exit 2), nothing recorded', () => {
    const fresh = t.path('noreason.db');
    const r = lifeboat(t.dir, ['playbook', 'run', playbook, '--set', members, '--set', `log=${log}`, '--audit-db', fresh]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--reason is required when there is no terminal/);
    assert.ok(!existsSync(fresh));
  });

  const gated = t.write(
    'gated.yaml',
    `name: gated
description: A confirm, then a safety check
variables:
  log: {type: path}
  unsafe: {type: bool, default: false}
steps:
  - {id: before, type: record, with: {log: "\${vars.log}", label: before}}
  - id: go
    type: confirm
    name: Confirm the removal
    with: {message: "Remove member m2 (8e9e05c52164694d)?"}
  - id: after-confirm
    type: record
    with: {log: "\${vars.log}", label: after-confirm}
  - id: fence
    type: unsafe
    with: {message: "old member m3 still answers at http://10.0.0.3:2380; stop it, or set assume-dead"}
  - {id: after-fence, type: record, with: {log: "\${vars.log}", label: after-fence}}
`,
  );

  test('a confirm with no terminal and no --yes: exit 3 naming the step, later steps not run, recorded as refused', () => {
    const l = t.path('gated1.log');
    const r = lifeboat(t.dir, ['playbook', 'run', gated, '--set', `log=${l}`, '--reason', 'gate test', '--audit-db', db]);
    assert.equal(r.code, 3, r.stdout + r.stderr);
    assert.match(
      r.stderr,
      /^Error: run r-\S+ refused: step go \(Confirm the removal\): needs confirmation \("Remove member m2 \(8e9e05c52164694d\)\?"\) and there is no terminal to ask on/m,
    );
    assert.deepEqual(recorded(l), ['before']);
    const { runId } = runInfo(r.stdout);
    assert.match(r.stdout, new RegExp(`^Resume with: lifeboat playbook resume ${runId} --yes --audit-db `, 'm'));
    const audit = AuditLog.open(db, { readonly: true });
    try {
      assert.equal(audit.requireRun(runId).outcome, 'refused');
      const prompt = audit.events(runId).find((e) => e.kind === 'prompt')!;
      assert.match(prompt.message, /Remove member m2/);
    } finally {
      audit.close();
    }
  });

  test('--yes answers the confirm, but a failed safety check still stops the run with exit 3', () => {
    const l = t.path('gated2.log');
    const r = lifeboat(t.dir, ['playbook', 'run', gated, '--set', `log=${l}`, '--reason', 'gate test', '--yes', '--audit-db', db]);
    assert.equal(r.code, 3, r.stdout + r.stderr);
    assert.match(
      r.stderr,
      /^Error: run r-\S+ refused: step fence \(unsafe\): old member m3 still answers at http:\/\/10\.0\.0\.3:2380; stop it, or set assume-dead$/m,
    );
    assert.deepEqual(recorded(l), ['before', 'after-confirm']);
    const { runId } = runInfo(r.stdout);
    const audit = AuditLog.open(db, { readonly: true });
    try {
      assert.equal(audit.requireRun(runId).outcome, 'refused');
      const fence = audit.steps(runId).find((s) => s.stepId === 'fence')!;
      assert.equal(fence.status, 'failed');
      assert.match(fence.error!, /old member m3 still answers/);
      const prompt = audit.events(runId).find((e) => e.kind === 'prompt')!;
      assert.match(prompt.message, /Remove member m2 \(8e9e05c52164694d\)\?/);
      assert.deepEqual(prompt.data, { answer: true, answeredBy: '--yes' });
    } finally {
      audit.close();
    }
    assert.equal(lifeboat(t.dir, ['audit', 'verify', '--audit-db', db]).code, 0);
  });

  test('a failing step: exit 1, naming the step', () => {
    const file = t.write('fails.yaml', `name: fails\ndescription: d\nsteps:\n  - {id: boom, type: fail, with: {message: no space left on device}}\n`);
    const r = lifeboat(t.dir, ['playbook', 'run', file, '--reason', 'fail test', '--audit-db', db]);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^Error: run r-\S+ failed: step boom \(fail\): no space left on device$/m);
  });

  test('the default audit log is under $XDG_STATE_HOME (never ~/.local in tests)', () => {
    const file = t.write('tiny.yaml', `name: tiny\ndescription: d\nsteps:\n  - {type: note, with: {message: hi}}\n`);
    const r = lifeboat(t.dir, ['playbook', 'run', file, '--reason', 'default db']);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(existsSync(t.path('state', 'lifeboat', 'audit.db')));
    assert.ok(!existsSync(t.path('.local')));
  });
});
