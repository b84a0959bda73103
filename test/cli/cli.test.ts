// Runs the real CLI (node bin/run.js) as a child process, as a user or CI would.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Args, Errors, Parser } from '#oclif-core';
import { EXIT, exitFor } from '../../src/cli/exitCodes.js';

// This file runs as dist/test/cli/cli.test.js: dist is two levels up, the project root its parent.
const root = fileURLToPath(new URL('../../../', import.meta.url));
const pkg = JSON.parse(readFileSync(new URL('package.json', `file://${root}`), 'utf8')) as { version: string };

function lifeboat(...args: string[]) {
  return lifeboatWithEnv({}, ...args);
}

function lifeboatWithEnv(env: Record<string, string>, ...args: string[]) {
  const r = spawnSync(process.execPath, ['bin/run.js', ...args], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, NO_COLOR: '1', LIFEBOAT_DEBUG: '', ...env },
    timeout: 30_000,
  });
  assert.equal(r.error, undefined, `spawn failed: ${r.error}`);
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

function assertOneLineUsageError(r: ReturnType<typeof lifeboat>, mentions: string) {
  assert.equal(r.code, EXIT.USAGE, `exit code; stderr: ${r.stderr}`);
  assert.equal(r.stdout, '');
  assert.match(r.stderr, /^[^\n]+\n$/, `stderr should be exactly one line, got: ${JSON.stringify(r.stderr)}`);
  assert.ok(r.stderr.includes(mentions), `stderr should mention ${mentions}: ${r.stderr}`);
  assert.doesNotMatch(r.stderr, /\bat .+:\d+:\d+/, 'no stack trace');
}

test('--help lists the version command', () => {
  const r = lifeboat('--help');
  assert.equal(r.code, EXIT.OK, r.stderr);
  assert.match(r.stdout, /^COMMANDS$/m);
  assert.match(r.stdout, /^\s+version\s+\S/m);
});

test('version prints lifeboat/<version> node-<version> <platform>-<arch>', () => {
  const r = lifeboat('version');
  assert.equal(r.code, EXIT.OK, r.stderr);
  assert.equal(pkg.version, '0.1.0');
  assert.equal(r.stdout, `lifeboat/${pkg.version} node-${process.version} ${process.platform}-${process.arch}\n`);
  assert.equal(r.stderr, '');
});

test('version -w json prints one JSON object', () => {
  const r = lifeboat('version', '-w', 'json');
  assert.equal(r.code, EXIT.OK, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), {
    name: 'lifeboat',
    version: pkg.version,
    node: process.version,
    platform: process.platform,
    arch: process.arch,
  });
});

test('an unknown flag exits 2 with a one-line error', () => {
  const r = lifeboat('version', '--bogus');
  assertOneLineUsageError(r, '--bogus');
  assert.ok(r.stderr.includes('lifeboat version --help'), r.stderr);
});

test('an invalid flag value exits 2 with a one-line error', () => {
  assertOneLineUsageError(lifeboat('version', '--write-out', 'yaml'), 'yaml');
});

test('an unknown command exits 2 with a one-line error', () => {
  assertOneLineUsageError(lifeboat('frobnicate'), 'frobnicate');
});

// Through a real command, and through oclif's parser directly into the mapping
// bin/run.js uses (which pins the exact text).
test('a missing required argument maps to exit 2 and one line naming the argument', async () => {
  const r = lifeboat('member', 'remove');
  assertOneLineUsageError(r, 'Missing 1 required arg: id');
  assert.ok(r.stderr.includes('lifeboat member remove --help'), r.stderr);

  const err = await Parser.parse([], {
    args: { member: Args.string({ required: true, description: 'member ID or name' }) },
    flags: {},
  }).then(
    () => assert.fail('parse should reject'),
    (e: unknown) => e,
  );
  const { code, message } = exitFor(err);
  assert.equal(code, EXIT.USAGE);
  assert.equal(message, "Error: Missing 1 required arg: member. See 'lifeboat --help'.");
});

test('errors raised by commands keep their exit code; anything else is a failure', () => {
  assert.deepEqual(exitFor(new Errors.CLIError('strict reconfiguration check failed', { exit: EXIT.REFUSED })), {
    code: EXIT.REFUSED,
    message: 'Error: strict reconfiguration check failed',
  });
  assert.deepEqual(exitFor(new Errors.ExitError(EXIT.PERMANENT)), { code: EXIT.PERMANENT });
  assert.deepEqual(exitFor(new Error('disk full\nwhile writing')), {
    code: EXIT.FAILURE,
    message: 'Error: disk full while writing',
  });
});

test("a topic's help shows the topic's own description, not one of its commands'", () => {
  for (const [topic, command] of [
    ['datadir', 'datadir fence'],
    ['playbook', 'playbook list'],
  ]) {
    const r = lifeboat(topic, '--help');
    assert.equal(r.code, EXIT.OK, r.stderr);
    const first = r.stdout.split('\n')[0];
    const commandHelp = lifeboat(...command.split(' '), '--help').stdout;
    assert.ok(!commandHelp.includes(first), `${topic} --help starts with ${command}'s description: ${first}`);
    const pkgTopics = (
      JSON.parse(readFileSync(new URL('package.json', `file://${root}`), 'utf8')) as { oclif: { topics: Record<string, { description: string }> } }
    ).oclif.topics;
    assert.equal(first, pkgTopics[topic].description);
  }
});

test('repeatable flags show no empty default in --help', () => {
  for (const command of [['recover', 'plan'], ['recover'], ['playbook', 'run']]) {
    const r = lifeboat(...command, '--help');
    assert.equal(r.code, EXIT.OK, r.stderr);
    assert.match(r.stdout, /\.\.\./, 'has a repeatable flag');
    assert.doesNotMatch(r.stdout, /\[default: \]/, `${command.join(' ')} --help`);
  }
});

test("oclif's own wording never reaches the user: each usage error is one line in ours", () => {
  const cases: Array<[string[], string]> = [
    [
      ['get', 'k', '--dial-timeout', 'bogus'],
      'Error: invalid --dial-timeout "bogus": expected a number with a unit, e.g. 2s or 500ms. See \'lifeboat get --help\'.\n',
    ],
    [['member', 'list', '--dial-timeout'], "Error: --dial-timeout needs a value. See 'lifeboat member list --help'.\n"],
    [['get', 'k', '-w', 'yaml'], 'Error: invalid --write-out "yaml": expected one of simple, json, table. See \'lifeboat get --help\'.\n'],
    [
      ['audit', 'report', 'r-1', '--html', 'a.html', '--markdown'],
      "Error: --html and --markdown cannot be used together. See 'lifeboat audit report --help'.\n",
    ],
  ];
  for (const [args, expected] of cases) {
    const r = lifeboat(...args);
    assertOneLineUsageError(r, '');
    assert.equal(r.stderr, expected, args.join(' '));
    assert.doesNotMatch(r.stderr, /following errors? occurred|Parsing --|expects a value|Expected --/);
  }
});

test('lifeboat server, run without oclif (bin/run.js → serverEntry), refuses bad flags as every command does: one line, exit 2', () => {
  const unknown = lifeboat('server', '--bogus');
  assertOneLineUsageError(unknown, 'Nonexistent flag: --bogus');
  assert.ok(unknown.stderr.includes("See 'lifeboat server --help'"), unknown.stderr);
  assertOneLineUsageError(lifeboat('server', '--initial-cluster-state', 'foo'), 'invalid --initial-cluster-state "foo": expected one of new, existing');
  assertOneLineUsageError(lifeboat('server', '--heartbeat-interval'), '--heartbeat-interval needs a value');
  assertOneLineUsageError(lifeboat('server', '--heartbeat-interval', 'x'), 'Expected an integer but received: x');
  assertOneLineUsageError(lifeboatWithEnv({ LIFEBOAT_HEARTBEAT_INTERVAL: 'x' }, 'server'), 'Expected an integer but received: x');
  assertOneLineUsageError(lifeboat('server', '--name', 'a', '--name', 'b'), '--name can only be given once');
  assertOneLineUsageError(lifeboat('server', 'extra'), 'Unexpected argument: extra');
  // buildServerConfig's own checks, and etcd's --flag=false form of a boolean.
  assertOneLineUsageError(lifeboat('server', '--name', 'a b', '--client-cert-auth=false'), '--name: "a b" may only hold');
  assertOneLineUsageError(lifeboat('server', '--max-txn-ops', '0'), '--max-txn-ops 0 must be a whole number >= 1');
  assertOneLineUsageError(lifeboat('server', '--max-request-bytes', '40000000'), '--max-request-bytes 40000000 must be a whole number from 1 to 33554432');
  const help = lifeboat('server', '--help');
  assert.equal(help.code, EXIT.OK, help.stderr);
  assert.match(help.stdout, /^USAGE\n\s+\$ lifeboat server/m);
  assert.match(help.stdout, /--initial-cluster-state=<option>/);
});

test("oclif's path says the same usage errors as the lean one, in one line with exit 2, without a misspelt flag's value", () => {
  assertOneLineUsageError(lifeboat('get', 'k', '--endpoints', 'a', '--endpoints', 'b'), '--endpoints can only be given once');
  assertOneLineUsageError(lifeboat('get', 'k', '-w'), '--write-out needs a value: one of simple, json, table');
  const secret = lifeboat('get', 'k', '--pass=S3CRET');
  assertOneLineUsageError(secret, 'Nonexistent flag: --pass.');
  assert.ok(!secret.stderr.includes('S3CRET'), secret.stderr);
  assertOneLineUsageError(lifeboat('get', 'k', '--debug=maybe'), 'invalid --debug="maybe": expected true or false');
});

test('lifeboat snapshot restore, run without oclif (bin/run.js → snapshotRestoreRun), refuses bad flags as oclif did: one line, exit 2', () => {
  const missing = lifeboat('snapshot', 'restore', 'x.db');
  assertOneLineUsageError(missing, 'Missing required flag data-dir; Missing required flag initial-advertise-peer-urls; Missing required flag name');
  assert.ok(missing.stderr.includes("See 'lifeboat snapshot restore --help'"), missing.stderr);
  const good = ['--data-dir', 'd', '--name', 'm1', '--initial-advertise-peer-urls', 'http://127.0.0.1:2380'];
  assertOneLineUsageError(lifeboat('snapshot', 'restore'), 'Missing 1 required arg: file');
  assertOneLineUsageError(lifeboat('snapshot', 'restore', 'x.db', ...good, '--bump-revision', 'x'), 'Expected an integer but received: x');
  assertOneLineUsageError(
    lifeboat('snapshot', 'restore', 'x.db', ...good, '--mark-compacted=maybe'),
    'invalid --mark-compacted="maybe": expected true or false',
  );
  assertOneLineUsageError(lifeboat('snapshot', 'restore', 'x.db', ...good, '--name', 'm2'), '--name can only be given once');
  assertOneLineUsageError(lifeboat('snapshot', 'restore', 'x.db', ...good, '--bump-revision', '5'), '--mark-compacted required if --bump-revision > 0');
  const help = lifeboat('snapshot', 'restore', '--help');
  assert.equal(help.code, EXIT.OK, help.stderr);
  assert.match(help.stdout, /^USAGE\n\s+\$ lifeboat snapshot restore FILE --data-dir <value>/m);
  assert.match(help.stdout, /\(required\) the new data dir/);
});

test('lifeboat snapshot save, run without oclif (bin/run.js → snapshotSaveRun), refuses bad flags as every command does: one line, exit 2', () => {
  const unknown = lifeboat('snapshot', 'save', 'x.db', '--bogus');
  assertOneLineUsageError(unknown, 'Nonexistent flag: --bogus');
  assert.ok(unknown.stderr.includes("See 'lifeboat snapshot save --help'"), unknown.stderr);
  assertOneLineUsageError(lifeboat('snapshot', 'save'), 'Missing 1 required arg: file');
  assertOneLineUsageError(lifeboat('snapshot', 'save', 'a.db', 'b.db'), 'Unexpected argument: b.db');
  assertOneLineUsageError(lifeboat('snapshot', 'save', 'a.db', '-w', 'xml'), 'invalid --write-out "xml": expected one of simple, json, table');
  assertOneLineUsageError(lifeboat('snapshot', 'save', 'a.db', '--endpoints'), '--endpoints needs a value');
  assertOneLineUsageError(lifeboat('snapshot', 'save', 'a.db', '--dial-timeout', '5x'), 'invalid --dial-timeout "5x"');
  assertOneLineUsageError(lifeboatWithEnv({ ETCDCTL_DIAL_TIMEOUT: 'zz' }, 'snapshot', 'save', 'a.db'), 'invalid ETCDCTL_DIAL_TIMEOUT "zz"');
  assertOneLineUsageError(lifeboat('snapshot', 'save', 'a.db', '--debug=maybe'), 'invalid --debug="maybe": expected true or false');
  const secret = lifeboat('snapshot', 'save', 'a.db', '-pS3CRET');
  assertOneLineUsageError(secret, 'Nonexistent flag: -p.');
  assert.ok(!secret.stderr.includes('S3CRET'), secret.stderr);
  // oclif still prints the help, from the same flags.
  const help = lifeboat('snapshot', 'save', '--help');
  assert.equal(help.code, EXIT.OK, help.stderr);
  assert.match(help.stdout, /^USAGE\n\s+\$ lifeboat snapshot save FILE/m);
  assert.match(help.stdout, /--dial-timeout=<value>\s+\[default: 2s, env: LIFEBOAT_DIAL_TIMEOUT\]/);
});
