// Every fenced shell block in README.md and docs/ says what a test does with it:
// ```sh run (run as written, no cluster needed: exit 0), ```sh parse (every
// `lifeboat` line in it parsed with the command's own flags, as --help examples are),
// or ```sh skip: REASON (say why it cannot be checked here). An untagged block fails,
// and so does a block with no language (```text for output, ```yaml, ...).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, test } from 'node:test';
import { checkCommandLine, lifeboatLine, loadCommands, type Commands } from '../support/commandLines.js';
import { BIN } from '../support/lifeboatCluster.js';
import { ROOT, run } from '../support/tools.js';

const SHELLS = new Set(['sh', 'bash', 'shell', 'console', 'zsh']);
/** A crontab line's schedule and user, before the command it runs. */
const CRON = /^(?:[\d*/,-]+\s+){5}[a-z_][\w-]*\s+/;

export interface ShellBlock {
  where: string;
  tag: 'run' | 'parse' | 'skip' | 'untagged' | 'bad';
  /** the block's lines, continuations joined */
  lines: string[];
  text: string;
}

/** The fenced shell blocks of a markdown text, with their tags. */
export function shellBlocks(markdown: string, file: string): ShellBlock[] {
  const out: ShellBlock[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(```+|~~~+)\s*(\S*)\s*(.*)$/.exec(lines[i]);
    if (!open) continue;
    const fence = open[2];
    let end = i + 1;
    while (end < lines.length && !lines[end].trimStart().startsWith(fence)) end++;
    const body = lines.slice(i + 1, end);
    if (open[3] === '') out.push({ where: `${file}:${i + 1}`, tag: 'bad', lines: [], text: '' });
    else if (SHELLS.has(open[3])) {
      const info = open[4].trim();
      const tag: ShellBlock['tag'] = info === '' ? 'untagged' : info === 'run' || info === 'parse' ? info : /^skip: \S/.test(info) ? 'skip' : 'bad';
      out.push({
        where: `${file}:${i + 1}`,
        tag,
        lines: body
          .join('\n')
          .replace(/\s*\\\n\s*/g, ' ')
          .split('\n')
          .map((l) => l.replace(CRON, '')),
        text: body.join('\n'),
      });
    }
    i = end;
  }
  return out;
}

function markdownFiles(): string[] {
  const out = [path.join(ROOT, 'README.md')];
  const walk = (dir: string) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.md')) out.push(p);
    }
  };
  walk(path.join(ROOT, 'docs'));
  return out;
}

const blocks = markdownFiles().flatMap((f) => shellBlocks(fs.readFileSync(f, 'utf8'), path.relative(ROOT, f)));
let commands: Commands;
before(async () => {
  commands = await loadCommands();
});

test('the block reader finds untagged, run, parse and skip blocks', () => {
  const md = [
    '# x',
    '```sh',
    'lifeboat version',
    '```',
    '```sh run',
    'lifeboat version',
    '```',
    '```bash skip: needs a cluster',
    'x',
    '```',
    '```sh parse',
    'lifeboat get k \\',
    '  --prefix',
    '```',
    '```yaml',
    'a: 1',
    '```',
    '```sh later',
    '```',
    '```',
    'x',
    '```',
  ].join('\n');
  assert.deepEqual(
    shellBlocks(md, 'x.md').map((b) => [b.where, b.tag]),
    [
      ['x.md:2', 'untagged'],
      ['x.md:5', 'run'],
      ['x.md:8', 'skip'],
      ['x.md:11', 'parse'],
      ['x.md:18', 'bad'],
      ['x.md:20', 'bad'],
    ],
  );
  assert.deepEqual(shellBlocks(md, 'x.md')[3].lines, ['lifeboat get k --prefix']);
});

test('every shell block in README.md and docs/ is tagged run, parse or skip with a reason', () => {
  assert.ok(blocks.length > 10, `found only ${blocks.length} shell blocks`);
  const wrong = blocks.filter((b) => b.tag === 'untagged' || b.tag === 'bad').map((b) => b.where);
  assert.deepEqual(wrong, [], 'tag these blocks: ```sh run, ```sh parse or ```sh skip: REASON; give a language to a block without one');
});

test("every lifeboat line of a parse block parses with its command's flags", async () => {
  const parse = blocks.filter((b) => b.tag === 'parse');
  assert.ok(parse.length > 5);
  for (const b of parse) {
    const runsLifeboat = b.lines.filter((l) => lifeboatLine(l) !== undefined);
    assert.ok(runsLifeboat.length > 0, `${b.where}: a parse block with no lifeboat line: tag it skip with a reason`);
    for (const l of runsLifeboat) await checkCommandLine(commands, l, b.where);
  }
});

test('a parse block with an unknown flag fails, naming the block', async () => {
  const [b] = shellBlocks('```sh parse\nlifeboat snapshot save x.db --no-such-flag\n```\n', 'x.md');
  await assert.rejects(checkCommandLine(commands, b.lines[0], b.where), /x\.md:1: does not parse/);
});

test('every run block runs as written and exits 0', async () => {
  const runs = blocks.filter((b) => b.tag === 'run');
  assert.ok(runs.length > 0);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-doc-blocks-'));
  try {
    const bin = path.join(work, 'bin');
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, 'lifeboat'), `#!/bin/sh\nexec ${process.execPath} ${BIN} "$@"\n`, { mode: 0o755 });
    for (const b of runs) {
      const r = await run('bash', ['-euo', 'pipefail', '-c', b.text], {
        cwd: work,
        env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` },
        timeoutMs: 60_000,
      });
      assert.equal(r.code, 0, `${b.where}: exit ${r.code}\n${r.stdout}${r.stderr}`);
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
});
