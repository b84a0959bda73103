// `lifeboat audit report` through the real CLI, on a real run (a playbook run that
// fails, then a resume that succeeds): Markdown and HTML output, where they go,
// secrets masked, errors; and the report of a recover plan and of a broken chain.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import { AuditLog } from '../../src/audit/index.js';
import { looksSecret, Redactor } from '../../src/audit/redact.js';
import { buildRunReport } from '../../src/audit/report.js';
import { EXIT } from '../../src/cli/exitCodes.js';
import { renderReportHtml } from '../../src/cli/output/reportHtml.js';
import { renderReportMarkdown } from '../../src/cli/output/reportMarkdown.js';
import { formatDuration } from '../../src/cli/output/timelineOutput.js';
import { lifeboat } from '../playbook/support.js';
import { failsWithOneLine } from '../support/tools.js';
import { FakeClock, openLog, recordSampleRun, tamper, tempDbPath } from './fixtures.js';
import { makeReportedRun, SECRET } from './reportRun.js';

describe('audit report of a playbook run that failed, then was resumed and succeeded', () => {
  const made = makeReportedRun();
  after(() => made.dir.remove());
  const report = (...args: string[]) => lifeboat(made.dir.dir, ['audit', 'report', made.runId, '--audit-db', made.db, ...args]);

  test('--markdown prints the outcome, reason, cluster, every step with its duration and status per session, the prompt and the chain', () => {
    const r = report('--markdown');
    assert.equal(r.code, EXIT.OK, r.stderr);
    const md = r.stdout;
    assert.match(md, new RegExp(`^## Run \`${made.runId}\`: SUCCEEDED$`, 'm'));
    assert.match(md, /^\| reason \| INC-4711: m1 lost its disk \|$/m);
    assert.match(md, /^\| resumed \| 1 time \|$/m);
    assert.match(md, /^\| before \| `8e9e05c52164694d` \| not recorded \|$/m);
    assert.match(md, /^\| after \| `2f0a` \| `a1`, `b2` \|$/m);
    assert.match(md, /^\*\*Resume 1\*\* .* made the restore dir/m);

    const audit = AuditLog.open(made.db, { readonly: true });
    const attempts = audit.steps(made.runId);
    const head = audit.headHash();
    audit.close();
    // Each recorded attempt is a row with its duration and status; the failed one stands out.
    for (const s of attempts) {
      const status = s.status === 'failed' ? '\\*\\*FAILED\\*\\*' : s.status;
      const row = new RegExp(`^\\| ${s.ordinal} \\| \`${s.stepId.replace(/[[\]]/g, '\\$&')}\`.*\\| ${formatDuration(s.durationMs ?? -1)} \\| ${status}`, 'm');
      assert.match(md, row, `step ${s.stepId} attempt ${s.attempt}`);
    }
    assert.equal(attempts.length, made.firstSession.length + made.resumed.length - 3);
    // The three steps the resume skipped as done.
    assert.equal(md.match(/_skipped_ \(done in attempt 1\)/g)?.length, 3);
    assert.match(md, /^- step 4 `restore` error: ENOENT: no such file or directory/m);
    assert.match(md, /^\| [\d:.]+ \| Restore m1 from its data dir, replacing the cluster\? \(step `go`\) \| yes \(by --yes\) \|$/m);
    assert.match(md, /^\| `admin-password` \| _\[redacted\]_ \| default \|$/m);
    assert.match(md, new RegExp(`^audit log ${made.db} is intact: \\d+ rows, head ${head}$`, 'm'));
  });

  test('no output shows the secret variable, though a step interpolated it', () => {
    for (const args of [['--markdown'], [], ['-w', 'json']]) {
      const r = report(...args);
      assert.equal(r.code, EXIT.OK, r.stderr);
      assert.ok(!r.stdout.includes(SECRET), `${args.join(' ')} shows the secret`);
    }
    assert.ok(report('-w', 'json').stdout.includes('admin:[redacted]'), 'the step input that held it is masked in place');
  });

  test('without a flag the HTML page goes to stdout; --html FILE and --out FILE write a file with no FILE.tmp left', () => {
    const r = report();
    assert.equal(r.code, EXIT.OK, r.stderr);
    assert.match(r.stdout, /^<!DOCTYPE html>/);
    assert.doesNotMatch(r.stdout, /<script|<link|src=|@import|url\((?!#)/, 'nothing fetched, no script');

    const html = made.dir.path('report.html');
    const w = report('--html', html);
    assert.equal(w.code, EXIT.OK, w.stderr);
    assert.equal(w.stdout, '');
    assert.match(readFileSync(html, 'utf8'), /^<!DOCTYPE html>/);
    assert.ok(!existsSync(`${html}.tmp`));

    const md = made.dir.path('report.md');
    const m = report('--markdown', '--out', md);
    assert.equal(m.code, EXIT.OK, m.stderr);
    assert.match(readFileSync(md, 'utf8'), /^## Run /);
    assert.ok(!existsSync(`${md}.tmp`));
  });

  test('--html and --out refuse an existing FILE (left byte-identical) unless --force', () => {
    for (const [flag, name] of [
      ['--html', 'kept.html'],
      ['--out', 'kept.md'],
    ]) {
      const file = made.dir.path(name);
      writeFileSync(file, 'the post-mortem notes\n');
      const refused = report(flag, file);
      failsWithOneLine({ ...refused, ms: 0 }, EXIT.REFUSED, `${flag} ${file} already exists`);
      assert.match(refused.stderr, /--force/);
      assert.equal(readFileSync(file, 'utf8'), 'the post-mortem notes\n');
      const forced = report(flag, file, '--force');
      assert.equal(forced.code, EXIT.OK, forced.stderr);
      assert.notEqual(readFileSync(file, 'utf8'), 'the post-mortem notes\n');
    }
  });

  test('--html with --markdown is a usage error', () => {
    failsWithOneLine({ ...report('--markdown', '--html', made.dir.path('x.html')), ms: 0 }, EXIT.USAGE, '--html');
  });

  test('an unknown run, a file that is not an audit log and a missing log are one line and exit 2', () => {
    const unknown = lifeboat(made.dir.dir, ['audit', 'report', 'r-20260101-000000-beef', '--audit-db', made.db]);
    failsWithOneLine({ ...unknown, ms: 0 }, EXIT.USAGE, `no run r-20260101-000000-beef in ${made.db}; see 'lifeboat audit list'`);
    const playbook = made.dir.path('restore-and-regrow.yaml');
    const foreign = lifeboat(made.dir.dir, ['audit', 'report', made.runId, '--audit-db', playbook]);
    failsWithOneLine({ ...foreign, ms: 0 }, EXIT.USAGE, `${playbook} is not a Lifeboat audit log`);
    const missing = path.join(made.dir.dir, 'nope', 'audit.db');
    failsWithOneLine({ ...lifeboat(made.dir.dir, ['audit', 'report', made.runId, '--audit-db', missing]), ms: 0 }, EXIT.USAGE, `no audit log at ${missing}`);
    assert.ok(!existsSync(missing), 'not created');
  });
});

describe('audit report of recorded runs', () => {
  test('a recover run shows the plan it showed: the recommended source, what is kept and what is lost', () => {
    const file = tempDbPath();
    const clock = new FakeClock();
    const log = openLog(file, clock);
    const run = log.startRun({ playbook: 'recover', reason: 'quorum lost', variables: { source: '/srv/m1' } });
    log.event(run.id, {
      kind: 'plan',
      message: 'recover plan: recommended /srv/m1 (highest commit)',
      data: {
        text: 'Sources:\n* data-dir /srv/m1\n...',
        plan: {
          sources: [
            { kind: 'data-dir', path: '/srv/m1' },
            { kind: 'snapshot', path: '/backup/db' },
          ],
          recommended: 0,
          why: 'it has the highest commit index (1042)',
          keeps: ['every committed write up to index 1042'],
          loses: ['3 entries past commit (1043..1045)'],
          warnings: [],
          command: 'lifeboat recover --from-data-dir /srv/m1 --yes',
        },
      },
    });
    log.recordPrompt(run.id, 'Recover from /srv/m1?', true, { data: { session: 'recover' } });
    log.finishRun(run.id, { outcome: 'succeeded' });
    const r = buildRunReport(log, run.id);
    log.close();
    assert.deepEqual(
      [r.plans[0].recommended, r.plans[0].keeps, r.plans[0].loses],
      ['/srv/m1', ['every committed write up to index 1042'], ['3 entries past commit (1043..1045)']],
    );
    const md = renderReportMarkdown(r);
    assert.match(md, /^\*\*Lost\*\*\n\n- 3 entries past commit \(1043\.\.1045\)$/m);
    const html = renderReportHtml(r);
    assert.match(html, /<ul class="lost"><li>3 entries past commit \(1043\.\.1045\)<\/li><\/ul>/);
    assert.match(html, /<ul class="kept"><li>every committed write up to index 1042<\/li><\/ul>/);
  });

  test('a log whose rows were edited still reports, and says where the chain breaks', () => {
    const file = tempDbPath();
    const clock = new FakeClock();
    const log = openLog(file, clock);
    const sample = recordSampleRun(log, clock);
    log.close();
    tamper(file, `UPDATE chain SET payload = replace(payload, 'm1 lost its disk', 'routine') WHERE seq = 1`);
    const audit = AuditLog.open(file, { readonly: true });
    const r = buildRunReport(audit, sample.runId);
    audit.close();
    assert.equal(r.chain.ok, false);
    assert.match(renderReportMarkdown(r), /fails verification at row 1: hash does not match the row/);
    assert.match(renderReportHtml(r), /<section id="chain" class="chain bad" data-ok="false">/);
  });

  test('secret-looking names: passwords, tokens and keys, not key files or key counts', () => {
    for (const name of ['admin-password', 'db_passwd', 'apiToken', 'initial-cluster-token', 'client-key', 'API_KEY', 'secret', 'privateKey', 'db-pass']) {
      assert.ok(looksSecret(name), name);
    }
    for (const name of ['members', 'keyFile', 'keyCount', 'keys', 'endpoints', 'passes', 'monkey']) assert.ok(!looksSecret(name), name);
    const r = new Redactor({ 'root-password': 's3cret-value', name: 'm1' });
    assert.deepEqual(r.value({ label: 'login s3cret-value', password: 'other', nested: [{ token: 'x' }] }), {
      label: 'login [redacted]',
      password: '[redacted]',
      nested: [{ token: '[redacted]' }],
    });
  });
});
