// Shared bases for `lifeboat` commands: the global flags and output formatting,
// so each command only calls into src/ and hands its result to `print`.
//
// - BaseCommand: --write-out, printing, and the mapping of our error classes to
//   exit codes (InputError → 2, RefusedError and a locked data dir → 3, anything else → 1).
// - EtcdCommand: BaseCommand plus the connection flags (--endpoints, timeouts,
//   TLS, --debug) and a client built from them, closed when the command ends.
import { Command, Flags, type Interfaces } from '#oclif-core';
import { clientFor, EtcdClient } from '../client/etcdClient.js';
import type { EverydayCommand } from './commandTable.js';
import {
  CONNECTION_FLAGS,
  connectionFromFlags,
  durationSpec,
  endpointsFromFlags,
  WRITE_OUT_FLAG,
  WRITE_OUT_FORMATS,
  type WriteOut,
} from './connectionFlags.js';
import { EXIT, tagCommandError } from './exitCodes.js';
import { etcdBooleanForms, oclifBoolean, oclifDuration, oclifString } from './oclifFlag.js';
import { render, type Renderer } from './output/render.js';
import { silenceTlsServerNameWarning } from './warnings.js';

export { connectionFromFlags, credentialsFor } from './connectionFlags.js';
export type { WriteOut } from './connectionFlags.js';
export type { Renderer } from './output/render.js';

type OclifOutput<T> = { [name: string]: T };

export type BaseFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof BaseCommand)['baseFlags'] & T['flags']>;
export type EtcdFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof EtcdCommand)['baseFlags'] & T['flags']>;

export abstract class BaseCommand extends Command {
  static override baseFlags = {
    'write-out': Flags.option({
      char: WRITE_OUT_FLAG.char,
      description: WRITE_OUT_FLAG.description,
      options: WRITE_OUT_FORMATS,
      default: WRITE_OUT_FLAG.default as WriteOut,
      helpGroup: WRITE_OUT_FLAG.helpGroup,
    })(),
  };

  /** etcd's `--flag=true|false` for booleans, which oclif's parser does not take (oclifFlag.ts). */
  override async init(): Promise<void> {
    await super.init();
    this.argv = etcdBooleanForms(this.argv, { ...this.ctor.baseFlags, ...this.ctor.flags }, this.id);
  }

  /** Tag escaping errors with this command's id and the exit code of our error classes. */
  protected override async catch(err: Error & { commandId?: string; oclif?: { exit?: number } }): Promise<unknown> {
    tagCommandError(err, this.id);
    return super.catch(err);
  }

  /** Runs a command of everydayCommands.ts (which bin/run.js runs without oclif) on oclif's parse. */
  protected async runTable(command: EverydayCommand): Promise<void> {
    const { flags, args } = await this.parse(this.ctor);
    const code = await command.run(
      flags,
      command.args.map((a) => args[a.name] as string | undefined),
      { log: (line) => this.log(line), client: () => this.tableClient(flags), bin: this.config.bin, version: this.config.version },
    );
    if (code !== EXIT.OK) this.exit(code);
  }

  /** The client of a command with the connection flags (EtcdCommand's). */
  protected tableClient(_flags: Record<string, unknown>): EtcdClient {
    throw new Error(`${this.id} takes no connection flags`);
  }

  /** Print `result` in the format chosen by --write-out; `simple` renders the human form. */
  protected print<T>(writeOut: WriteOut, result: T, renderer: ((r: T) => string) | Renderer<T>): void {
    const text = render(writeOut, result, renderer);
    if (text !== '') this.log(text);
  }
}

/** A duration flag ("5s", "500ms") read as milliseconds, also from LIFEBOAT_<NAME> (and, with `etcdctl`, ETCDCTL_<NAME>). */
export const durationFlag = (name: string, defaultMs: number, defaultText: string, description: string, etcdctl = false) =>
  oclifDuration(name, durationSpec(name, defaultMs, defaultText, description, etcdctl));

export abstract class EtcdCommand extends BaseCommand {
  static override baseFlags = {
    ...BaseCommand.baseFlags,
    // Each setting: the flag, else LIFEBOAT_*, else etcdctl's ETCDCTL_*, else the default.
    endpoints: oclifString('endpoints', CONNECTION_FLAGS.endpoints),
    'discovery-srv': oclifString('discovery-srv', CONNECTION_FLAGS['discovery-srv']),
    'discovery-srv-name': oclifString('discovery-srv-name', CONNECTION_FLAGS['discovery-srv-name']),
    'dial-timeout': oclifDuration('dial-timeout', CONNECTION_FLAGS['dial-timeout']),
    'command-timeout': oclifDuration('command-timeout', CONNECTION_FLAGS['command-timeout']),
    user: oclifString('user', CONNECTION_FLAGS.user),
    password: oclifString('password', CONNECTION_FLAGS.password),
    'password-file': oclifString('password-file', CONNECTION_FLAGS['password-file']),
    cacert: oclifString('cacert', CONNECTION_FLAGS.cacert),
    cert: oclifString('cert', CONNECTION_FLAGS.cert),
    key: oclifString('key', CONNECTION_FLAGS.key),
    'insecure-skip-tls-verify': oclifBoolean('insecure-skip-tls-verify', CONNECTION_FLAGS['insecure-skip-tls-verify']),
    debug: oclifBoolean('debug', CONNECTION_FLAGS.debug),
  };

  private clients: EtcdClient[] = [];

  /** With --discovery-srv, --endpoints is what the domain's client SRV records give (as etcdctl). */
  // oclif's own bounds (FlagOutput, ArgOutput: { [name: string]: any }), which its Interfaces do not export.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  protected override async parse<F extends OclifOutput<any>, B extends OclifOutput<any>, A extends OclifOutput<any>>(
    options?: Interfaces.Input<F, B, A>,
    argv?: string[],
  ): Promise<Interfaces.ParserOutput<F, B, A>> {
    const out = await super.parse(options, argv);
    const flags = out.flags as Record<string, unknown>;
    if ('endpoints' in flags) flags.endpoints = await endpointsFromFlags(flags);
    return out;
  }

  /** A client from the global flags; closed when the command finishes. */
  protected client(flags: EtcdFlags<typeof EtcdCommand>): EtcdClient {
    silenceTlsServerNameWarning();
    const client = clientFor(flags.endpoints, connectionFromFlags(flags));
    this.clients.push(client);
    return client;
  }

  protected override tableClient(flags: Record<string, unknown>): EtcdClient {
    return this.client(flags as EtcdFlags<typeof EtcdCommand>);
  }

  /**
   * After per-endpoint results were printed: one stderr line per endpoint that
   * failed, then exit 1 if any did.
   */
  protected exitIfAnyFailed(failures: Array<{ endpoint: string; message: string }>): void {
    for (const f of failures) process.stderr.write(`Error: ${f.message}\n`);
    if (failures.length > 0) this.exit(EXIT.FAILURE);
  }

  protected override async finally(err: Error | undefined): Promise<unknown> {
    for (const c of this.clients) c.close();
    return super.finally(err);
  }
}

/** `--yes`, for commands that ask before doing something dangerous. */
export const yesFlag = Flags.boolean({
  char: 'y',
  description: 'confirm without asking (needed when there is no terminal to ask on)',
});
