#!/usr/bin/env node
// Entry point for the `lifeboat` CLI. This is @oclif/core's execute() (run, then
// flush) with our own error handling, so that every failure ends with one line on
// stderr and one of the exit codes in src/cli/exitCodes.ts.
// A CommonJS script (bin/package.json): the commands that start without oclif
// then load no ES module at all, and Node's ES-module loader stays out of a
// long-lived member (0.4 MiB of an idle member, 11 ms of its start-up); oclif's
// commands are imported.
'use strict';
const path = require('node:path');
const { pathToFileURL } = require('node:url');

const dist = path.join(__dirname, '..', 'dist');

async function main() {
  // Node 22+: compiled code is kept on disk across runs (Node 20 has none: the
  // vendor bundles carry V8 code caches of their own, common/vendorBundle.ts).
  require('node:module').enableCompileCache?.();
  try {
    // First, before anything slower loads: passwords leave the process title.
    require(path.join(dist, 'process-title.cjs')).maskPasswordsInProcessTitle();
  } catch (error) {
    if (error?.code !== 'MODULE_NOT_FOUND') throw error;
    process.stderr.write("Error: lifeboat is not built (dist/ is missing). Run 'npm run build' first.\n");
    process.exit(1);
  }

  const argv = process.argv.slice(2);
  // How a failure maps to its exit code: a lean entry's bundle's own (its error
  // classes are the bundle's), else loaded when a failure needs it.
  let exitFor;
  const fail = async (error, flush) => {
    exitFor ??= (await import(pathToFileURL(path.join(dist, 'src', 'cli', 'exitCodes.js')).href)).exitFor;
    const { code, message } = exitFor(error);
    if (message) process.stderr.write(`${message}\n`);
    if (process.env.LIFEBOAT_DEBUG && error instanceof Error && error.stack) {
      process.stderr.write(`${error.stack}\n`);
    }
    await flush?.().catch(() => {});
    process.exit(code);
  };

  // Commands that start without oclif (but for their --help), each from an entry of
  // its own: `lifeboat server` (a member is long-lived, and oclif with every command
  // loaded cost it several MiB for good), `lifeboat snapshot save` and `snapshot
  // restore` (oclif's import, config and command loading were a sixth of a 100k-key
  // save, a quarter of its restore). Each runs from one CommonJS bundle
  // (scripts/build/bundleEntries.ts says why), which also maps its own errors to exit codes.
  const LEAN = [
    { words: ['server'], bundle: 'member.cjs' },
    { words: ['snapshot', 'save'], bundle: 'snapshot-save.cjs' },
    { words: ['snapshot', 'restore'], bundle: 'snapshot-restore.cjs' },
    // The backup agent: long-lived, as a member is (oclif held it about 6 MiB larger).
    { words: ['backup', 'run'], bundle: 'backup-run.cjs' },
    // The everyday commands a runbook calls in loops (src/cli/everydayCommands.ts).
    ...[['version'], ['get'], ['put'], ['endpoint', 'health'], ['endpoint', 'status'], ['member', 'list'], ['snapshot', 'status']].map((words) => ({
      words,
      bundle: 'everyday.cjs',
    })),
  ];
  const lean = LEAN.find((l) => l.words.every((w, i) => argv[i] === w));
  if (lean && !argv.slice(lean.words.length).some((a) => a === '--help' || a === '-h')) {
    try {
      const entry = require(path.join(dist, lean.bundle));
      exitFor = entry.exitFor;
      process.exit(await entry.main(argv.slice(lean.words.length), lean.words.join(':')));
    } catch (error) {
      await fail(error);
    }
  }

  const { flush, run } = await import(pathToFileURL(path.join(dist, 'vendor', 'oclif-core.js')).href);
  try {
    await run(argv, path.join(__dirname, '..'));
    await flush();
  } catch (error) {
    await fail(error, flush);
  }
}

void main();
