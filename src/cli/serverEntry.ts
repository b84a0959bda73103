// The lean entry for `lifeboat server` (bin/run.js sends every run but --help here):
// the server's own flags (serverFlags.ts), then runServer. Without oclif (its
// config, manifest, plugins, parser and every command's imports), an idle member
// holds several MiB less. `lifeboat server --help` still goes through oclif
// (commands/server.ts), from the same flag table.
import { parseServerArgs } from './serverFlags.js';
import { runServer } from './serverRun.js';

// bin/run.js maps a failure to its exit code with this module's exitFor: its
// error classes are the bundle's own (dist/member.cjs, scripts/build/bundleEntries.ts),
// and instanceof against another copy of them would fail.
export { exitFor } from './exitCodes.js';

/** Runs the member from `lifeboat server`'s arguments (after `server`); resolves to the exit code. Usage errors throw as oclif's would. */
export function main(args: string[]): Promise<number> {
  return runServer(parseServerArgs(args));
}
