// docs/reference/commands.md is written from the commands themselves by `npm run docs`
// (scripts/writeCommandReference.mjs over the oclif manifest the build makes): it is
// current, and a command, flag or description changed without regenerating it fails.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT, run } from '../support/tools.js';

const SCRIPT = path.join(ROOT, 'scripts', 'writeCommandReference.mjs');
const MANIFEST = path.join(ROOT, 'oclif.manifest.json');
const REFERENCE = path.join(ROOT, 'docs', 'reference', 'commands.md');
const writeReference = (...args: string[]) => run(process.execPath, [SCRIPT, ...args], { timeoutMs: 30_000 });

test('the command reference is what npm run docs writes from the commands', async () => {
  const r = await writeReference('--check');
  assert.equal(r.code, 0, r.stderr);
  const text = fs.readFileSync(REFERENCE, 'utf8');
  const manifest = JSON.parse(fs.readFileSync(MANIFEST, 'utf8'));
  for (const id of Object.keys(manifest.commands)) assert.ok(text.includes(`## lifeboat ${id.split(':').join(' ')}\n`), `no section for ${id}`);
});

test('a flag added to a command without regenerating the reference fails the check, naming the file', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-reference-'));
  try {
    const manifest = JSON.parse(fs.readFileSync(MANIFEST, 'utf8'));
    manifest.commands['snapshot:save'].flags['new-flag'] = { name: 'new-flag', type: 'boolean', description: 'a flag the reference does not list' };
    const changed = path.join(dir, 'manifest.json');
    fs.writeFileSync(changed, JSON.stringify(manifest));
    const copy = path.join(dir, 'commands.md');
    fs.copyFileSync(REFERENCE, copy);
    const stale = await writeReference('--check', '--manifest', changed, '--out', copy);
    assert.equal(stale.code, 1, stale.stdout + stale.stderr);
    assert.match(stale.stderr, /commands\.md is stale: run npm run docs/);
    // Regenerated, it lists the flag and passes.
    assert.equal((await writeReference('--manifest', changed, '--out', copy)).code, 0);
    assert.match(fs.readFileSync(copy, 'utf8'), /`--new-flag` \|/);
    assert.equal((await writeReference('--check', '--manifest', changed, '--out', copy)).code, 0);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
