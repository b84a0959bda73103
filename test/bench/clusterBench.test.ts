// The short version of `npm run bench -- cluster` that runs inside `npm test`: both
// systems as 3-member clusters on 127.0.0.1, every kind of figure with tiny sizes
// and one-second loads (no thresholds: the figures are only checked to be there),
// then `bench medians` over the run. Not etcdctl check perf, which always takes
// 60 s a system. The full run is `npm run bench -- cluster`.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { Figure } from '../../bench/figures.js';
import { ROOT } from '../support/lifeboatCluster.js';
import { run } from '../support/tools.js';

const BENCH = path.join(ROOT, 'dist', 'bench', 'index.js');

const SHORT = [
  ...['cluster', '--quick', '--seconds', '1', '--warmup', '0', '--idle-settle', '2', '--workers', '2'],
  ...['--put-clients', '1,8', '--get-clients', '1', '--check-perf', 'none', '--snapshot-keys', '500'],
  ...['--learner-keys', '1000', '--recovery-keys', '300', '--stabilization', '1', '--tag', 'short'],
];

test('bench cluster, short: etcd and Lifeboat side by side in every figure, then their medians', { timeout: 600_000 }, async (t) => {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-bench-short-'));
  t.after(() => fs.rmSync(out, { recursive: true, force: true }));

  // A flag out of range is refused before anything starts, and nothing is written.
  const bad = await run(process.execPath, [BENCH, ...SHORT, '--idle-settle', '1', '--out', out]);
  assert.equal(bad.code, 2, bad.stdout + bad.stderr);
  assert.match(bad.stderr, /--idle-settle at least 2/);
  assert.deepEqual(fs.readdirSync(out), []);

  const r = await run(process.execPath, [BENCH, ...SHORT, '--out', out], { timeoutMs: 540_000 });
  assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
  const json = fs.readdirSync(out).filter((f) => f.endsWith('-short.json'));
  assert.equal(json.length, 1, fs.readdirSync(out).join(' '));
  const base = path.join(out, json[0].slice(0, -'.json'.length));
  const result = JSON.parse(fs.readFileSync(`${base}.json`, 'utf8')) as { status: string; figures: Figure[] };
  assert.equal(result.status, 'complete');

  const both = [
    'rss-idle',
    'rss-idle-settled',
    'put-1-rate',
    'put-8-p99',
    'rss-load',
    'get-linearizable-1-rate',
    'get-serializable-1-rate',
    'cli-start',
    'snapshot-save-500',
    'snapshot-restore-500',
    'learner',
    'fill',
  ];
  for (const id of both) {
    const f = result.figures.find((x) => x.id === id);
    assert.ok(f, `figure ${id} missing`);
    for (const system of ['etcd', 'lifeboat'] as const) {
      const v = f[system];
      assert.ok(typeof v === 'number' && Number.isFinite(v) && v > 0, `${id} of ${system}: ${v}`);
    }
  }
  // Issue 55's figures: the tail, leader changes and idle memory for both systems; the
  // event loop's delay, stalls and memory parts for Lifeboat, which etcd (Go) has none of.
  const figure = (id: string) => {
    const f = result.figures.find((x) => x.id === id);
    assert.ok(f, `figure ${id} missing`);
    return f;
  };
  const bothCounts = ['put-1-p999', 'put-8-p999', 'put-1-leader-changes', 'put-8-leader-changes', 'leader-changes', 'idle-rss', 'idle-pss'];
  for (const id of [...bothCounts, 'idle-private', 'idle-floor-rss', 'idle-over-floor']) {
    for (const system of ['etcd', 'lifeboat'] as const) {
      const v = figure(id)[system];
      assert.ok(typeof v === 'number' && Number.isFinite(v), `${id} of ${system}: ${v}`);
      if (bothCounts.includes(id)) assert.ok(v >= 0, `${id} of ${system}: ${v}`);
    }
  }
  const lifeboatOnly = [
    ...['put-1', 'put-8'].flatMap((p) => ['loop-p99', 'loop-max', 'stalls', 'stalls-attributed', 'stall-on-cpu-max'].map((x) => `${p}-${x}`)),
    ...['heap-used', 'heap-total', 'code-space', 'external', 'array-buffers', 'sqlite-cache', 'watchdog-worker'].map((x) => `idle-${x}`),
  ];
  for (const id of lifeboatOnly) {
    const f = figure(id);
    assert.ok(typeof f.lifeboat === 'number' && f.lifeboat >= 0, `${id} of lifeboat: ${f.lifeboat}`);
    assert.equal(f.text?.etcd, 'n/a (Go)', `${id} of etcd`);
  }
  const raw = (result as unknown as { raw: { lifeboat: Record<string, { loop: unknown[]; stalls: { count: number } }> } }).raw;
  assert.equal(raw.lifeboat['put-8'].loop.length, 3, 'an event-loop delay per member');
  assert.ok(raw.lifeboat['put-8'].stalls.count >= 0);

  const recovery = result.figures.find((x) => x.id === 'recovery-tool');
  assert.ok(recovery?.lifeboat !== undefined && recovery.lifeboat > 0, 'the recovery figure is missing');

  const md = fs.readFileSync(`${base}.md`, 'utf8');
  assert.match(md, /\| puts\/s, 1 clients/);
  assert.match(md, /Run: complete/);
  assert.match(fs.readFileSync(`${base}.svg`, 'utf8'), /^<svg/);

  // Medians of two copies of the run: each figure's ratio, as the README's table shows it.
  const medians = path.join(out, 'medians.md');
  const m = await run(process.execPath, [BENCH, 'medians', `${base}.json`, `${base}.json`, '--out', medians]);
  assert.equal(m.code, 0, m.stdout + m.stderr);
  const puts = fs
    .readFileSync(medians, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('| puts/s, 1 clients'));
  assert.ok(puts, 'no puts row in the medians');
  const f = result.figures.find((x) => x.id === 'put-1-rate')!;
  assert.ok(puts.includes(`${(f.lifeboat! / f.etcd!).toFixed(2)}×`), puts);
});
