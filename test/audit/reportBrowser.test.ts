// `lifeboat audit report --html` as a person sees it: the page of a real run
// (failed, then resumed) rendered by headless Chromium at a desktop and a phone
// width. Every step attempt is on the page with its duration and status, the
// failed one stands out, nothing sticks out sideways, nothing is fetched, and a
// screenshot is taken. No chromium: the test fails at once naming the package.
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { AuditLog } from '../../src/audit/index.js';
import { formatDuration } from '../../src/cli/output/timelineOutput.js';
import { lifeboat } from '../playbook/support.js';
import { inPage, launchChromium, openFile, overflow, type HeadlessBrowser } from '../support/browser.js';
import { makeReportedRun, SECRET, type ReportedRun } from './reportRun.js';

interface StepRow {
  session: string;
  stepId: string;
  status: string;
  attempt: string;
  duration: string;
  background: string;
}

describe('audit report --html in headless Chromium', () => {
  let made: ReportedRun;
  let chromium: HeadlessBrowser;
  let html: string;

  before(async () => {
    chromium = await launchChromium();
    made = makeReportedRun();
    html = made.dir.path('report.html');
    const r = lifeboat(made.dir.dir, ['audit', 'report', made.runId, '--html', html, '--audit-db', made.db]);
    assert.equal(r.code, 0, r.stderr);
  });
  after(async () => {
    await chromium?.close();
    made?.dir.remove();
  });

  for (const width of [1280, 480]) {
    test(`at ${width}px: every step with its duration and status, the failed one highlighted, the outcome; no sideways overflow; nothing fetched`, async () => {
      const { page, otherRequests } = await openFile(chromium, html, { width, height: 900 });
      try {
        assert.deepEqual(otherRequests, [], 'the page fetched nothing but itself');

        const outcome = await inPage<{ text: string; attr: string | null }>(
          page,
          `({ text: document.querySelector('#outcome').textContent, attr: document.querySelector('#run').dataset.outcome })`,
        );
        assert.deepEqual(outcome, { text: 'succeeded', attr: 'succeeded' });

        const rows = await inPage<StepRow[]>(
          page,
          `Array.from(document.querySelectorAll('tr.step')).map((tr) => ({
            session: tr.closest('.session').dataset.session,
            stepId: tr.dataset.stepId,
            status: tr.dataset.status,
            attempt: tr.dataset.attempt,
            duration: tr.querySelector('.duration').textContent,
            background: getComputedStyle(tr.querySelector('td')).backgroundColor,
          }))`,
        );
        assert.deepEqual(
          rows.map((r) => [r.session, r.stepId, r.status]),
          [...made.firstSession.map(([id, st]) => ['0', id, st]), ...made.resumed.map(([id, st]) => ['1', id, st])],
        );
        // Durations are the audit log's, as people read them.
        const audit = AuditLog.open(made.db, { readonly: true });
        const attempts = audit.steps(made.runId);
        audit.close();
        for (const a of attempts) {
          const row = rows.find((r) => r.stepId === a.stepId && r.attempt === String(a.attempt) && r.status !== 'skipped');
          assert.ok(row, `${a.stepId} attempt ${a.attempt} on the page`);
          assert.equal(row.duration, formatDuration(a.durationMs ?? -1), a.stepId);
        }
        for (const r of rows.filter((x) => x.status === 'skipped')) assert.equal(r.duration, '—');
        const failed = rows.find((r) => r.status === 'failed');
        const ok = rows.find((r) => r.status === 'succeeded');
        const skipped = rows.find((r) => r.status === 'skipped');
        assert.ok(failed && ok && skipped);
        assert.notEqual(failed.background, ok.background, 'a failed step stands out');
        assert.notEqual(skipped.background, ok.background, 'a skipped step stands out');

        // The chart: one bar per row, in the same order, with the same status.
        const bars = await inPage<string[]>(
          page,
          `Array.from(document.querySelectorAll('svg.chart g.bar')).map((g) => g.dataset.stepId + ' ' + g.dataset.status)`,
        );
        assert.deepEqual(
          bars,
          rows.map((r) => `${r.stepId} ${r.status}`),
        );
        const charts = await inPage<Array<{ w: number; h: number }>>(
          page,
          `Array.from(document.querySelectorAll('svg.chart')).map((s) => ({ w: s.getBoundingClientRect().width, h: s.getBoundingClientRect().height }))`,
        );
        assert.equal(charts.length, 2, 'a chart per session');
        for (const c of charts) assert.ok(c.w > 0.8 * (width - 64) && c.h > 50, `the chart is drawn full width: ${JSON.stringify(c)}`);

        const layout = await overflow(page);
        assert.ok(layout.scrollWidth <= layout.innerWidth, `the page scrolls sideways at ${width}px: ${JSON.stringify(layout)}`);
        assert.deepEqual(layout.sticking, [], `elements stick out past ${width}px`);

        const text = await page.content();
        assert.ok(!text.includes(SECRET), 'the secret is not on the page');

        const shot = made.dir.path(`report-${width}.png`);
        await page.screenshot({ path: shot, fullPage: true });
        assert.ok(statSync(shot).size > 10_000, 'a screenshot was taken');
      } finally {
        await page.close();
      }
    });
  }
});
