// `npm run screenshots`: regenerates docs/audit-report.png, docs/reference/audit-log.md's picture
// of `lifeboat audit report`: a real run (test/audit/reportRun.ts: it fails at
// its restore step, then a resume succeeds) written as HTML by the CLI and
// rendered by headless Chromium at 1280 px.
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { makeReportedRun } from '../audit/reportRun.js';
import { lifeboat } from '../playbook/support.js';
import { launchChromium, openFile } from './browser.js';
import { ROOT } from './tools.js';

const OUT = path.join(ROOT, 'docs', 'audit-report.png');

const made = makeReportedRun();
const chromium = await launchChromium();
try {
  const html = made.dir.path('report.html');
  const r = lifeboat(made.dir.dir, ['audit', 'report', made.runId, '--html', html, '--audit-db', made.db]);
  assert.equal(r.code, 0, r.stderr);
  const { page, otherRequests } = await openFile(chromium, html, { width: 1280, height: 900 });
  assert.deepEqual(otherRequests, [], 'the page fetched nothing');
  mkdirSync(path.dirname(OUT), { recursive: true });
  await page.screenshot({ path: OUT, fullPage: true });
  console.log(`wrote ${path.relative(ROOT, OUT)} (run ${made.runId})`);
} finally {
  await chromium.close();
  made.dir.remove();
}
