// An interactive run through a real pseudo-terminal (tmux): the variable prompt,
// the reason prompt and a confirm inside the live task list are answered by
// keystrokes, and every question and answer lands in the audit log.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { after, describe, test } from 'node:test';
import { AuditLog } from '../../src/audit/index.js';
import { recorded } from './fakeSteps.js';
import { requireTool } from '../support/tools.js';
import { ROOT, TempDir, WITH_STEPS } from './support.js';

function shellQuote(s: string): string {
  return `'${s.replaceAll("'", `'\\''`)}'`;
}

// No tmux fails at once, naming the package (never skipped).
requireTool('tmux');

describe('interactive playbook run (tmux)', () => {
  const t = new TempDir();
  const socket = t.path('tmux.sock');
  const tmux = (...args: string[]) => execFileSync('tmux', ['-S', socket, ...args], { encoding: 'utf8', timeout: 5000 });
  after(() => {
    spawnSync('tmux', ['-S', socket, 'kill-server'], { timeout: 5000 });
    t.remove();
  });

  const screen = (session = 'pb') => tmux('capture-pane', '-p', '-t', session, '-S', '-50');

  /** The shell line tmux runs: `playbook run FILE` against the audit log `db`, then its exit code, kept on screen. */
  function playbookRunCommand(file: string, db: string, extra = ''): string {
    const env = { HOME: t.dir, XDG_STATE_HOME: t.path('state'), LIFEBOAT_FAULT: '', LIFEBOAT_AUDIT_DB: '' };
    return [
      `cd ${shellQuote(ROOT)} &&`,
      'env',
      ...Object.entries(env).map(([k, v]) => shellQuote(`${k}=${v}`)),
      shellQuote(process.execPath),
      shellQuote(WITH_STEPS),
      'playbook run',
      shellQuote(file),
      extra,
      '--audit-db',
      shellQuote(db),
      '; echo "EXIT=$?"; sleep 60',
    ].join(' ');
  }

  async function waitForScreen(pattern: RegExp, timeoutMs = 20_000, session = 'pb'): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      last = screen(session);
      if (pattern.test(last)) return last;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out after ${timeoutMs}ms waiting for ${pattern} on the terminal; it shows:\n${last}`);
  }

  test('prompts for a missing variable and the reason, confirms inside the task list, records it all', async () => {
    const log = t.path('calls.log');
    const db = t.path('audit.db');
    const file = t.write(
      'tty.yaml',
      `name: tty-test
description: Interactive test
variables:
  colour:
    type: string
    prompt: Which colour should the run use?
    validation: {choices: [red, blue]}
  label:
    type: string
    prompt: Label for this run
    validation: {pattern: "^[a-z]+$"}
  quiet: {type: int, default: 3}
steps:
  - id: first
    type: record
    name: Record \${vars.label}
    with: {log: ${log}, label: "\${vars.label}-\${vars.colour}"}
  - id: gate
    type: confirm
    with: {message: "Proceed with \${vars.label}?"}
  - id: second
    type: record
    name: Record after the gate
    with: {log: ${log}, label: after}
`,
    );
    const cmd = playbookRunCommand(file, db);
    tmux('new-session', '-d', '-s', 'pb', '-x', '200', '-y', '50', cmd);

    await waitForScreen(/Which colour should the run use\?/);
    tmux('send-keys', '-t', 'pb', 'Down', 'Enter'); // the second choice: blue
    await waitForScreen(/Label for this run/);
    tmux('send-keys', '-t', 'pb', '-l', 'Bad');
    tmux('send-keys', '-t', 'pb', 'Enter');
    await waitForScreen(/does not match the pattern/);
    tmux('send-keys', '-t', 'pb', 'BSpace', 'BSpace', 'BSpace');
    tmux('send-keys', '-t', 'pb', '-l', 'nightly');
    tmux('send-keys', '-t', 'pb', 'Enter');
    await waitForScreen(/Why are you running this playbook\?/);
    tmux('send-keys', '-t', 'pb', '-l', 'INC-42 tty test');
    tmux('send-keys', '-t', 'pb', 'Enter');
    await waitForScreen(/Proceed with nightly\?/);
    assert.deepEqual(recorded(log), ['nightly-blue'], 'the first step ran before the question');
    tmux('send-keys', '-t', 'pb', 'y');
    tmux('send-keys', '-t', 'pb', 'Enter');
    const end = await waitForScreen(/EXIT=\d+/);
    assert.match(end, /EXIT=0/, end);
    assert.match(end, /Record after the gate/, 'the task list shows the steps');
    assert.match(end, /Run ID: r-\d{8}-\d{6}-[0-9a-f]{4}/);
    assert.match(end, /Audit chain head: [0-9a-f]{64}/);
    assert.deepEqual(recorded(log), ['nightly-blue', 'after']);

    const audit = AuditLog.open(db, { readonly: true });
    try {
      const [run] = audit.runs();
      assert.equal(run.outcome, 'succeeded');
      assert.equal(run.reason, 'INC-42 tty test');
      assert.deepEqual(run.variables, { colour: 'blue', label: 'nightly', quiet: 3 });
      const prompts = audit.events(run.id).filter((e) => e.kind === 'prompt');
      assert.deepEqual(
        prompts.map((p) => [p.message, (p.data as { answer: unknown }).answer]),
        [
          ['Which colour should the run use?', 'blue'],
          ['Label for this run', 'nightly'],
          ['Why are you running this playbook? (recorded in the audit log)', 'INC-42 tty test'],
          ['Proceed with nightly?', true],
        ],
      );
      assert.ok(audit.verify().ok);
    } finally {
      audit.close();
    }
  });

  test('a secret variable is asked for without echo; neither the terminal nor the audit log shows it', async () => {
    const log = t.path('secret.log');
    const db = t.path('secret-audit.db');
    const secret = 'tty-S3cret-value';
    const file = t.write(
      'secret.yaml',
      `name: tty-secret
description: A secret asked on the terminal
variables:
  token:
    type: secret
    prompt: API token
steps:
  - id: use
    type: record
    name: Use \${vars.token}
    with: {log: ${log}, label: "\${vars.token}"}
`,
    );
    const cmd = playbookRunCommand(file, db, '--reason tty-secret');
    tmux('new-session', '-d', '-s', 'sec', '-x', '200', '-y', '50', cmd);
    await waitForScreen(/API token/, 20_000, 'sec');
    tmux('send-keys', '-t', 'sec', '-l', secret);
    await new Promise((r) => setTimeout(r, 300));
    assert.ok(!screen('sec').includes(secret.slice(0, 6)), 'the secret is echoed as it is typed');
    tmux('send-keys', '-t', 'sec', 'Enter');
    const end = await waitForScreen(/EXIT=\d+/, 20_000, 'sec');
    assert.match(end, /EXIT=0/, end);
    assert.deepEqual(recorded(log), [secret], 'the step got the secret');
    // The pane wraps at 200 columns: read it as one line.
    const joined = end.replace(/\n/g, '');
    assert.ok(!joined.includes(secret.slice(0, 6)), end);
    assert.match(joined, /# secrets from the environment: LIFEBOAT_SECRET_TOKEN/);
    const audit = AuditLog.open(db, { readonly: true });
    try {
      const [run] = audit.runs();
      assert.match(String(run.variables.token), /^<redacted> hmac:[0-9a-f]{16}$/);
      const prompt = audit.events(run.id).find((e) => e.kind === 'prompt');
      assert.equal((prompt?.data as { answer: unknown }).answer, run.variables.token, 'the answer is recorded as the digest');
    } finally {
      audit.close();
    }
  });
});
