// The documentation link check (scripts/checkDocLinks.mjs, run by `npm run lint`) on
// small trees: links to files and headings that exist pass; a missing file, a
// missing heading and a path outside the repository each fail, naming the line.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { ROOT, run } from '../support/tools.js';

function tree(readme: string, docs: Record<string, string> = {}): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-links-'));
  fs.writeFileSync(path.join(dir, 'README.md'), readme);
  for (const [name, text] of Object.entries(docs)) {
    fs.mkdirSync(path.dirname(path.join(dir, 'docs', name)), { recursive: true });
    fs.writeFileSync(path.join(dir, 'docs', name), text);
  }
  return dir;
}

const check = (dir: string) => run(process.execPath, [path.join(ROOT, 'scripts', 'checkDocLinks.mjs'), dir], { timeoutMs: 30_000 });

const DOCS = {
  'recovery/quorum-loss.md': '# Quorum loss\n\n## Plan it: `recover plan`\n\n## Plan it: `recover plan`\n\nBack to [the start](../../README.md#lifeboat).\n',
};

test('links to files and headings that exist pass, code blocks aside', async () => {
  const dir = tree(
    '# Lifeboat\n\nSee [quorum loss](docs/recovery/quorum-loss.md#plan-it-recover-plan-1), [the web](https://example.org/x) and [above](#lifeboat).\n\n```sh\n# not a heading [x](nowhere.md)\n```\n',
    DOCS,
  );
  const r = await check(dir);
  assert.equal(r.code, 0, r.stdout + r.stderr);
});

for (const [what, link, says] of [
  ['a missing file', 'docs/recovery/gone.md', /README\.md:3: docs\/recovery\/gone\.md does not exist/],
  ['a missing heading', 'docs/recovery/quorum-loss.md#fencing', /no heading '#fencing' in docs\/recovery\/quorum-loss\.md/],
  ['a file outside the repository', '../shared/SEMANTICS.md', /outside the repository/],
] as const) {
  test(`${what} fails, naming the line`, async () => {
    const r = await check(tree(`# Lifeboat\n\nSee [it](${link}).\n`, DOCS));
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stderr, says);
  });
}

test('a repository file named in code that does not exist fails; one that exists passes', async () => {
  const dir = tree('# Lifeboat\n\nSee `docs/recovery/quorum-loss.md` and `src/gone.ts`.\n', DOCS);
  const r = await check(dir);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stderr, /README\.md:3: names src\/gone\.ts, which does not exist/);
  assert.doesNotMatch(r.stderr, /quorum-loss/);
});
