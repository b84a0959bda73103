// Shared base for `lifeboat` commands: the global flags and output formatting,
// so each command only calls into src/ and hands its result to `print`.
// Global connection flags (--endpoints, timeouts) arrive with the client.
import { Command, Flags, type Interfaces } from '@oclif/core';

export const WRITE_OUT_FORMATS = ['simple', 'json'] as const;
export type WriteOut = (typeof WRITE_OUT_FORMATS)[number];

export type BaseFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof BaseCommand)['baseFlags'] & T['flags']>;

export abstract class BaseCommand extends Command {
  static override baseFlags = {
    'write-out': Flags.option({
      char: 'w',
      description: 'output format',
      options: WRITE_OUT_FORMATS,
      default: 'simple' as WriteOut,
      helpGroup: 'GLOBAL',
    })(),
  };

  /** Tag escaping errors with this command's id, so the usage hint can name `lifeboat <command> --help`. */
  protected override async catch(err: Error & { commandId?: string }): Promise<unknown> {
    if (typeof err === 'object' && err !== null && err.commandId === undefined) err.commandId = this.id;
    return super.catch(err);
  }

  /** Print `result` in the format chosen by --write-out; `simple` renders the human form. */
  protected print<T>(writeOut: WriteOut, result: T, simple: (r: T) => string): void {
    this.log(writeOut === 'json' ? JSON.stringify(result) : simple(result));
  }
}
