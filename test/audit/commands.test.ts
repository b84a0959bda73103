// `lifeboat audit list|show|export|verify` through the real CLI (node bin/run.js).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EXIT } from '../../src/cli/exitCodes.js';
import { CSV_COLUMNS } from '../../src/audit/exportFormats.js';
import { FakeClock, openLog, recordSampleRun, tamper, tempDbPath, tempDir } from './fixtures.js';

// This file runs as dist/test/audit/commands.test.js: the project root is three levels up.
const root = fileURLToPath(new URL('../../../', import.meta.url));

function lifeboat(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, ['bin/run.js', ...args], {
    cwd: root,
    encoding: 'utf8',
    // HOME and XDG_STATE_HOME point into a temp dir: no test touches ~/.local.
    env: { ...process.env, NO_COLOR: '1', LIFEBOAT_DEBUG: '', LIFEBOAT_AUDIT_DB: '', HOME: scratchHome, XDG_STATE_HOME: '', ...env },
    timeout: 30_000,
  });
  assert.equal(r.error, undefined, `spawn failed: ${r.error}`);
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function assertOneLineError(r: ReturnType<typeof lifeboat>, code: number, text: string | RegExp) {
  assert.equal(r.code, code, `exit code; stderr: ${r.stderr}`);
  assert.match(r.stderr, /^[^\n]+\n$/, `stderr should be exactly one line, got: ${JSON.stringify(r.stderr)}`);
  if (typeof text === 'string') assert.ok(r.stderr.includes(text), `stderr should contain ${text}: ${r.stderr}`);
  else assert.match(r.stderr, text);
}

const scratchHome = tempDir();

// One log shared by the read-only commands: the sample run (failed, with a
// prompt, an override and a failed step) and a second run still going.
const file = tempDbPath();
const clock = new FakeClock();
const log = openLog(file, clock);
const sample = recordSampleRun(log, clock);
clock.advance(60_000);
const second = log.startRun({ playbook: 'add-member', reason: 'grow to 5, "quoted", with commas' });
log.event(second.id, { kind: 'warning', message: 'line one\nline two' });
const head = log.headHash();
log.close();

test('audit list prints one line per run, oldest first', () => {
  const r = lifeboat(['audit', 'list', '--audit-db', file]);
  assert.equal(r.code, EXIT.OK, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.equal(lines.length, 3);
  assert.match(lines[0], /^ID\s+STARTED\s+PLAYBOOK\s+WHO\s+OUTCOME\s+REASON$/);
  assert.match(lines[1], new RegExp(`^${sample.runId}  2026-11-22T08:30:15Z  restore-3-members  alice@db-admin-1  failed\\s+m1 lost its disk$`));
  assert.match(lines[2], new RegExp(`^${second.id}  2026-11-22T08:31:16Z  add-member\\s+alice@db-admin-1  running\\s+grow to 5`));
});

test('audit list -w json prints every run with all its fields', () => {
  const r = lifeboat(['audit', 'list', '-w', 'json', '--audit-db', file]);
  assert.equal(r.code, EXIT.OK, r.stderr);
  const runs = JSON.parse(r.stdout) as Array<Record<string, unknown>>;
  assert.deepEqual(
    runs.map((x) => [x.id, x.outcome, x.reason, x.user, x.host]),
    [
      [sample.runId, 'failed', 'm1 lost its disk', 'alice', 'db-admin-1'],
      [second.id, 'running', 'grow to 5, "quoted", with commas', 'alice', 'db-admin-1'],
    ],
  );
  assert.equal(runs[0].playbookSha256, 'ab'.repeat(32));
  assert.deepEqual(runs[0].memberIdsBefore, ['a1', 'b2', 'c3']);
});

test('audit list finds the log through LIFEBOAT_AUDIT_DB and XDG_STATE_HOME', () => {
  const viaEnv = lifeboat(['audit', 'list', '-w', 'json'], { LIFEBOAT_AUDIT_DB: file });
  assert.equal(viaEnv.code, EXIT.OK, viaEnv.stderr);
  assert.equal((JSON.parse(viaEnv.stdout) as unknown[]).length, 2);
  // file is <tmp>/state/audit.db; XDG_STATE_HOME=<tmp> means <tmp>/lifeboat/audit.db, which does not exist.
  const stateHome = path.dirname(path.dirname(file));
  const viaXdg = lifeboat(['audit', 'list'], { XDG_STATE_HOME: stateHome });
  assertOneLineError(viaXdg, EXIT.FAILURE, `no audit log at ${path.join(stateHome, 'lifeboat', 'audit.db')}`);
});

test('a missing audit log is one line and exit 1, and is not created', () => {
  const missing = path.join(tempDir(), 'nope', 'audit.db');
  for (const cmd of [['list'], ['show', 'r-1'], ['export'], ['verify']]) {
    const r = lifeboat(['audit', ...cmd, '--audit-db', missing]);
    assertOneLineError(r, EXIT.FAILURE, `no audit log at ${missing} (nothing recorded there yet)`);
    assert.equal(r.stdout, '');
  }
  const defaults = lifeboat(['audit', 'list']);
  assertOneLineError(defaults, EXIT.FAILURE, `no audit log at ${path.join(scratchHome, '.local', 'state', 'lifeboat', 'audit.db')}`);
});

test('audit show prints the run header, then steps and events in time order with durations, errors, prompts and answers', () => {
  const r = lifeboat(['audit', 'show', sample.runId, '--audit-db', file]);
  assert.equal(r.code, EXIT.OK, r.stderr);
  const pid = String(process.pid);
  assert.equal(
    r.stdout,
    [
      `run ${sample.runId}: failed`,
      `  playbook   restore-3-members (sha256 ${'ab'.repeat(32)})`,
      '  reason     m1 lost its disk',
      `  who        alice@db-admin-1 (pid ${pid})`,
      '  started    2026-11-22T08:30:15.000Z',
      '  ended      2026-11-22T08:30:16.710Z (1.7s)',
      '  error      step 2 (restore) failed',
      '  before     cluster 8e9e05c52164694d, members a1, b2, c3',
      '  variables  {"members":3,"snapshot":"/srv/backup.db"}',
      '',
      '08:30:15.100  step 1 verify "Verify the snapshot" [verify-snapshot]  succeeded  1.2s',
      '              inputs  {"file":"/srv/backup.db"}',
      '              outputs {"revision":42}',
      '08:30:15.500    ? Is m1 really dead? → yes',
      '08:30:16.350  assume-dead: member a1 assumed dead (--assume-dead a1)',
      '                {"member":"a1"}',
      '08:30:16.400  step 2 restore [restore]  failed  300ms',
      '              inputs  {"dataDir":"/srv/m1"}',
      '              error   data dir /srv/m1 is locked by pid 4121 (a member is running); stop it first',
      '08:30:16.710  run failed: step 2 (restore) failed',
      '',
    ].join('\n'),
  );
});

test('audit show -w json prints the run and its timeline', () => {
  const r = lifeboat(['audit', 'show', sample.runId, '-w', 'json', '--audit-db', file]);
  assert.equal(r.code, EXIT.OK, r.stderr);
  const out = JSON.parse(r.stdout) as { run: { id: string; outcome: string }; timeline: Array<Record<string, unknown>> };
  assert.equal(out.run.id, sample.runId);
  assert.equal(out.run.outcome, 'failed');
  assert.deepEqual(
    out.timeline.map((e) => [e.entry, e.seq, e.status ?? e.kind]),
    [
      ['step', 2, 'succeeded'],
      ['event', 3, 'prompt'],
      ['event', 5, 'assume-dead'],
      ['step', 6, 'failed'],
      ['run', 8, 'run.end'],
    ],
  );
  assert.deepEqual(out.timeline[1].data, { answer: 'yes' });
  assert.equal(out.timeline[3].durationMs, 300);
});

test('audit show of an unknown run is one line and exit 1', () => {
  const r = lifeboat(['audit', 'show', 'r-20260101-000000-beef', '--audit-db', file]);
  assertOneLineError(r, EXIT.FAILURE, `Error: no run r-20260101-000000-beef in ${file}; see 'lifeboat audit list'`);
  assert.equal(r.stdout, '');
});

test('audit show without a run ID is a usage error', () => {
  const r = lifeboat(['audit', 'show', '--audit-db', file]);
  assertOneLineError(r, EXIT.USAGE, 'run_id');
});

test('audit export (json) has every run with its steps and events, and the chain head', () => {
  const r = lifeboat(['audit', 'export', '--audit-db', file]);
  assert.equal(r.code, EXIT.OK, r.stderr);
  const out = JSON.parse(r.stdout) as {
    auditDb: string;
    head: string;
    rows: number;
    runs: Array<{ id: string; steps: Array<{ stepId: string; status: string }>; events: Array<{ kind: string }> }>;
  };
  assert.equal(out.auditDb, file);
  assert.equal(out.head, head);
  assert.equal(out.rows, 10);
  assert.deepEqual(
    out.runs.map((run) => [run.id, run.steps.map((s) => `${s.stepId}:${s.status}`), run.events.map((e) => e.kind)]),
    [
      [sample.runId, ['verify:succeeded', 'restore:failed'], ['prompt', 'assume-dead']],
      [second.id, [], ['warning']],
    ],
  );
});

test('audit export --run picks one run; an unknown --run is one line and exit 1', () => {
  const r = lifeboat(['audit', 'export', '--run', second.id, '--audit-db', file]);
  assert.equal(r.code, EXIT.OK, r.stderr);
  assert.deepEqual(
    (JSON.parse(r.stdout) as { runs: Array<{ id: string }> }).runs.map((x) => x.id),
    [second.id],
  );
  assertOneLineError(lifeboat(['audit', 'export', '--run', 'r-x', '--audit-db', file]), EXIT.FAILURE, 'no run r-x in');
});

test('audit export --format csv has a header and one row per step and event, quoted where needed', () => {
  const r = lifeboat(['audit', 'export', '--format', 'csv', '--audit-db', file]);
  assert.equal(r.code, EXIT.OK, r.stderr);
  const rows = parseCsv(r.stdout);
  assert.deepEqual(rows[0], [...CSV_COLUMNS]);
  const records = rows.slice(1).map((cells) => Object.fromEntries(CSV_COLUMNS.map((c, i) => [c, cells[i]])));
  assert.deepEqual(
    records.map((x) => [x.run_id, x.seq, x.record, x.step_id || x.kind, x.status, x.duration_ms]),
    [
      [sample.runId, '2', 'step', 'verify', 'succeeded', '1200'],
      [sample.runId, '3', 'event', 'prompt', '', ''],
      [sample.runId, '5', 'event', 'assume-dead', '', ''],
      [sample.runId, '6', 'step', 'restore', 'failed', '300'],
      [second.id, '10', 'event', 'warning', '', ''],
    ],
  );
  assert.equal(records[1].message, 'Is m1 really dead?');
  assert.deepEqual(JSON.parse(records[1].data), { answer: 'yes' });
  assert.equal(records[3].error, 'data dir /srv/m1 is locked by pid 4121 (a member is running); stop it first');
  assert.equal(records[4].message, 'line one\nline two', 'a newline survives quoting');
  assert.match(r.stdout, /"{""file"":""\/srv\/backup.db""}"/, 'JSON cells are quoted with doubled quotes');
});

test('audit verify of an intact log exits 0 and prints the head and row count', () => {
  const r = lifeboat(['audit', 'verify', '--audit-db', file]);
  assert.equal(r.code, EXIT.OK, r.stderr);
  assert.equal(r.stdout, `audit log ${file} is intact: 10 rows, head ${head}\n`);
  assert.equal(r.stderr, '');
  const withHead = lifeboat(['audit', 'verify', '--head', head, '--audit-db', file]);
  assert.equal(withHead.code, EXIT.OK, withHead.stderr);
  assert.equal(withHead.stdout, `audit log ${file} is intact: 10 rows, head ${head} (matches --head)\n`);
  const json = lifeboat(['audit', 'verify', '-w', 'json', '--audit-db', file]);
  assert.deepEqual(JSON.parse(json.stdout), { auditDb: file, expectedHead: null, ok: true, head, rows: 10 });
});

test('audit verify of a file that is not a database names the file (the same command passes on a real log)', () => {
  const notDb = path.join(scratchHome, 'not-an-audit.db');
  fs.writeFileSync(notDb, 'these bytes are not SQLite\n'.repeat(200));
  const r = lifeboat(['audit', 'verify', '--audit-db', notDb]);
  assertOneLineError(r, EXIT.FAILURE, `Error: ${notDb} is not a Lifeboat audit log (not an SQLite database); check --audit-db`);
  assert.equal(lifeboat(['audit', 'verify', '--audit-db', file]).code, EXIT.OK);
});

test('audit verify --head with a different hash exits 1 with one line', () => {
  const r = lifeboat(['audit', 'verify', '--head', sample.head, '--audit-db', file]);
  assertOneLineError(r, EXIT.FAILURE, `Error: audit log ${file} fails verification at row 9: written after the expected head (row 8)`);
  assert.equal(r.stdout, '');
  const unknown = lifeboat(['audit', 'verify', '--head', 'f'.repeat(64), '--audit-db', file]);
  assertOneLineError(unknown, EXIT.FAILURE, /fails verification at row 10: the chain ends here with hash [0-9a-f]{64}, not at the expected head f{64}/);
});

test('audit verify --head that is not a sha256 is a usage error', () => {
  assertOneLineError(lifeboat(['audit', 'verify', '--head', 'abc', '--audit-db', file]), EXIT.USAGE, 'expected 64 hex digits');
});

test('audit verify of a tampered log exits 1 naming the first bad row and why; show refuses a forged view', () => {
  const copy = tempDbPath();
  const c = new FakeClock();
  const l = openLog(copy, c);
  const { runId } = recordSampleRun(l, c);
  l.close();
  tamper(copy, `UPDATE chain SET payload = json_set(payload, '$.outcome', 'succeeded') WHERE seq = 8`);
  const r = lifeboat(['audit', 'verify', '--audit-db', copy]);
  assertOneLineError(r, EXIT.FAILURE, `Error: audit log ${copy} fails verification at row 8: hash does not match the row (its contents were edited)`);
  const json = lifeboat(['audit', 'verify', '-w', 'json', '--audit-db', copy]);
  assert.equal(json.code, EXIT.FAILURE);
  assert.deepEqual(JSON.parse(json.stdout).firstBad, { seq: 8, reason: 'hash does not match the row (its contents were edited)' });

  tamper(copy, `DROP VIEW runs`, `CREATE VIEW runs AS SELECT * FROM chain WHERE 0`);
  assertOneLineError(
    lifeboat(['audit', 'show', runId, '--audit-db', copy]),
    EXIT.FAILURE,
    /was tampered with \(view runs was redefined\); see 'lifeboat audit verify'/,
  );
});

test('every audit command has a description and examples in --help', () => {
  for (const cmd of ['list', 'show', 'export', 'verify']) {
    const r = lifeboat(['audit', cmd, '--help']);
    assert.equal(r.code, EXIT.OK, r.stderr);
    assert.match(r.stdout, /^DESCRIPTION$/m, cmd);
    assert.match(r.stdout, new RegExp(`^EXAMPLES\\n\\s+\\$ lifeboat audit ${cmd}`, 'm'), cmd);
    assert.match(r.stdout, /--audit-db=PATH/, cmd);
  }
});

/** RFC 4180, enough for the export: quoted fields, doubled quotes, CRLF rows, newlines inside quotes. */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (quoted) {
      if (ch === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else cell += ch;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      row.push(cell);
      cell = '';
    } else if (ch === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else cell += ch;
  }
  assert.equal(cell, '', 'the export ends with CRLF');
  return rows;
}
