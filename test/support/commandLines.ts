// `lifeboat` command lines as the docs and --help examples write them, read as sh
// reads them and checked against the commands themselves: parsed by oclif with the
// command's own flags and arguments (strict: an unknown flag or a stray argument
// fails), IDs read as the command reads them, playbook variables looked up in the
// playbook. Used by test/cli/helpExamples.test.ts and test/docs/docBlocks.test.ts.
import assert from 'node:assert/strict';
import { Config, Parser, type Command } from '#oclif-core';
import { parseLeaseId, parseMemberId } from '../../src/client/ids.js';
import { parseIdText } from '../../src/common/ids.js';
import { locatePlaybook } from '../../src/playbook/locate.js';
import { readPlaybook } from '../../src/playbook/parse.js';
import { ROOT } from './tools.js';

/** One shell word list per pipeline stage; quotes, `$(...)`, `# comments` and redirections as sh reads them. */
export function shellWords(line: string): { stages: string[][]; redirects: Array<{ op: string; file: string }> } {
  const stages: string[][] = [[]];
  const redirects: Array<{ op: string; file: string }> = [];
  let word: string | undefined;
  let pendingRedirect: string | undefined;
  const end = () => {
    if (word === undefined) return;
    if (pendingRedirect) {
      redirects.push({ op: pendingRedirect, file: word });
      pendingRedirect = undefined;
    } else stages[stages.length - 1].push(word);
    word = undefined;
  };
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (c === "'" || c === '"') {
      const close = line.indexOf(c, i + 1);
      assert.ok(close > i, `unterminated quote in: ${line}`);
      word = (word ?? '') + line.slice(i + 1, close);
      i = close;
    } else if (c === '$' && line[i + 1] === '(') {
      const close = line.indexOf(')', i);
      assert.ok(close > i, `unterminated $( in: ${line}`);
      word = (word ?? '') + line.slice(i, close + 1);
      i = close;
    } else if (/\s/.test(c)) end();
    else if (c === '#' && word === undefined) break;
    else if (c === '|' || c === ';' || c === '&') {
      end();
      if (line[i + 1] === c) i++; // || and &&
      stages.push([]);
    } else if (c === '>') {
      if (word !== undefined && /^\d$/.test(word))
        word = undefined; // 2> names the stream, not a word
      else end();
      const dup = /^>?&\d/.exec(line.slice(i + 1)); // 2>&1: no file
      if (dup) {
        i += dup[0].length;
        continue;
      }
      pendingRedirect = line[i + 1] === '>' ? '>>' : '>';
      if (pendingRedirect === '>>') i++;
    } else word = (word ?? '') + c;
  }
  end();
  return { stages: stages.filter((s, i) => i === 0 || s.length > 0), redirects };
}

export interface LifeboatLine {
  /** the words after `lifeboat` */
  argv: string[];
  /** NAME=value words before it (and `npx`) */
  env: string[];
  redirects: Array<{ op: string; file: string }>;
  /** read from a pipe (not the first stage) */
  piped: boolean;
}

/** The `lifeboat` invocation in a line, or undefined when it runs none. */
export function lifeboatLine(line: string): LifeboatLine | undefined {
  const { stages, redirects } = shellWords(line);
  // `lifeboat ...`, or `npx lifeboat ...` in the repository
  const command = (s: string[]) => s.filter((w) => !/^[A-Z_]+=/.test(w)).slice(0, 2);
  const stage = stages.findIndex((s) => command(s)[0] === 'lifeboat' || command(s).join(' ') === 'npx lifeboat');
  if (stage < 0) return undefined;
  const words = stages[stage];
  const at = words.indexOf('lifeboat');
  return { argv: words.slice(at + 1), env: words.slice(0, at).filter((w) => w !== 'npx'), redirects, piped: stage > 0 };
}

export interface Commands {
  byId: Map<string, Command.Class>;
  /** every --help example: the command's id and its line with `lifeboat` for the bin */
  examples: Array<{ id: string; line: string }>;
}

export async function loadCommands(): Promise<Commands> {
  const config = await Config.load(ROOT);
  const byId = new Map<string, Command.Class>();
  const examples: Commands['examples'] = [];
  for (const c of config.commands) {
    const cls = await c.load();
    byId.set(c.id, cls);
    for (const e of cls.examples ?? []) {
      const text = typeof e === 'string' ? e : e.command;
      examples.push({ id: c.id, line: text.replaceAll('<%= config.bin %>', 'lifeboat') });
    }
  }
  return { byId, examples };
}

function variablesOf(playbook: string): Set<string> {
  return new Set(readPlaybook(locatePlaybook(playbook)).variables.map((v) => v.name));
}

/** The command a line runs: the longest run of leading words that names one. */
export function commandOf(commands: Commands, argv: string[]): string | undefined {
  for (let n = Math.min(3, argv.length); n > 0; n--) {
    const id = argv.slice(0, n).join(':');
    if (commands.byId.has(id)) return id;
  }
  return undefined;
}

/** Fails (assert) with `where` when `line` does not parse as `lifeboat` would read it, or names what does not exist. */
export async function checkCommandLine(commands: Commands, line: string, where: string, expectedId?: string): Promise<void> {
  const invocation = lifeboatLine(line);
  assert.ok(invocation, `${where}: the line does not run lifeboat: ${line}`);
  const { argv, env } = invocation;
  const id = expectedId ?? commandOf(commands, argv);
  assert.ok(id !== undefined, `${where}: no such command: ${line}`);
  const cls = commands.byId.get(id);
  assert.ok(cls, `${where}: no such command ${id}`);
  assert.deepEqual(argv.slice(0, id.split(':').length), id.split(':'), `${where}: ${line}`);
  const rest = argv.slice(id.split(':').length);
  const flagDefs = { ...cls.baseFlags, ...cls.flags };
  let parsed: { args: Record<string, unknown>; flags: Record<string, unknown> };
  try {
    parsed = await Parser.parse(rest, { flags: flagDefs, args: cls.args ?? {}, strict: cls.strict ?? true });
  } catch (e) {
    assert.fail(`${where}: does not parse (${(e as Error).message}): ${line}`);
  }
  for (const assignment of env) {
    const name = assignment.slice(0, assignment.indexOf('='));
    const flag = name
      .replace(/^LIFEBOAT_/, '')
      .toLowerCase()
      .replaceAll('_', '-');
    assert.ok(name.startsWith('LIFEBOAT_') && flag in flagDefs, `${where}: ${name} is no flag's variable: ${line}`);
  }
  const { args, flags } = parsed;
  if (typeof args.id === 'string') parseMemberId(args.id);
  if (typeof flags.lease === 'string') parseLeaseId(flags.lease);
  if (typeof flags['superseded-by'] === 'string') assert.notEqual(parseIdText(flags['superseded-by']), undefined, line);
  if (typeof flags.head === 'string') assert.match(flags.head, /^[0-9a-f]{64}$/, line);
  const sets = (flags.set as string[] | undefined) ?? [];
  const playbook = id === 'recover' ? 'recover-from-quorum-loss' : typeof args.playbook === 'string' ? args.playbook : undefined;
  // A file of the operator's own (a path, or NAME.yaml) is not in the repository to look into.
  if (playbook !== undefined && !playbook.includes('/') && !/\.ya?ml$/.test(playbook)) {
    const known = variablesOf(playbook);
    for (const s of sets) {
      const name = s.slice(0, s.indexOf('='));
      assert.ok(known.has(name), `${where}: playbook ${playbook} has no variable ${name}: ${line}`);
    }
  }
}
