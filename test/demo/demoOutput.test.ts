// `npm run demo` (and `-- --runtime etcd`), as a newcomer runs it: it succeeds, and what it prints lines up. The
// commands it runs print through pipes in chunks that end anywhere; their lines sit
// under the demo's own at one indentation, tables and step lines aligned.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT, requireEtcdTools } from '../support/tools.js';

const DEMO = path.join(ROOT, 'dist', 'scripts', 'demo', 'recoveryDemo.js');

function runDemo(runtime: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [DEMO, '--runtime', runtime], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => {
      child.kill('SIGINT');
      reject(new Error(`the demo ran over 150 s:\n${out}`));
    }, 150_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

for (const runtime of ['lifeboat', 'etcd']) {
  test(`the demo recovers its ${runtime} cluster and prints every command line under its own, aligned`, { timeout: 180_000 }, async () => {
    if (runtime === 'etcd') requireEtcdTools();
    const { code, out } = await runDemo(runtime);
    assert.equal(code, 0, out);
    const lines = out.split('\n').filter((l) => l !== '');
    const own = /^\[ *\d+\.\ds\] /;
    const indent = ' '.repeat(9);
    for (const l of lines)
      assert.ok(own.test(l) || l.startsWith(indent) || l.startsWith('kept:'), `a line neither the demo's nor indented under it: ${JSON.stringify(l)}`);

    // The commands' lines keep their own layout: the step lines of the run start in one column...
    const steps = lines.filter((l) => /\d\d:\d\d:\d\d (step|done) /.test(l));
    assert.ok(steps.length >= 10, out);
    assert.equal(new Set(steps.map((l) => l.search(/\d\d:\d\d:\d\d/))).size, 1, steps.join('\n'));
    const notes = lines.filter((l) => /^ *\d\d:\d\d:\d\d {3}\S+: /.test(l));
    assert.equal(new Set(notes.map((l) => l.search(/\d\d:\d\d:\d\d/))).size, 1, notes.join('\n'));
    // ...and the variables table has one column of '='.
    const start = lines.findIndex((l) => l.trim() === 'Variables:');
    assert.ok(start > 0, out);
    const rows = lines.slice(start + 1).filter((l, i, all) => all.slice(0, i + 1).every((r) => / = /.test(r)));
    assert.ok(rows.length >= 5, lines.slice(start, start + 10).join('\n'));
    assert.equal(new Set(rows.map((l) => l.indexOf(' = '))).size, 1, rows.join('\n'));
    assert.equal(new Set(rows.map((l) => l.search(/\S/))).size, 1, rows.join('\n'));
  });
}
