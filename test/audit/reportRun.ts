// A real run to report on, made through the CLI: `playbook run` of a playbook of
// fake steps (test/playbook/fakeSteps.ts) that fails at its restore step (its log
// directory does not exist yet), then `playbook resume` once the directory is
// there, which skips the three steps already done and succeeds. It has a
// confirmation answered by --yes, cluster IDs before and after, a note, and a
// secret variable that one step's input interpolates.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { lifeboat, TempDir } from '../playbook/support.js';

/** The secret the playbook's admin-password variable holds: no report may show it. */
export const SECRET = 'hunter2-correct-horse';

export interface ReportedRun {
  dir: TempDir;
  db: string;
  runId: string;
  /** the step ids in the order the report lists them: the first session, then the resume */
  firstSession: Array<[string, string]>;
  resumed: Array<[string, string]>;
}

export function playbookText(work: string): string {
  return `name: restore-and-regrow
description: Restore from the freshest survivor, then re-add two members (fake steps)
variables:
  admin-password: {type: string, default: ${SECRET}}
  members: {type: list, default: [m2, m3]}
steps:
  - id: check
    type: ids
    name: Check the cluster before changing it
  - id: inspect
    type: record
    name: Inspect the survivors
    with: {log: ${work}/calls.log, label: inspect, sleep: 120ms}
  - id: go
    type: confirm
    with: {message: "Restore m1 from its data dir, replacing the cluster?"}
  - id: restore
    type: record
    name: Restore m1
    with: {log: ${work}/restore/calls.log, label: restore, sleep: 60ms}
  - id: readd
    for-each: \${vars.members}
    as: m
    steps:
      - id: add
        type: record
        name: Add \${m} as a learner
        with: {log: ${work}/calls.log, label: "add-\${m}", sleep: 90ms}
  - id: login
    type: record
    name: Log in to the admin API
    with: {log: ${work}/calls.log, label: "admin:\${vars.admin-password}", sleep: 30ms}
`;
}

/** Runs the playbook (it fails at restore), makes the missing directory, resumes it (it succeeds). */
export function makeReportedRun(): ReportedRun {
  const dir = new TempDir();
  const db = dir.path('audit.db');
  const file = dir.write('restore-and-regrow.yaml', playbookText(dir.dir));
  const first = lifeboat(dir.dir, ['playbook', 'run', file, '--reason', 'INC-4711: m1 lost its disk', '--yes', '--audit-db', db]);
  assert.equal(first.code, 1, `the first run fails at restore:\n${first.stdout}\n${first.stderr}`);
  const m = /Run ID: (r-\d{8}-\d{6}-[0-9a-f]{4})/.exec(first.stdout + first.stderr);
  assert.ok(m, `no run ID in:\n${first.stdout}\n${first.stderr}`);
  const runId = m[1];
  mkdirSync(dir.path('restore'));
  const resumed = lifeboat(dir.dir, ['playbook', 'resume', runId, '--reason', 'made the restore dir', '--audit-db', db]);
  assert.equal(resumed.code, 0, `the resume succeeds:\n${resumed.stdout}\n${resumed.stderr}`);
  return {
    dir,
    db,
    runId,
    firstSession: [
      ['check', 'succeeded'],
      ['inspect', 'succeeded'],
      ['go', 'succeeded'],
      ['restore', 'failed'],
    ],
    resumed: [
      ['check', 'skipped'],
      ['inspect', 'skipped'],
      ['go', 'skipped'],
      ['restore', 'succeeded'],
      ['readd[1].add', 'succeeded'],
      ['readd[2].add', 'succeeded'],
      ['login', 'succeeded'],
    ],
  };
}
