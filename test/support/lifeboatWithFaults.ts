// `lifeboat` with its failpoints (src/common/failpoint.ts): the entry point of every
// test that faults a process of its own (LIFEBOAT_FAULT, LIFEBOAT_FAULT_FILE).
// `lifeboat server` runs from the test bundle, dist/test/member-faults.cjs (the
// release bundle, dist/member.cjs, is built without them); any other command runs
// bin/run.js as a user's does, its failpoints armed (tsc's modules ignore them otherwise).
import { createRequire } from 'node:module';
import { armFailpoints } from '../../src/common/failpoint.js';

interface LeanEntry {
  main(args: string[]): Promise<number>;
  exitFor(error: unknown): { code: number; message?: string };
}

armFailpoints();
// This file runs as dist/test/support/lifeboatWithFaults.js.
const require = createRequire(import.meta.url);
const args = process.argv.slice(2);
if (args[0] === 'server' && !args.some((a) => a === '--help' || a === '-h')) {
  (require('../../process-title.cjs') as { maskPasswordsInProcessTitle(): void }).maskPasswordsInProcessTitle();
  const entry = require('../member-faults.cjs') as LeanEntry;
  try {
    process.exit(await entry.main(args.slice(1)));
  } catch (error) {
    // As bin/run.js ends a lean command: one line and the exit code.
    const { code, message } = entry.exitFor(error);
    if (message) process.stderr.write(`${message}\n`);
    process.exit(code);
  }
} else {
  require('../../../bin/run.js');
}
