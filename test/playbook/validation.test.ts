// A bad playbook is refused before anything runs, with one line per problem
// naming file:line:col and the field.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { BUILTIN_STEPS } from '../../src/playbook/builtinSteps.js';
import { PlaybookInvalidError } from '../../src/playbook/errors.js';
import { addStepTypes, loadStepLibrary } from '../../src/playbook/library.js';
import { parsePlaybookWithProblems } from '../../src/playbook/parse.js';
import { validatePlaybook } from '../../src/playbook/validate.js';
import { TEST_STEPS } from './fakeSteps.js';
import { lifeboat, TempDir } from './support.js';

const LIBRARY = { ...BUILTIN_STEPS, ...TEST_STEPS };

/** The problem lines for playbook `text` (named pb.yaml), or [] when it is valid. */
function problems(text: string): string[] {
  try {
    const { playbook, problems: found } = parsePlaybookWithProblems(text, 'pb.yaml');
    validatePlaybook(playbook, LIBRARY, found);
    return [];
  } catch (err) {
    if (err instanceof PlaybookInvalidError) return err.lines();
    throw err;
  }
}

function assertProblem(lines: string[], pattern: RegExp): void {
  assert.ok(
    lines.some((l) => pattern.test(l)),
    `expected a line matching ${pattern}, got:\n${lines.join('\n')}`,
  );
}

const HEAD = 'name: t\ndescription: a test\n';

describe('playbook validation (engine API)', () => {
  test('addStepTypes adds a type, and refuses to replace a built-in or an added one', () => {
    const note = loadStepLibrary().library.note;
    assert.throws(() => addStepTypes({ note: TEST_STEPS.record }), /^Error: step type note already exists/);
    assert.throws(() => addStepTypes({ restore: TEST_STEPS.record }), /^Error: step type restore already exists/);
    assert.equal(loadStepLibrary().library.note, note);
    assert.equal(loadStepLibrary().added, undefined, 'a refused call adds nothing');
    addStepTypes({ record: TEST_STEPS.record });
    assert.equal(loadStepLibrary().library.record, TEST_STEPS.record);
    assert.deepEqual(loadStepLibrary().added, ['record']);
    assert.throws(() => addStepTypes({ record: TEST_STEPS.fail }), /^Error: step type record already exists/);
  });

  test('a valid playbook has no problems', () => {
    assert.deepEqual(
      problems(`${HEAD}variables:\n  who:\n    type: string\n    default: x\nsteps:\n  - type: note\n    with:\n      message: hi \${vars.who}\n`),
      [],
    );
  });

  test('unknown step type: file:line:col of the type, with a suggestion', () => {
    const lines = problems(`${HEAD}steps:\n  - type: note\n    with: {message: a}\n  - type: recrod\n    with: {label: x}\n`);
    assertProblem(lines, /^pb\.yaml:6:11: steps\[2\]\.type: unknown step type "recrod" \(did you mean "record"\?\)/);
  });

  test('a reference to a variable that does not exist', () => {
    const lines = problems(`${HEAD}variables:\n  who: {type: string}\nsteps:\n  - type: note\n    with:\n      message: hello \${vars.whom}\n`);
    assertProblem(lines, /^pb\.yaml:8:16: steps\[1\]\.with\.message: \$\{vars\.whom\}: no variable whom \(did you mean "who"\?\)/);
  });

  test('mistyped parameters: an int that is not one, a bad URL, a list where text goes', () => {
    const lines = problems(
      `${HEAD}steps:\n  - type: typed\n    with:\n      count: abc\n      url: htp://10.0.0.1:2380\n      text: [a, b]\n  - type: typed\n    with:\n      url: http://10.0.0.1\n`,
    );
    assertProblem(lines, /^pb\.yaml:6:14: steps\[1\]\.with\.count: int parameter: expected an integer, got "abc"/);
    assertProblem(lines, /^pb\.yaml:7:12: steps\[1\]\.with\.url: url parameter: "htp:\/\/10\.0\.0\.1:2380" is not an http\(s\):\/\/host:port URL/);
    assertProblem(lines, /^pb\.yaml:8:13: steps\[1\]\.with\.text: string parameter: expected text, got a list/);
    assertProblem(lines, /^pb\.yaml:11:12: steps\[2\]\.with\.url: .*"http:\/\/10\.0\.0\.1" is not an http\(s\):\/\/host:port URL/);
  });

  test('a variable of the wrong type for the parameter', () => {
    const lines = problems(`${HEAD}variables:\n  n: {type: list}\nsteps:\n  - type: typed\n    with:\n      url: \${vars.n}\n`);
    assertProblem(lines, /^pb\.yaml:8:12: steps\[1\]\.with\.url: \$\{vars\.n\} is a list, parameter url takes a url/);
  });

  test('unknown keys everywhere: top level, variable, validation, step, with', () => {
    const lines = problems(
      `${HEAD}varaibles: {}\nvariables:\n  a:\n    type: int\n    defualt: 3\n    validation: {minimum: 1}\nsteps:\n  - type: note\n    whith: {message: x}\n    with: {message: y, colour: red}\n`,
    );
    assertProblem(lines, /^pb\.yaml:3:1: varaibles: unknown key "varaibles" in the playbook \(did you mean "variables"\?\)/);
    assertProblem(lines, /^pb\.yaml:7:5: variables\.a\.defualt: unknown key "defualt" in variable a \(did you mean "default"\?\)/);
    assertProblem(lines, /^pb\.yaml:8:18: variables\.a\.validation\.minimum: unknown key "minimum"/);
    assertProblem(lines, /^pb\.yaml:11:5: steps\[1\]\.whith: unknown key "whith" in a step \(did you mean "with"\?\)/);
    assertProblem(lines, /^pb\.yaml:12:32: steps\[1\]\.with\.colour: step type note has no parameter "colour"/);
  });

  test('missing required keys and parameters', () => {
    const lines = problems(`description: d\nsteps:\n  - type: record\n    with: {log: /tmp/x}\n`);
    assertProblem(lines, /^pb\.yaml:1:1: \(top\): missing key "name"/);
    assertProblem(lines, /^pb\.yaml:3:5: steps\[1\]: missing parameter "label" \(string\) of step type record/);
  });

  test('variable definitions: unknown type, bad default, default breaking validation, bad pattern', () => {
    const lines = problems(
      `${HEAD}variables:\n  a: {type: integer}\n  b: {type: url, default: "10.0.0.1:2380"}\n  c: {type: int, default: 0, validation: {min: 1}}\n  d: {type: string, validation: {pattern: "("}}\nsteps:\n  - type: note\n    with: {message: x}\n`,
    );
    assertProblem(lines, /^pb\.yaml:4:13: variables\.a\.type: unknown type "integer"/);
    assertProblem(lines, /^pb\.yaml:5:27: variables\.b\.default: "10\.0\.0\.1:2380" is not an http\(s\):\/\/host:port URL/);
    assertProblem(lines, /^pb\.yaml:6:27: variables\.c\.default: the default breaks the variable's validation: 0 is below the minimum 1/);
    assertProblem(lines, /^pb\.yaml:7:43: variables\.d\.validation\.pattern: bad regular expression/);
  });

  test('references: later steps, steps inside another for-each, items out of scope, malformed', () => {
    const lines = problems(
      `${HEAD}variables:\n  xs: {type: list, default: [a]}\nsteps:\n  - type: note\n    with: {message: "\${steps.last.label}"}\n  - id: loop\n    for-each: \${vars.xs}\n    as: x\n    steps:\n      - id: inner\n        type: note\n        with: {message: "\${x}"}\n  - type: note\n    with: {message: "\${steps.inner.label} \${x}"}\n  - type: note\n    with: {message: "\${vars.xs + 1}"}\n  - id: last\n    type: note\n    with: {message: ok}\n`,
    );
    assertProblem(lines, /^pb\.yaml:7:21: steps\[1\]\.with\.message: \$\{steps\.last\.label\}: step last \(line 19\) runs later/);
    assertProblem(lines, /^pb\.yaml:16:21: steps\[3\]\.with\.message: \$\{steps\.inner\.label\}: step inner is inside for-each loop/);
    assertProblem(lines, /^pb\.yaml:16:21: steps\[3\]\.with\.message: \$\{x\}: unknown name x/);
    assertProblem(lines, /^pb\.yaml:18:21: steps\[4\]\.with\.message: "\$\{vars\.xs \+ 1\}" is not a reference/);
  });

  test('a list variable cannot be embedded in text; for-each needs a list', () => {
    const lines = problems(
      `${HEAD}variables:\n  xs: {type: list}\n  s: {type: string}\nsteps:\n  - type: note\n    with: {message: "all: \${vars.xs}"}\n  - for-each: \${vars.s}\n    steps:\n      - type: note\n        with: {message: x}\n`,
    );
    assertProblem(lines, /steps\[1\]\.with\.message: \$\{vars\.xs\} is a list; it cannot be part of a longer string/);
    assertProblem(lines, /^pb\.yaml:9:15: steps\[2\]\.for-each: \$\{vars\.s\} is a string; for-each needs a list/);
  });

  test('duplicate step ids; a YAML syntax error names its line', () => {
    assertProblem(
      problems(`${HEAD}steps:\n  - {id: a, type: note, with: {message: x}}\n  - {id: a, type: note, with: {message: y}}\n`),
      /^pb\.yaml:5:10: steps\[2\]\.id: step id a is already used at line 4/,
    );
    assertProblem(problems(`${HEAD}steps:\n  - type: note\n    with: {message: [x\n`), /^pb\.yaml:6:1: \(yaml\): /);
  });

  test('every problem is reported at once, in file order', () => {
    const lines = problems(`${HEAD}bogus: 1\nsteps:\n  - type: nope\n  - type: note\n    with: {message: "\${vars.missing}"}\n`);
    assert.equal(lines.length, 3, lines.join('\n'));
    const lineNumbers = lines.map((l) => Number(l.split(':')[1]));
    assert.deepEqual(
      lineNumbers,
      [...lineNumbers].sort((a, b) => a - b),
    );
  });
});

describe('playbook validation (CLI)', () => {
  const t = new TempDir();
  after(() => t.remove());

  const bad = () =>
    t.write(
      'bad.yaml',
      `${HEAD}variables:\n  peer: {type: url}\nsteps:\n  - type: record\n    with: {log: ${t.path('calls.log')}, label: one}\n  - type: recrod\n    with: {log: x, label: y}\n  - type: typed\n    with: {url: "htp://x:1", count: "\${vars.nope}"}\n  - type: note\n    wiht: {message: z}\n`,
    );

  for (const [what, args] of [
    ['show', ['playbook', 'show']],
    ['run --dry-run', ['playbook', 'run', '--dry-run', '--set', 'peer=http://a:1']],
    ['run', ['playbook', 'run', '--set', 'peer=http://a:1', '--reason', 'test', '--audit-db']],
  ] as Array<[string, string[]]>) {
    test(`${what}: refused with exit 2, one line per problem, nothing run or recorded`, () => {
      const file = bad();
      const argv = [...args];
      if (what === 'run') argv.push(t.path('audit.db'));
      const r = lifeboat(t.dir, [...argv, file]);
      assert.equal(r.code, 2, r.stderr);
      const lines = r.stderr.trimEnd().split('\n');
      assert.equal(lines.length, 5, r.stderr);
      assert.match(lines[0], /bad\.yaml:8:11: steps\[2\]\.type: unknown step type "recrod" \(did you mean "record"\?\)/);
      assert.match(lines[1], /bad\.yaml:11:17: steps\[3\]\.with\.url: url parameter: "htp:\/\/x:1" is not an http\(s\):\/\/host:port URL/);
      assert.match(lines[2], /bad\.yaml:11:37: steps\[3\]\.with\.count: \$\{vars\.nope\}: no variable nope/);
      assert.match(lines[3], /bad\.yaml:13:5: steps\[4\]\.wiht: unknown key "wiht" in a step \(did you mean "with"\?\)/);
      assert.match(lines[4], /^Error: refused: 4 problems \(above\); nothing was run$/);
      assert.equal(r.stdout, '');
      assert.ok(!existsSync(t.path('calls.log')), 'no step ran');
      assert.ok(!existsSync(t.path('audit.db')), 'no audit log was created');
      assert.ok(!existsSync(t.path('state')), 'nothing written under XDG_STATE_HOME');
    });
  }

  test('a missing variable without a terminal: exit 2 naming it, nothing run', () => {
    const file = t.write(
      'needs.yaml',
      `${HEAD}variables:\n  peer: {type: url, prompt: Peer URL}\nsteps:\n  - type: record\n    with: {log: ${t.path('calls2.log')}, label: "\${vars.peer}"}\n`,
    );
    const r = lifeboat(t.dir, ['playbook', 'run', file, '--reason', 'test', '--audit-db', t.path('a2.db')]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^Error: missing variable peer \(url: Peer URL\); give it with --set NAME=VALUE or --vars FILE\.yaml/);
    assert.ok(!existsSync(t.path('calls2.log')));
    assert.ok(!existsSync(t.path('a2.db')));
  });

  test('a bad value from --set or --vars: exit 2, naming the flag or file:line', () => {
    const file = t.write(
      'vals.yaml',
      `${HEAD}variables:\n  peer: {type: url}\n  n: {type: int, validation: {max: 5}}\nsteps:\n  - type: note\n    with: {message: "\${vars.peer} \${vars.n}"}\n`,
    );
    let r = lifeboat(t.dir, ['playbook', 'run', file, '--dry-run', '--set', 'peer=10.0.0.1:2380', '--set', 'n=1']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^Error: --set peer=10\.0\.0\.1:2380: "10\.0\.0\.1:2380" is not an http\(s\):\/\/host:port URL/);
    r = lifeboat(t.dir, ['playbook', 'run', file, '--dry-run', '--set', 'per=http://a:1']);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /has no variable per \(did you mean "peer"\?\)/);
    const vars = t.write('vars.yaml', 'peer: http://a:1\nn: 9\n');
    r = lifeboat(t.dir, ['playbook', 'run', file, '--dry-run', '--vars', vars]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /vars\.yaml:2:4: n: 9 is above the maximum 5/);
  });

  test('a value that only goes wrong once variables are bound is refused before the run, naming the parameter', () => {
    const file = t.write(
      'late.yaml',
      `${HEAD}variables:\n  host: {type: string}\nsteps:\n  - type: record\n    with: {log: ${t.path('calls3.log')}, label: first}\n  - type: typed\n    with:\n      url: http://\${vars.host}:2380\n`,
    );
    const r = lifeboat(t.dir, ['playbook', 'run', file, '--set', 'host=bad host', '--reason', 'test', '--audit-db', t.path('a3.db')]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /late\.yaml:10:12: steps\[2\]\.with\.url: url parameter: "http:\/\/bad host:2380" is not an http\(s\):\/\/host:port URL/);
    assert.ok(!existsSync(t.path('calls3.log')), 'the first step did not run');
  });
});
