// The everyday commands run by bin/run.js without oclif (everydayCommands.ts says
// which and why), all from one CommonJS bundle (dist/everyday.cjs). The flags and
// errors are the same as oclif's path: the same tables, flagParser.ts's parser,
// and exitFor's wording.
import fs from 'node:fs';
import type { EtcdClient } from '../client/etcdClient.js';
import { CONNECTION_FLAGS, endpointsFromFlags, WRITE_OUT_FLAG } from './connectionFlags.js';
import { ENDPOINT_HEALTH, ENDPOINT_STATUS, GET, MEMBER_LIST, PUT, SNAPSHOT_STATUS, VERSION } from './everydayCommands.js';
import type { EverydayCommand } from './commandTable.js';
import { tagCommandError } from './exitCodes.js';
import { parseFlags } from './flagParser.js';

// bin/run.js maps a failure to its exit code with this module's exitFor: the
// bundle's error classes are its own (serverEntry.ts says more).
export { exitFor } from './exitCodes.js';

const COMMANDS = new Map([VERSION, GET, PUT, ENDPOINT_HEALTH, ENDPOINT_STATUS, MEMBER_LIST, SNAPSHOT_STATUS].map((c) => [c.id, c] as const));

/** The ids of the commands this entry runs (`endpoint:health`). */
export const COMMAND_IDS = [...COMMANDS.keys()];

/** package.json's name for the program and its version, as oclif's config reads them. */
function packageInfo(): { bin: string; version: string } {
  const pkg = JSON.parse(fs.readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string; oclif: { bin: string } };
  return { bin: pkg.oclif.bin, version: pkg.version };
}

/** Runs the command `id` from its arguments (after its name); resolves to the exit code. Errors throw tagged as oclif's would be. */
export async function main(argv: string[], id: string): Promise<number> {
  const command: EverydayCommand | undefined = COMMANDS.get(id);
  if (!command) throw new Error(`command ${id} not found`);
  let client: EtcdClient | undefined;
  try {
    // oclif reads the words after a command without arguments, up to a flag, as
    // more of its name: `version extra` is an unknown command, as it says.
    const end = argv.findIndex((a) => /^-|[:=]/.test(a));
    const words = command.args.length === 0 ? argv.slice(0, end === -1 ? argv.length : end) : [];
    if (words.length > 0) throw new Error(`command ${[id, ...words].join(':')} not found`);
    const { flags, args } = parseFlags(
      argv,
      { 'write-out': WRITE_OUT_FLAG, ...(command.connects ? CONNECTION_FLAGS : {}), ...command.flags },
      {
        commandId: id,
        args: command.args.filter((a) => a.required).map((a) => a.name),
        optionalArgs: command.args.filter((a) => !a.required).map((a) => a.name),
      },
    );
    // --discovery-srv: the endpoints from DNS, as EtcdCommand.parse does for the oclif path.
    if (command.connects && flags['discovery-srv']) flags.endpoints = await endpointsFromFlags(flags);
    // Only a command that connects loads the client (and grpc-js).
    const connect = command.connects ? (await import('./everydayConnected.js')).connectionClient : undefined;
    return await command.run(flags, args, {
      log: (line) => process.stdout.write(`${line}\n`),
      client: () => (client ??= connect!(flags)),
      ...packageInfo(),
    });
  } catch (err) {
    tagCommandError(err, id);
    throw err;
  } finally {
    client?.close();
  }
}
