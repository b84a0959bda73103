// A command as plain data (its flags, arguments and run), for the commands
// bin/run.js runs without oclif and oclif runs from the same table
// (everydayCommands.ts); what a run needs from whichever runs it.
import type { EtcdClient } from '../client/etcdClient.js';
import type { WriteOut } from './connectionFlags.js';
import type { FlagSpec, FlagValues } from './flagParser.js';
import { render, type Renderer } from './output/render.js';

/** What a run needs from whoever runs it (oclif's command or the lean entry). */
export interface CommandIo {
  log(line: string): void;
  /** the client of the connection flags, closed when the command ends */
  client(): EtcdClient;
  /** the program's name and version (package.json) */
  bin: string;
  version: string;
}

export interface ArgSpec {
  name: string;
  description: string;
  required: boolean;
}

export interface EverydayCommand {
  /** oclif's command id */
  id: string;
  /** whether it takes the connection flags */
  connects: boolean;
  flags: Record<string, FlagSpec>;
  args: readonly ArgSpec[];
  /** resolves to the exit code */
  run(flags: FlagValues, args: ReadonlyArray<string | undefined>, io: CommandIo): Promise<number>;
}

/** Prints `result` in the format chosen by --write-out; `simple` renders the human form. */
export function print<T>(io: CommandIo, flags: FlagValues, result: T, renderer: ((r: T) => string) | Renderer<T>): void {
  const text = render(flags['write-out'] as WriteOut, result, renderer);
  if (text !== '') io.log(text);
}
