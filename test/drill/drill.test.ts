// `lifeboat drill` against a real 3-member Lifeboat cluster: it passes, restores
// into a 3-member scratch cluster (two learners re-added and promoted), prints
// the RTO per phase, records a drill run, writes the Prometheus textfile, tears
// every scratch member down, and leaves the source as it was (revision,
// membership, alarms). A snapshot with a valid checksum but one altered value
// fails (exit 1) naming the key; a truncated one fails on its checksum; bad flags
// and files are one line and exit 2, with nothing recorded. --keep leaves the
// scratch cluster answering at the endpoints it prints.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { clientFor } from '../../src/client/etcdClient.js';
import { ALL_KEYS } from '../../src/client/keyRange.js';
import type { DrillResult } from '../../src/drill/drill.js';
import { prometheusText, previousLastSuccess } from '../../src/drill/prometheusFile.js';
import { LifeboatCluster } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';
import { processesUnder, stopProcessesUnder } from '../support/processes.js';
import { lifeboat, run, ROOT } from '../support/tools.js';
import { alterSnapshotValue, truncateSnapshot } from './snapshotTamper.js';
import { sourceView } from './sourceView.js';

const conn = { dialTimeoutMs: 2000, commandTimeoutMs: 10_000 };

async function drill(...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return run(process.execPath, [path.join(ROOT, 'bin', 'run.js'), 'drill', ...args], { timeoutMs: 120_000 });
}

describe('lifeboat drill on a Lifeboat cluster', () => {
  let cluster: LifeboatCluster;
  let dir: string;
  let auditDb: string;
  let endpoints: string[];
  let portsFrom: number;
  let snapshot: string;

  before(async () => {
    cluster = await LifeboatCluster.start('drill.test', 3);
    endpoints = cluster.endpoints();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-drill-test-'));
    auditDb = path.join(dir, 'audit.db');
    portsFrom = Math.min(...(await freePorts(6, 'drill.test')));
    const c = clientFor(endpoints, conn);
    try {
      for (let i = 0; i < 300; i += 50)
        await Promise.all(Array.from({ length: 50 }, (_, j) => c.put(`/app/key-${String(i + j).padStart(4, '0')}`, `value ${i + j}`)));
      await c.put('/app/key-0042', 'the answer'); // a second revision of one key
    } finally {
      c.close();
    }
    snapshot = path.join(dir, 'saved.db');
    const saved = await lifeboat('snapshot', 'save', snapshot, '--endpoints', endpoints[0]);
    assert.equal(saved.code, 0, saved.stderr);
  });

  after(async () => {
    await stopProcessesUnder(dir);
    await cluster.stopAll();
    if (!process.env.LIFEBOAT_KEEP_TEST_DIRS) fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a drill of 3 members passes, prints the RTO per phase, records a drill run, and leaves the source unchanged', async () => {
    const before = await sourceView(endpoints);
    const scratch = path.join(dir, 'scratch-3');
    const prom = path.join(dir, 'lifeboat_drill.prom');
    const r = await drill(
      '--endpoints',
      endpoints.join(','),
      '--members',
      '3',
      '--stabilization',
      '500ms',
      '--ports-from',
      String(portsFrom),
      '--scratch-dir',
      scratch,
      '--audit-db',
      auditDb,
      '--prometheus',
      prom,
      '-w',
      'json',
    );
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const result = JSON.parse(r.stdout) as DrillResult;
    assert.equal(result.passed, true);
    assert.equal(result.runtime, 'lifeboat');
    assert.equal(result.data?.method, 'hashkv', 'the source still holds the revision: HashKV, not a sample');
    assert.equal(result.data?.keys.scratch, 300);
    assert.equal(result.data?.keys.source, 300);
    assert.deepEqual(
      result.phases.map((p) => p.phase),
      ['snapshot', 'restore', 'first-write', 'member:drill-2', 'member:drill-3'],
    );
    assert.ok(result.phases.every((p) => p.seconds > 0));
    assert.ok(result.writableSeconds !== null && result.totalSeconds !== null && result.totalSeconds > result.writableSeconds);
    assert.deepEqual(
      result.checks.map((c) => [c.name, c.ok]),
      [
        ['snapshot', true],
        ['write', true],
        ['keys', true],
        ['hash', true],
        ['members', true],
      ],
    );
    assert.ok(result.scratch.members.every((m) => Number(new URL(m.clientUrl).port) >= portsFrom));
    // Torn down by the drill itself: no process left, the scratch dir gone.
    assert.deepEqual(processesUnder(scratch), []);
    assert.equal(fs.existsSync(scratch), false);
    // The source saw only reads.
    assert.deepEqual(await sourceView(endpoints), before);
    assert.equal(result.source.unchanged, true);

    // The human form says the same, with the breakdown.
    const text = await lifeboat('audit', 'show', result.runId, '--audit-db', auditDb);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /playbook\s+drill/);
    assert.match(text.stdout, /member:drill-3/);
    // Its steps are recorded as a playbook's are: the source's IDs come from the source step's ids event.
    assert.match(text.stdout, new RegExp(`ids: source cluster ${result.source.before?.clusterId ?? '?'}: members `));
    assert.match(text.stdout, new RegExp(`before\\s+cluster ${result.source.before?.clusterId ?? '?'}`));

    // The Prometheus textfile: success now, and the RTO per phase.
    const metrics = fs.readFileSync(prom, 'utf8');
    assert.match(metrics, /^lifeboat_drill_success 1$/m);
    assert.match(metrics, /^lifeboat_drill_rto_seconds\{phase="restore"\} [0-9.]+$/m);
    assert.match(metrics, /^lifeboat_drill_rto_seconds\{phase="total"\} [0-9.]+$/m);
    assert.ok(Math.abs((previousLastSuccess(prom) ?? 0) - Date.now() / 1000) < 120);
    assert.equal(fs.existsSync(`${prom}.tmp`), false);

    // The report: the RTO as bars (HTML) and as a table (Markdown).
    const html = await lifeboat('audit', 'report', result.runId, '--audit-db', auditDb);
    assert.equal(html.code, 0, html.stderr);
    assert.match(html.stdout, /<section id="drill" data-passed="true">/);
    for (const p of ['snapshot', 'restore', 'first-write', 'member:drill-2', 'writable', 'total']) assert.match(html.stdout, new RegExp(`data-phase="${p}"`));
    const md = await lifeboat('audit', 'report', result.runId, '--markdown', '--audit-db', auditDb);
    assert.match(md.stdout, /\| drill-3 caught up \| [0-9.]+ \|/);
    assert.match(md.stdout, /\| \*\*writable after\*\* \|/);
  });

  test('a snapshot with a valid checksum but one altered value fails (exit 1) and names the key', async () => {
    const altered = path.join(dir, 'altered.db');
    alterSnapshotValue(snapshot, altered, '/app/key-0042', 'not the answer');
    const status = await lifeboat('snapshot', 'status', altered);
    assert.equal(status.code, 0, `the altered file's checksum is valid: ${status.stderr}`);
    const before = await sourceView(endpoints);
    const scratch = path.join(dir, 'scratch-altered');
    const r = await drill('--endpoints', endpoints.join(','), '--from-snapshot', altered, '--scratch-dir', scratch, '--audit-db', auditDb);
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    assert.match(r.stdout, /FAIL hash +KV hash at revision \d+: source 0x[0-9a-f]+, restored 0x[0-9a-f]+; key "\/app\/key-0042": value differs/);
    assert.match(r.stdout, /drill r-\S+ FAILED/);
    assert.deepEqual(await sourceView(endpoints), before);
    assert.deepEqual(processesUnder(scratch), []);
  });

  test('a truncated snapshot fails as truncated (exit 1), before anything is restored', async () => {
    const cut = path.join(dir, 'truncated.db');
    truncateSnapshot(snapshot, cut);
    const r = await drill('--endpoints', endpoints.join(','), '--from-snapshot', cut, '--audit-db', auditDb, '-w', 'json');
    assert.equal(r.code, 1, `${r.stdout}\n${r.stderr}`);
    const result = JSON.parse(r.stdout) as DrillResult;
    assert.equal(result.passed, false);
    assert.deepEqual(
      result.checks.map((c) => [c.name, c.ok]),
      [['snapshot', false]],
    );
    assert.match(result.checks[0].detail, /is truncated \(its header says \d+ pages of \d+ bytes \(\d+ bytes\), the file has \d+ bytes\); copy it again/);
    assert.deepEqual(result.phases, []);
  });

  test('--keep leaves the scratch cluster answering at the endpoints it prints', async () => {
    const scratch = path.join(dir, 'scratch-kept');
    const r = await drill('--endpoints', endpoints[1], '--from-snapshot', snapshot, '--keep', '--scratch-dir', scratch, '--audit-db', auditDb);
    try {
      assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
      const m = /scratch cluster kept \(cluster [0-9a-f]+\), endpoints (\S+)/.exec(r.stdout);
      assert.ok(m, r.stdout);
      const c = clientFor(m[1].split(','), conn);
      try {
        const counted = await c.range(ALL_KEYS.key, { rangeEnd: ALL_KEYS.rangeEnd, countOnly: true });
        assert.equal(counted.count, 301, 'the 300 keys and the drill write');
      } finally {
        c.close();
      }
      assert.equal(processesUnder(scratch).length, 1);
    } finally {
      await stopProcessesUnder(scratch);
    }
    assert.deepEqual(processesUnder(scratch), []);
  });

  test('bad flags and files are one line and exit 2, and nothing is recorded', async () => {
    const notes = path.join(dir, 'notes.txt');
    fs.writeFileSync(notes, 'not a snapshot, but long enough to be read as one: '.repeat(20));
    const runsBefore = (await lifeboat('audit', 'list', '--audit-db', auditDb, '-w', 'json')).stdout;
    const cases: Array<[string[], RegExp]> = [
      [['--members', '0'], /--members 0: give a whole number from 1 to 5/],
      [['--from-snapshot', path.join(dir, 'nope.db')], /snapshot .*nope\.db does not exist; check the path given to --from-snapshot/],
      [['--from-snapshot', dir], /is a directory; give a snapshot file/],
      [['--from-snapshot', notes], /notes\.txt is not a snapshot lifeboat can read/],
      [['--from-snapshot', snapshot, '--runtime', 'etcd'], /is a Lifeboat snapshot, which only a Lifeboat member can restore/],
      [['--prometheus', path.join(dir, 'missing', 'x.prom')], /--prometheus .*: directory .* does not exist/],
      [['--scratch-dir', dir], /--scratch-dir .* is not an empty directory/],
      [['--runtime', 'podman'], /--runtime podman: expected one of auto, lifeboat, etcd/],
    ];
    for (const [args, message] of cases) {
      const r = await drill('--endpoints', endpoints.join(','), '--audit-db', auditDb, ...args);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stdout}\n${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    }
    assert.equal((await lifeboat('audit', 'list', '--audit-db', auditDb, '-w', 'json')).stdout, runsBefore);
  });

  test('audit report --drills lists every drill with its RTO, as a chart and as a table', async () => {
    const md = await lifeboat('audit', 'report', '--drills', '--markdown', '--audit-db', auditDb);
    assert.equal(md.code, 0, md.stderr);
    assert.match(md.stdout, /^## Recovery drills/m);
    assert.match(md.stdout, /\| lifeboat \| 3 \| passed \| [0-9.]+s \| [0-9.]+s \| [0-9.]+s \| [0-9.]+s \| [0-9.]+s \| [0-9.]+s \|/);
    assert.match(md.stdout, /\| \*\*failed\*\* \|/);
    const html = await lifeboat('audit', 'report', '--drills', '--audit-db', auditDb);
    assert.equal(html.code, 0, html.stderr);
    assert.match(html.stdout, /<svg class="chart"[^>]*aria-label="recovery time of each drill over time"/);
    assert.ok((html.stdout.match(/<g class="drill" /g) ?? []).length >= 4);
    const both = await lifeboat('audit', 'report', 'r-20261122-083015-3f2a', '--drills', '--audit-db', auditDb);
    assert.equal(both.code, 2);
  });
});

describe('the Prometheus textfile', () => {
  const summary = {
    passed: false,
    runtime: 'lifeboat' as const,
    members: 1,
    snapshotRevision: 10,
    keys: 5,
    comparison: 'hashkv' as const,
    phases: [{ phase: 'restore', label: 'restore', seconds: 0.25 }],
    writableSeconds: null,
    totalSeconds: null,
    checks: [],
    failures: ['hash: differs'],
  };

  test('a failed drill keeps the last success time of the file before it', () => {
    const text = prometheusText(summary, new Date(2_000_000_000_000), 1_900_000_000);
    assert.match(text, /^lifeboat_drill_success 0$/m);
    assert.match(text, /^lifeboat_drill_last_success_timestamp_seconds 1900000000$/m);
    assert.match(text, /^lifeboat_drill_last_run_timestamp_seconds 2000000000$/m);
    assert.match(text, /^lifeboat_drill_rto_seconds\{phase="restore"\} 0.25$/m);
  });

  test('a failed drill with no success before it writes no last-success time', () => {
    assert.doesNotMatch(prometheusText(summary, new Date(), undefined), /last_success/);
  });
});
