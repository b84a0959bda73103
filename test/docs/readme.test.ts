// The README is the front door: short, and everything else one link away in docs/.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT } from '../support/tools.js';

test('the README is at most 250 lines and links every document in docs/', () => {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  assert.ok(readme.split('\n').length <= 250, `README.md has ${readme.split('\n').length} lines`);
  const docs: string[] = [];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.md')) docs.push(path.relative(ROOT, p));
    }
  };
  walk(path.join(ROOT, 'docs'));
  assert.ok(docs.length >= 10, docs.join(', '));
  const unlinked = docs.filter((d) => !readme.includes(`](${d}`));
  assert.deepEqual(unlinked, [], 'documents the README does not link');
});
