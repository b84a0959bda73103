// The engine through its API, with fake steps injected: for-each, outputs passed
// between steps, failures, safety checks, confirmations, the audit record, and
// the dry-run plan.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { after, describe, test } from 'node:test';
import { AuditLog } from '../../src/audit/index.js';
import { exitCodeFor } from '../../src/cli/exitCodes.js';
import { BUILTIN_STEPS } from '../../src/playbook/builtinSteps.js';
import { runPlaybook, type RunPlaybookOptions } from '../../src/playbook/engine.js';
import { parsePlaybook } from '../../src/playbook/parse.js';
import { planRun } from '../../src/playbook/plan.js';
import type { ExecNode, RunView } from '../../src/playbook/runView.js';
import { ScriptedRenderer } from '../../src/cli/output/scriptedRenderer.js';
import { validatePlaybook } from '../../src/playbook/validate.js';
import { bindVariables } from '../../src/playbook/variables.js';
import { recorded, TEST_STEPS } from './fakeSteps.js';
import { TempDir } from './support.js';

const LIBRARY = { ...BUILTIN_STEPS, ...TEST_STEPS };
const CONNECTION = { dialTimeoutMs: 1000, commandTimeoutMs: 1000 };

/** A terminal stand-in: answers ask() from a list and records the questions. */
class AnsweringView implements RunView {
  readonly interactive = true;
  readonly lines: string[] = [];
  readonly questions: string[] = [];
  constructor(private readonly answers: boolean[]) {}
  log(line: string): void {
    this.lines.push(line);
  }
  async run(nodes: ExecNode[]): Promise<void> {
    for (const n of nodes) {
      if (n.kind === 'for-each') {
        await this.run((await n.expand()).nodes);
        continue;
      }
      await n.run({
        setTitle: () => {},
        progress: (t) => this.lines.push(t),
        event: (k, m) => this.lines.push(`${k}: ${m}`),
        ask: (q) => {
          this.questions.push(q);
          const a = this.answers.shift();
          if (a === undefined) return Promise.reject(new Error(`unexpected question ${q}`));
          return Promise.resolve(a);
        },
        reuseRecorded: (r) => this.lines.push(`skip ${r}`),
      });
    }
  }
}

describe('playbook engine', () => {
  const t = new TempDir();
  after(() => t.remove());
  let n = 0;

  async function run(yaml: string, opts: Partial<RunPlaybookOptions> & { sets?: string[] } = {}) {
    const file = t.write(`pb${++n}.yaml`, yaml);
    const pb = parsePlaybook(yaml, file);
    validatePlaybook(pb, LIBRARY);
    const variables = await bindVariables(pb, { sets: opts.sets ?? [] });
    const audit = AuditLog.open(t.path(`audit${n}.db`));
    const lines: string[] = [];
    const view = opts.view ?? new ScriptedRenderer((l) => lines.push(l));
    const result = await runPlaybook({
      playbook: pb,
      library: LIBRARY,
      variables,
      audit,
      view,
      reason: 'engine test',
      yes: false,
      connection: CONNECTION,
      ...opts,
    });
    return { result, audit, lines, log: t.path(`calls${n}.log`), pb };
  }

  const log = () => t.path(`calls${n + 1}.log`);

  test('steps run in order; for-each once per item with stable ids; outputs flow to later steps', async () => {
    const l = log();
    const yaml = `name: t
description: d
variables:
  names: {type: list, default: [a, b, c]}
steps:
  - id: first
    type: record
    with: {log: ${l}, label: start}
  - id: each
    for-each: \${vars.names}
    as: x
    steps:
      - id: rec
        type: record
        with: {log: ${l}, label: "item-\${x}"}
      - id: echo
        type: record
        with: {log: ${l}, label: "after-\${steps.rec.label}-\${steps.first.label}"}
  - id: last
    type: record
    with: {log: ${l}, label: "end-\${steps.first.calls}"}
`;
    const { result, audit } = await run(yaml);
    assert.equal(result.outcome, 'succeeded', result.error?.message);
    assert.equal(exitCodeFor(result.outcome), 0);
    assert.deepEqual(recorded(l), ['start', 'item-a', 'after-item-a-start', 'item-b', 'after-item-b-start', 'item-c', 'after-item-c-start', 'end-1']);
    assert.deepEqual(result.ran, ['first', 'each[1].rec', 'each[1].echo', 'each[2].rec', 'each[2].echo', 'each[3].rec', 'each[3].echo', 'last']);
    const steps = audit.steps(result.runId);
    assert.deepEqual(
      steps.map((s) => [s.ordinal, s.stepId, s.status]),
      result.ran.map((id, i) => [i + 1, id, 'succeeded']),
    );
    assert.deepEqual(steps[2].inputs, { log: l, label: 'after-item-a-start' });
    assert.deepEqual(steps[2].outputs, { label: 'after-item-a-start', calls: 1 });
    assert.equal(audit.run(result.runId)!.outcome, 'succeeded');
    assert.equal(result.head, audit.headHash());
    assert.deepEqual(audit.verify(result.head), { ok: true, head: result.head, rows: audit.rowCount() });
    assert.ok(existsSync(result.runDir) && result.runDir.startsWith(t.dir), result.runDir);
    audit.close();
  });

  test('a failing step stops the run: failed, exit 1, the step named, later steps not run', async () => {
    const l = log();
    const { result, audit } = await run(`name: t
description: d
steps:
  - {id: a, type: record, with: {log: ${l}, label: a}}
  - {id: boom, type: fail, name: Break things, with: {message: disk on fire}}
  - {id: c, type: record, with: {log: ${l}, label: c}}
`);
    assert.equal(result.outcome, 'failed');
    assert.equal(exitCodeFor(result.outcome), 1);
    assert.equal(result.failedStep, 'boom');
    assert.equal(result.error?.message, 'step boom (Break things): disk on fire');
    assert.deepEqual(recorded(l), ['a']);
    const steps = audit.steps(result.runId);
    assert.deepEqual(
      steps.map((s) => [s.stepId, s.status, s.error]),
      [
        ['a', 'succeeded', null],
        ['boom', 'failed', 'disk on fire'],
      ],
    );
    const rec = audit.run(result.runId)!;
    assert.equal(rec.outcome, 'failed');
    assert.equal(rec.error, 'step boom (Break things): disk on fire');
    audit.close();
  });

  test('a SafetyCheckError stops the run refused (exit 3), even with yes', async () => {
    const l = log();
    const { result, audit } = await run(
      `name: t
description: d
steps:
  - {type: confirm, with: {message: sure?}}
  - {id: fence, type: unsafe, with: {message: member m2 answers at http://10.0.0.2:2380}}
  - {type: record, with: {log: ${l}, label: after}}
`,
      { yes: true },
    );
    assert.equal(result.outcome, 'refused');
    assert.equal(exitCodeFor(result.outcome), 3);
    assert.equal(result.failedStep, 'fence');
    assert.match(result.error!.message, /^step fence \(unsafe\): member m2 answers/);
    assert.deepEqual(recorded(l), []);
    assert.equal(audit.steps(result.runId)[0].status, 'succeeded', 'the confirm passed with yes');
    audit.close();
  });

  test('a confirmation without a terminal and without yes: refused (exit 3) naming the step; the question is recorded', async () => {
    const { result, audit } = await run(`name: t
description: d
steps:
  - {id: go, type: confirm, with: {message: Remove member m2?}}
`);
    assert.equal(result.outcome, 'refused');
    assert.equal(exitCodeFor(result.outcome), 3);
    assert.match(
      result.error!.message,
      /^step go \(confirm\): needs confirmation \("Remove member m2\?"\) and there is no terminal to ask on; resume with 'lifeboat playbook resume r-\S+ --yes'/,
    );
    const prompts = audit.events(result.runId).filter((e) => e.kind === 'prompt');
    assert.equal(prompts.length, 1);
    assert.match(prompts[0].message, /Remove member m2\?/);
    audit.close();
  });

  test('on a terminal: a "no" to a confirm step refuses the run; a step may ask and go on', async () => {
    const l = log();
    const view = new AnsweringView([false, true, false]);
    const { result, audit } = await run(
      `name: t
description: d
steps:
  - {id: q1, type: ask, with: {question: first?}}
  - {id: q2, type: ask, with: {question: second?}}
  - {type: record, with: {log: ${l}, label: "\${steps.q1.answer}-\${steps.q2.answer}"}}
  - {id: gate, type: confirm, with: {message: really?}}
  - {type: record, with: {log: ${l}, label: never}}
`,
      { view },
    );
    assert.deepEqual(view.questions, ['first?', 'second?', 'really?']);
    assert.deepEqual(recorded(l), ['false-true']);
    assert.equal(result.outcome, 'refused');
    assert.equal(result.failedStep, 'gate');
    assert.match(result.error!.message, /the operator answered no to "really\?"/);
    const answers = audit.events(result.runId).filter((e) => e.kind === 'prompt');
    assert.equal(answers.length, 3);
    audit.close();
  });

  test('the run records its variables, the playbook, notes, and ends with the head hash', async () => {
    const { result, audit, pb } = await run(
      `name: t
description: d
variables:
  n: {type: int, default: 3}
  peer: {type: url}
steps:
  - {type: note, with: {message: "peer \${vars.peer}, n \${vars.n}"}}
`,
      { sets: ['peer=http://10.0.0.1:2380/'] },
    );
    assert.equal(result.outcome, 'succeeded');
    const rec = audit.run(result.runId)!;
    assert.deepEqual(rec.variables, { n: 3, peer: 'http://10.0.0.1:2380' });
    assert.equal(rec.reason, 'engine test');
    assert.equal(rec.playbook, 't');
    assert.equal(rec.playbookSha256, pb.sha256);
    const events = audit.events(result.runId);
    const start = events.find((e) => e.kind === 'playbook')!;
    assert.equal((start.data as { file: string }).file, pb.absPath);
    const note = events.find((e) => e.kind === 'note')!;
    assert.equal(note.message, 'peer http://10.0.0.1:2380, n 3');
    assert.ok(note.stepSeq !== null, 'the note belongs to its step');
    assert.equal(audit.headHash(), result.head);
    audit.close();
  });

  test('a step reports cluster and member IDs through an event: they land on the run record', async () => {
    const { result, audit } = await run(`name: t\ndescription: d\nsteps:\n  - {type: ids}\n`);
    assert.equal(result.outcome, 'succeeded');
    const rec = audit.requireRun(result.runId);
    assert.equal(rec.clusterIdBefore, '8e9e05c52164694d');
    assert.equal(rec.clusterIdAfter, '2f0a');
    assert.deepEqual(rec.memberIdsAfter, ['a1', 'b2']);
    audit.close();
  });

  test("typed parameters are converted; a step parameter named endpoints defaults to the run's --endpoints", async () => {
    const { result, audit } = await run(
      `name: t
description: d
variables:
  m: {type: member}
steps:
  - id: typed
    type: typed
    with:
      url: http://h:1
      count: "42"
      member: \${vars.m}
      names: a, b
      flag: "yes"
      wait: 1m30s
      dir: ./rel
      text: 7
`,
      { sets: ['m=m2=http://10.0.0.2:2380,http://10.0.0.2:2379'], endpoints: 'http://10.0.0.1:2379,http://10.0.0.2:2379' },
    );
    assert.equal(result.outcome, 'succeeded', result.error?.message);
    assert.deepEqual(audit.steps(result.runId)[0].outputs, {
      url: 'http://h:1',
      count: 42,
      member: { name: 'm2', peerUrl: 'http://10.0.0.2:2380', clientUrl: 'http://10.0.0.2:2379' },
      names: ['a', 'b'],
      flag: true,
      wait: 90_000,
      dir: `${process.cwd()}/rel`,
      text: '7',
      endpoints: ['http://10.0.0.1:2379', 'http://10.0.0.2:2379'],
    });
    audit.close();
  });

  test('a reference to an output a step did not return fails that step, naming file:line', async () => {
    const l = log();
    const { result, audit } = await run(`name: t
description: d
steps:
  - {id: a, type: record, with: {log: ${l}, label: a}}
  - id: b
    type: record
    with: {log: ${l}, label: "\${steps.a.nothing}"}
`);
    assert.equal(result.outcome, 'failed');
    assert.match(
      result.error!.message,
      /^step b \(record\): .*pb\d+\.yaml:7:\d+: steps\[2\]\.with\.label: \$\{steps\.a\.nothing\}: steps\.a returned no output nothing \(it has: calls, label\)/,
    );
    assert.deepEqual(recorded(l), ['a']);
    audit.close();
  });

  test('the plan (dry-run) expands for-each and resolves what it can, without running anything', async () => {
    const l = log();
    const yaml = `name: t
description: d
variables:
  names: {type: list, default: [a, b]}
steps:
  - {id: first, type: record, with: {log: ${l}, label: start}}
  - id: each
    for-each: \${vars.names}
    as: x
    steps:
      - {id: rec, type: record, with: {log: ${l}, label: "\${x}-\${steps.first.label}"}}
  - id: later
    for-each: \${steps.first.label}
    steps:
      - {id: inner, type: record, with: {log: ${l}, label: "\${item}"}}
`;
    const pb = parsePlaybook(yaml, t.write('plan.yaml', yaml));
    validatePlaybook(pb, LIBRARY);
    const plan = planRun(pb, LIBRARY, (await bindVariables(pb)).values);
    assert.equal(plan.problems.empty, true);
    const steps = plan.entries.filter((e) => e.kind === 'step');
    assert.deepEqual(
      steps.map((s) => [s.ordinal, s.stableId, s.params?.label ?? null, s.runTimeRefs]),
      [
        [1, 'first', 'start', []],
        [2, 'each[1].rec', null, ['${steps.first.label}']],
        [3, 'each[2].rec', null, ['${steps.first.label}']],
        [null, 'later[*].inner', null, ['${item}']],
      ],
    );
    assert.deepEqual(steps[0].describe, [`append "start" to ${l}`]);
    assert.equal(steps[1].partialParams?.label, 'a-<steps.first.label>');
    assert.ok(!existsSync(l), 'nothing ran');
  });

  test('variables: --set wins over --vars, which wins over the default; prompts are asked only on a terminal', async () => {
    const yaml = `name: t
description: d
variables:
  a: {type: string, default: da}
  b: {type: int, default: 1}
  c: {type: string, prompt: "Value of c?"}
  d: {type: bool, default: false}
steps:
  - {type: note, with: {message: x}}
`;
    const pb = parsePlaybook(yaml, 'v.yaml');
    const vars = t.write('vars.yaml', 'a: from-file\nb: 2\nc: file-c\n');
    const bound = await bindVariables(pb, { varsFile: vars, sets: ['b=3'] });
    assert.deepEqual(bound.values, { a: 'from-file', b: 3, c: 'file-c', d: false });
    assert.deepEqual(bound.sources, { a: 'vars-file', b: 'set', c: 'vars-file', d: 'default' });
    const asked: string[] = [];
    const prompted = await bindVariables(pb, { sets: ['a=x'], ask: (def) => (asked.push(def.name), Promise.resolve(def.name === 'c' ? 'typed' : 5)) });
    assert.deepEqual(asked, ['c'], 'only c: it has prompt text; b and d take their defaults silently');
    assert.deepEqual(
      prompted.prompts.map(({ at, ...p }) => (assert.ok(Math.abs(Date.now() - Date.parse(at)) < 60_000, at), p)),
      [{ variable: 'c', question: 'Value of c?', answer: 'typed' }],
    );
    await assert.rejects(bindVariables(pb, {}), /missing variable c \(string: Value of c\?\)/);
  });
});
