// Runs a command through oclif, as bin/run.js does for every command it does not
// start from a lean entry (run, flush, exitFor's line and code): the reference
// the lean entries' output is compared with (test/cli/everydayLean.test.ts).
// Usage: node dist/test/support/oclifRun.js <command words and flags...>
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { flush, run } from '#oclif-core';
import { exitFor } from '../../src/cli/exitCodes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
try {
  await run(process.argv.slice(2), root);
  await flush();
} catch (error) {
  const { code, message } = exitFor(error);
  if (message) process.stderr.write(`${message}\n`);
  await flush().catch(() => {});
  process.exit(code);
}
