// The AuditLog API as the playbook engine uses it: runs, steps, events, resume.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { AuditLog, isRunId, UnknownRunError } from '../../src/audit/index.js';
import { resolveAuditDbPath } from '../../src/audit/location.js';
import { AuditDbMissingError } from '../../src/audit/schema.js';
import { FakeClock, openLog, recordSampleRun, tempDbPath, tempDir, WHO } from './fixtures.js';

test('a run records who, why, the playbook and its sha256, variables and cluster IDs, and starts running', () => {
  const file = tempDbPath();
  const log = openLog(file);
  const run = log.startRun({
    playbook: 'restore-3-members',
    playbookSha256: 'ab'.repeat(32),
    reason: 'm1 lost its disk',
    variables: { snapshot: '/srv/backup.db', members: 3 },
    clusterIdBefore: 0x8e9e05c52164694dn,
    memberIdsBefore: ['00A1', 'b2'],
  });
  assert.ok(isRunId(run.id), run.id);
  assert.equal(run.id.slice(0, 18), 'r-20261122-083015-');
  assert.deepEqual(
    { ...run, id: undefined, pid: undefined },
    {
      id: undefined,
      pid: undefined,
      startedAt: '2026-11-22T08:30:15.000Z',
      endedAt: null,
      outcome: 'running',
      user: WHO.user,
      host: WHO.host,
      reason: 'm1 lost its disk',
      playbook: 'restore-3-members',
      playbookSha256: 'ab'.repeat(32),
      variables: { snapshot: '/srv/backup.db', members: 3 },
      error: null,
      clusterIdBefore: '8e9e05c52164694d',
      memberIdsBefore: ['a1', 'b2'],
      clusterIdAfter: null,
      memberIdsAfter: null,
      resumes: 0,
      startSeq: 1,
      lastSeq: 1,
    },
  );
  assert.equal(run.pid, process.pid);
  assert.deepEqual(log.runs(), [run]);
  log.close();
});

test('run IDs are unique even when many runs start in the same second', () => {
  const log = openLog(tempDbPath());
  const ids = new Set<string>();
  for (let i = 0; i < 200; i++) ids.add(log.startRun({ playbook: 'p', reason: 'load' }).id);
  assert.equal(ids.size, 200);
  for (const id of ids) assert.match(id, /^r-20261122-083015-[0-9a-f]{4}$/);
  log.close();
});

test('a step is recorded as running when it starts, then with its status, outputs and duration when it ends', () => {
  const clock = new FakeClock();
  const log = openLog(tempDbPath(), clock);
  const { id } = log.startRun({ playbook: 'p', reason: 'r' });
  clock.advance(1000);
  const started = log.startStep(id, {
    ordinal: 1,
    stepId: 'add-m4',
    name: 'Add m4 as a learner',
    type: 'add-learner',
    inputs: { peerUrls: ['http://10.0.0.4:2380'] },
  });
  assert.equal(started.status, 'running');
  assert.equal(started.endedAt, null);
  assert.deepEqual(log.steps(id), [started], 'visible while it runs');
  clock.advance(2500);
  const ended = log.finishStep(started, { status: 'succeeded', outputs: { memberId: '8e9e05c52164694d' } });
  assert.deepEqual(ended, {
    ...started,
    outputs: { memberId: '8e9e05c52164694d' },
    endedAt: '2026-11-22T08:30:18.500Z',
    durationMs: 2500,
    status: 'succeeded',
  });
  assert.equal(ended.startedAt, '2026-11-22T08:30:16.000Z');
  assert.equal(ended.attempt, 1);
  assert.throws(() => log.finishStep(started, { status: 'failed' }), /already ended \(succeeded\)/);
  const again = log.startStep(id, { ordinal: 2, stepId: 'promote-m4', type: 'promote' });
  assert.throws(
    () => log.startStep(id, { ordinal: 2, stepId: 'promote-m4', type: 'promote' }),
    /step 2 \(promote-m4\) of run .* is already running; finish it first/,
  );
  log.finishStep(again, { status: 'succeeded' });
  log.close();
});

test('a failed step keeps its error text; a skipped step counts as completed', () => {
  const log = openLog(tempDbPath());
  const { id } = log.startRun({ playbook: 'p', reason: 'r' });
  const a = log.finishStep(log.startStep(id, { ordinal: 1, stepId: 'a', type: 'confirm' }), { status: 'skipped' });
  const b = log.finishStep(log.startStep(id, { ordinal: 2, stepId: 'b', type: 'promote' }), {
    status: 'failed',
    error: new Error('etcdserver: can only promote a learner member which is in sync with leader'),
  });
  assert.equal(a.status, 'skipped');
  assert.equal(b.error, 'etcdserver: can only promote a learner member which is in sync with leader');
  assert.deepEqual(
    log.completedSteps(id).map((s) => s.stepId),
    ['a'],
  );
  log.close();
});

test('events keep every prompt and its answer, notes and overrides, in the order written', () => {
  const clock = new FakeClock();
  const log = openLog(tempDbPath(), clock);
  const { id } = log.startRun({ playbook: 'p', reason: 'r' });
  const step = log.startStep(id, { ordinal: 1, stepId: 'confirm-restore', type: 'confirm' });
  clock.advance(5);
  log.recordPrompt(id, 'Restore /srv/backup.db over /srv/m1? This destroys its data.', true, { step });
  log.event(id, { kind: 'assume-dead', message: 'member a1 assumed dead', data: { member: 'a1' } });
  log.event(id, { kind: 'note', message: 'paged the on-call' });
  const events = log.events(id);
  assert.deepEqual(
    events.map((e) => [e.kind, e.message, e.data, e.stepSeq]),
    [
      ['prompt', 'Restore /srv/backup.db over /srv/m1? This destroys its data.', { answer: true }, step.seq],
      ['assume-dead', 'member a1 assumed dead', { member: 'a1' }, null],
      ['note', 'paged the on-call', null, null],
    ],
  );
  assert.equal(events[0].at, '2026-11-22T08:30:15.005Z');
  assert.deepEqual(
    log.timeline(id).map((e) => e.type),
    ['step', 'event', 'event', 'event'],
  );
  log.close();
});

test('an interrupted run resumes at its first step not completed, as a new attempt', () => {
  const clock = new FakeClock();
  const file = tempDbPath();
  let log = openLog(file, clock);
  const { id } = log.startRun({ playbook: 'add-members', reason: 'r' });
  for (const [ordinal, stepId] of [
    [1, 'restore'],
    [2, 'start-m1'],
  ] as const) {
    log.finishStep(log.startStep(id, { ordinal, stepId, type: stepId }), { status: 'succeeded', outputs: { n: ordinal } });
  }
  log.startStep(id, { ordinal: 3, stepId: 'add-m2', type: 'add-learner' });
  // The process dies here: no end of step 3, no end of the run.
  log.close();

  log = openLog(file, clock);
  assert.deepEqual(
    log.completedSteps(id).map((s) => [s.ordinal, s.stepId, s.outputs]),
    [
      [1, 'restore', { n: 1 }],
      [2, 'start-m1', { n: 2 }],
    ],
  );
  let state = log.lastRunState(id);
  assert.equal(state.run.outcome, 'running');
  assert.deepEqual(state.completed, [1, 2]);
  assert.equal(state.resumeFrom, 3);
  assert.equal(state.lastStep?.stepId, 'add-m2');
  assert.equal(state.lastStep?.status, 'running');
  assert.deepEqual(state.process, { ...WHO, pid: process.pid });

  log.resumeRun(id, { reason: 'picking up after the crash' });
  const retry = log.startStep(id, { ordinal: 3, stepId: 'add-m2', type: 'add-learner' });
  assert.equal(retry.attempt, 2);
  log.finishStep(retry, { status: 'succeeded' });
  state = log.lastRunState(id);
  assert.deepEqual(state.completed, [1, 2, 3]);
  assert.equal(state.resumeFrom, 4);
  assert.deepEqual(
    state.steps.map((s) => [s.ordinal, s.attempt, s.status]),
    [
      [1, 1, 'succeeded'],
      [2, 1, 'succeeded'],
      [3, 2, 'succeeded'],
    ],
  );
  assert.equal(log.steps(id).length, 4, 'the unfinished first attempt stays on record');
  assert.equal(state.run.resumes, 1);
  log.close();
});

test('a run ended as interrupted or failed can be resumed; its outcome goes back to running, then to the new end', () => {
  const log = openLog(tempDbPath());
  const { id } = log.startRun({ playbook: 'p', reason: 'r' });
  const s = log.startStep(id, { ordinal: 1, stepId: 'wait', type: 'wait-caught-up' });
  log.finishStep(s, { status: 'failed', error: 'interrupted (SIGINT)' });
  log.finishRun(id, { outcome: 'interrupted', error: 'SIGINT' });
  assert.equal(log.requireRun(id).outcome, 'interrupted');
  assert.equal(log.lastRunState(id).resumeFrom, 1);
  assert.throws(() => log.startStep(id, { ordinal: 1, stepId: 'wait', type: 'wait-caught-up' }), /already ended \(interrupted\); cannot start a step/);

  const resumed = log.resumeRun(id);
  assert.equal(resumed.outcome, 'running');
  assert.equal(resumed.endedAt, null);
  assert.equal(resumed.error, null);
  log.finishStep(log.startStep(id, { ordinal: 1, stepId: 'wait', type: 'wait-caught-up' }), { status: 'succeeded' });
  log.finishRun(id, { outcome: 'succeeded', clusterIdAfter: '1c2d3e4f', memberIdsAfter: ['d4'] });
  const run = log.requireRun(id);
  assert.equal(run.outcome, 'succeeded');
  assert.equal(run.clusterIdAfter, '1c2d3e4f');
  assert.deepEqual(run.memberIdsAfter, ['d4']);
  log.close();
});

test('finishRun records the outcome and returns the head hash; an ended run takes no more writes', () => {
  const clock = new FakeClock();
  const log = openLog(tempDbPath(), clock);
  const { runId, head } = recordSampleRun(log, clock);
  assert.match(head, /^[0-9a-f]{64}$/);
  assert.equal(head, log.headHash());
  const run = log.requireRun(runId);
  assert.equal(run.outcome, 'failed');
  assert.equal(run.error, 'step 2 (restore) failed');
  assert.equal(run.endedAt, '2026-11-22T08:30:16.710Z');
  assert.throws(() => log.finishRun(runId, { outcome: 'succeeded' }), /already ended \(failed\)/);
  assert.throws(() => log.event(runId, { kind: 'note', message: 'late' }), /already ended/);
  assert.throws(() => log.updateRun(runId, { clusterIdAfter: 'ab' }), /already ended/);
  assert.equal(log.headHash(), head, 'refused writes leave no row');
  log.close();
});

test('updateRun records cluster and member IDs learned during the run', () => {
  const log = openLog(tempDbPath());
  const { id } = log.startRun({ playbook: 'p', reason: 'r' });
  log.updateRun(id, { clusterIdBefore: 'cdf818194e3a8c32', memberIdsBefore: ['1', '2'] });
  log.updateRun(id, { clusterIdAfter: 0xabcn });
  const run = log.requireRun(id);
  assert.equal(run.clusterIdBefore, 'cdf818194e3a8c32');
  assert.deepEqual(run.memberIdsBefore, ['1', '2']);
  assert.equal(run.clusterIdAfter, 'abc');
  assert.throws(() => log.updateRun(id, { clusterIdAfter: 'not-hex' }), /expected a hex ID/);
  log.close();
});

test('a run cannot succeed while a step is still running', () => {
  const log = openLog(tempDbPath());
  const { id } = log.startRun({ playbook: 'p', reason: 'r' });
  log.startStep(id, { ordinal: 1, stepId: 'promote-m2', type: 'promote' });
  assert.throws(() => log.finishRun(id, { outcome: 'succeeded' }), /step 1 \(promote-m2\) still running/);
  assert.match(log.finishRun(id, { outcome: 'interrupted' }), /^[0-9a-f]{64}$/);
  log.close();
});

test('bad input is refused before anything is written', () => {
  const log = openLog(tempDbPath());
  assert.throws(() => log.startRun({ playbook: 'p', reason: '  ' }), /reason is required/);
  assert.throws(() => log.startRun({ playbook: 'p', reason: 'r', playbookSha256: 'xyz' }), /64 lowercase hex/);
  const { id } = log.startRun({ playbook: 'p', reason: 'r' });
  assert.throws(() => log.startStep(id, { ordinal: 0, stepId: 's', type: 't' }), /from 1/);
  assert.throws(() => log.finishRun(id, { outcome: 'running' as never }), /not "running"/);
  assert.equal(log.rowCount(), 1);
  log.close();
});

test('an unknown run ID is one line naming the file and what to do', () => {
  const file = tempDbPath();
  const log = openLog(file);
  for (const call of [() => log.requireRun('r-1'), () => log.startStep('r-1', { ordinal: 1, stepId: 's', type: 't' }), () => log.lastRunState('r-1')]) {
    assert.throws(call, (err: unknown) => {
      assert.ok(err instanceof UnknownRunError);
      assert.equal(err.message, `no run r-1 in ${file}; see 'lifeboat audit list'`);
      return true;
    });
  }
  assert.equal(log.run('r-1'), undefined);
  log.close();
});

test('opening creates the directories and a WAL database with synchronous=FULL', () => {
  const file = path.join(tempDir(), 'a', 'b', 'audit.db');
  const log = openLog(file);
  log.startRun({ playbook: 'p', reason: 'r' });
  log.close();
  assert.ok(statSync(file).isFile());
  const db = new Database(file);
  assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  db.close();
  // synchronous is per connection: check the one AuditLog opens.
  const inner = (AuditLog.open(file) as unknown as { db: Database.Database }).db;
  assert.equal(inner.pragma('synchronous', { simple: true }), 2, 'FULL');
  inner.close();
});

test('reading a log that does not exist fails without creating it', () => {
  const file = path.join(tempDir(), 'nowhere', 'audit.db');
  assert.throws(
    () => AuditLog.open(file, { readonly: true }),
    (err: unknown) => err instanceof AuditDbMissingError && err.message.startsWith(`no audit log at ${file}`),
  );
  assert.equal(existsSync(path.dirname(file)), false);
});

test('a file that is not an audit log is refused', () => {
  const file = path.join(tempDir(), 'other.db');
  const db = new Database(file);
  db.exec('CREATE TABLE t (x)');
  db.close();
  assert.throws(() => AuditLog.open(file), /is not a Lifeboat audit log/);
});

test('the chain table is append-only: UPDATE and DELETE are refused', () => {
  const file = tempDbPath();
  const log = openLog(file);
  log.startRun({ playbook: 'p', reason: 'r' });
  log.close();
  const db = new Database(file);
  assert.throws(() => db.exec(`UPDATE chain SET payload = '{}'`), /append-only/);
  assert.throws(() => db.exec(`DELETE FROM chain`), /append-only/);
  db.close();
});

test('two handles on one file append to one chain', () => {
  const file = tempDbPath();
  const a = openLog(file);
  const b = openLog(file);
  const r1 = a.startRun({ playbook: 'p', reason: 'one' });
  const r2 = b.startRun({ playbook: 'p', reason: 'two' });
  a.event(r1.id, { kind: 'note', message: 'from a' });
  b.event(r2.id, { kind: 'note', message: 'from b' });
  assert.equal(a.rowCount(), 4);
  assert.equal(a.headHash(), b.headHash());
  assert.deepEqual(a.verify(), { ok: true, head: b.headHash(), rows: 4 });
  a.close();
  b.close();
});

test('resolveAuditDbPath: --audit-db, then LIFEBOAT_AUDIT_DB, then $XDG_STATE_HOME, then ~/.local/state', () => {
  const home = '/home/alice';
  assert.equal(resolveAuditDbPath('/x/a.db', { LIFEBOAT_AUDIT_DB: '/y/b.db' }, home), '/x/a.db');
  assert.equal(resolveAuditDbPath('rel.db', {}, home), path.resolve('rel.db'));
  assert.equal(resolveAuditDbPath(undefined, { LIFEBOAT_AUDIT_DB: '/y/b.db', XDG_STATE_HOME: '/s' }, home), '/y/b.db');
  assert.equal(resolveAuditDbPath(undefined, { XDG_STATE_HOME: '/s' }, home), '/s/lifeboat/audit.db');
  assert.equal(resolveAuditDbPath(undefined, { XDG_STATE_HOME: 'relative' }, home), '/home/alice/.local/state/lifeboat/audit.db');
  assert.equal(resolveAuditDbPath(undefined, {}, home), '/home/alice/.local/state/lifeboat/audit.db');
  assert.equal(resolveAuditDbPath('', { LIFEBOAT_AUDIT_DB: '' }, home), '/home/alice/.local/state/lifeboat/audit.db');
});
