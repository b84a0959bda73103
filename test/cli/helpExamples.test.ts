// Every example in every command's --help is checked: parsed by oclif against the
// command's own flags and arguments (strict: an unknown flag or a stray argument
// fails), its IDs read as the command reads them, its playbook variables looked up
// in the playbook; and the examples that need nothing but a cluster, or nothing at
// all, are run for real against a one-member Lifeboat cluster (exit 0 each).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { checkCommandLine, lifeboatLine, loadCommands, shellWords, type Commands, type LifeboatLine } from '../support/commandLines.js';
import { BIN, LifeboatCluster } from '../support/lifeboatCluster.js';
import { etcdctl, run } from '../support/tools.js';

interface Example {
  id: string;
  line: string;
}

function lifeboatArgv(ex: Example): LifeboatLine {
  const l = lifeboatLine(ex.line);
  assert.ok(l, `${ex.id}: the example does not run lifeboat: ${ex.line}`);
  return l;
}

let commands: Commands;
let examples: Example[] = [];

before(async () => {
  commands = await loadCommands();
  examples = commands.examples;
});

test("every --help example parses with its command's flags and arguments, and names what exists", async () => {
  assert.ok(examples.length > 50, `found only ${examples.length} examples`);
  for (const ex of examples) await checkCommandLine(commands, ex.line, ex.id, ex.id);
});

test('the example parser reads quotes, pipes, redirections, $(...) and comments as sh does', () => {
  assert.deepEqual(shellWords(`lifeboat a "b c" 'd' x-$(date +%F).db > out # note`), {
    stages: [['lifeboat', 'a', 'b c', 'd', 'x-$(date +%F).db']],
    redirects: [{ op: '>', file: 'out' }],
  });
  assert.deepEqual(shellWords('cat f | lifeboat put k').stages, [
    ['cat', 'f'],
    ['lifeboat', 'put', 'k'],
  ]);
  assert.deepEqual(shellWords('lifeboat drill -w json > out.json 2>> err.log'), {
    stages: [['lifeboat', 'drill', '-w', 'json']],
    redirects: [
      { op: '>', file: 'out.json' },
      { op: '>>', file: 'err.log' },
    ],
  });
  assert.deepEqual(shellWords('lifeboat version 2>&1 | tee x').stages, [
    ['lifeboat', 'version'],
    ['tee', 'x'],
  ]);
  assert.deepEqual(shellWords('kill -TERM 42 && systemctl start x; lifeboat version').stages, [
    ['kill', '-TERM', '42'],
    ['systemctl', 'start', 'x'],
    ['lifeboat', 'version'],
  ]);
});

// ----- run them -----------------------------------------------------------------

let cluster: LifeboatCluster | undefined;
let work: string;

after(async () => {
  await cluster?.stopAll();
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** Runs an example as written, with its endpoints pointed at `endpoint` and /var/lib/lifeboat/ under `work`. */
async function runExample(ex: Example, endpoint: string | undefined): Promise<void> {
  const { argv, redirects, piped } = lifeboatArgv(ex);
  const args = argv.map((a) => a.replaceAll('/var/lib/lifeboat/', `${work}/`));
  const i = args.indexOf('--endpoints');
  const cls = commands.byId.get(ex.id);
  if (endpoint !== undefined && cls && 'endpoints' in { ...cls.baseFlags, ...cls.flags }) {
    if (i >= 0) args[i + 1] = endpoint;
    else args.push('--endpoints', endpoint);
  }
  const r = await run(process.execPath, [BIN, ...args], { cwd: work, input: piped ? 'from a pipe\n' : '', timeoutMs: 60_000 });
  assert.equal(r.code, 0, `${ex.line}\nexit ${r.code}\n${r.stderr}`);
  for (const { op, file } of redirects) {
    if (op === '>>') fs.appendFileSync(path.join(work, file), r.stdout);
    else fs.writeFileSync(path.join(work, file), r.stdout);
  }
}

// Examples run as they are. Those left out are parsed and checked above; they need
// what a test cannot give them as written (other hosts' addresses, TLS files, a
// member ID or lease of a real cluster, a recorded run, a terminal).
const WITHOUT_CLUSTER = [/^version/, /^playbook list/, /^playbook show recover-from-quorum-loss/, /^playbook run replace-failed-member --dry-run/];
const WITH_CLUSTER = [
  /^put \/config\/mode/,
  /^cat cert\.pem \| lifeboat put/,
  /^get (?!.*--rev)/,
  /^get \/config\/mode --rev 42/,
  /^del /,
  /^member list/,
  /^endpoint (status|health|hashkv)(?!.*--cacert)/,
  /^alarm /,
  /^defrag/,
  /^snapshot save backup\.db/,
  /^snapshot status backup\.db/,
  /^snapshot restore backup\.db --data-dir \/var\/lib\/lifeboat\/m1 --name m1 --initial-advertise-peer-urls \S+$/,
  /^datadir inspect \/var\/lib\/lifeboat\/m1/,
  /^datadir pack/,
  /^datadir unpack/,
];

/** The examples matching `patterns`, in the patterns' order (a snapshot is saved before it is restored, ...). */
const selected = (patterns: RegExp[]) => patterns.flatMap((p) => examples.filter((ex) => p.test(ex.line.replace(/^lifeboat /, ''))));

test('the examples that need no cluster run and exit 0', async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-help-examples-'));
  const chosen = selected(WITHOUT_CLUSTER);
  assert.equal(chosen.length, 6, chosen.map((e) => e.line).join('\n'));
  for (const ex of chosen) await runExample(ex, undefined);
});

test('the examples that need a cluster run against one and exit 0', async () => {
  cluster = await LifeboatCluster.start('helpExamples', 1);
  const endpoint = cluster.endpoints()[0];
  // --rev 42 needs 42 revisions
  for (let i = 0; i < 45; i++) assert.equal((await etcdctl('--endpoints', endpoint, 'put', `/fill/${i}`, 'x')).code, 0);
  const chosen = selected(WITH_CLUSTER);
  assert.ok(chosen.length >= 25, chosen.map((e) => e.line).join('\n'));
  for (const ex of chosen) await runExample(ex, endpoint);
  assert.ok(fs.existsSync(path.join(work, 'm1.inspect.json')));
  assert.ok(fs.existsSync(path.join(work, 'm1.tar.gz')));
});

test('snapshot save draws its progress on a terminal and stays quiet in scripts', async () => {
  assert.ok(cluster, 'runs after the cluster examples');
  const endpoint = cluster.endpoints()[0];
  const quiet = await run(process.execPath, [BIN, 'snapshot', 'save', path.join(work, 'quiet.db'), '--endpoints', endpoint], { cwd: work });
  assert.equal(quiet.code, 0, quiet.stderr);
  assert.equal(quiet.stderr, '', 'no progress without a terminal');
  // script(1) gives the command a terminal; what it drew comes back on script's stdout.
  const command = `${process.execPath} ${BIN} snapshot save ${path.join(work, 'tty.db')} --endpoints ${endpoint}`;
  const tty = await run('script', ['-qefc', command, '/dev/null'], { cwd: work });
  assert.equal(tty.code, 0, tty.stdout + tty.stderr);
  assert.match(tty.stdout, /\rsnapshot \[[#.]{30}\] +\d+% [\d.]+ [kM]?B \/ [\d.]+ [kM]?B/, JSON.stringify(tty.stdout));
});

test('snapshot restore draws its progress on a terminal and stays quiet in scripts', async () => {
  const file = path.join(work, 'tty.db');
  assert.ok(fs.existsSync(file), 'runs after the snapshot save test');
  const restore = (dir: string) => [
    BIN,
    'snapshot',
    'restore',
    file,
    '--data-dir',
    path.join(work, dir),
    '--name',
    'r',
    '--initial-advertise-peer-urls',
    'http://127.0.0.1:2380',
  ];
  const quiet = await run(process.execPath, restore('quiet-restore'), { cwd: work });
  assert.equal(quiet.code, 0, quiet.stderr);
  assert.equal(quiet.stderr, '', 'no progress without a terminal');
  const tty = await run('script', ['-qefc', [process.execPath, ...restore('tty-restore')].join(' '), '/dev/null'], { cwd: work });
  assert.equal(tty.code, 0, tty.stdout + tty.stderr);
  assert.match(tty.stdout, /\rrestore \[[#.]{30}\] +\d+% [\d.]+ [kM]?B \/ [\d.]+ [kM]?B/, JSON.stringify(tty.stdout));
});
