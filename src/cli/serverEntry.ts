// The lean entry for `lifeboat server` (bin/run.js sends every run but --help here): the server
// command's own flags, parsed by oclif's parser alone, then runServer. Without
// oclif's command loading (config, manifest, plugins, every command's imports),
// an idle member holds several MiB less. `lifeboat server --help` still goes
// through oclif (commands/server.ts), from the same flag definitions.
import { parse, type Input } from '@oclif/core/parser';
import { etcdBooleans, runServer, serverFlags, type ServerFlags } from './serverRun.js';

/** The parser's context: a parse error names the command (`lifeboat server --help`) by its id, as under oclif. */
const SERVER = { id: 'server' } as unknown as Input<never, never, never>['context'];

/** Parses `lifeboat server`'s arguments (after `server`) and runs the member; resolves to the exit code. Parse errors throw as oclif's would. */
export async function main(args: string[]): Promise<number> {
  const { flags } = await parse(etcdBooleans(args), { flags: serverFlags, strict: true, context: SERVER });
  return runServer(flags as ServerFlags);
}
