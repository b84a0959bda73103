// What the `playbook` and `recover` commands share: the flags of a run, the
// connection they hand to steps, printing a session's result and ending with the
// exit code of its outcome, and printing a refused playbook one problem per line.
import { existsSync } from 'node:fs';
import path from 'node:path';
import { Flags, type Command } from '#oclif-core';
import { PlaybookInvalidError } from '../playbook/errors.js';
import type { RunbookSettings, SessionResult } from '../playbook/session.js';
import { EtcdCommand, type WriteOut } from './baseCommand.js';
export { connectionFromFlags } from './baseCommand.js';
import { EXIT, exitCodeFor } from './exitCodes.js';
import { silenceTlsServerNameWarning } from './warnings.js';

export const playbookYesFlag = Flags.boolean({
  char: 'y',
  description: 'answer every confirmation yes (needed when there is no terminal); never overrides a failed safety check',
  default: false,
});

export const reasonFlag = Flags.string({
  description: 'why you are running this, recorded in the audit log (asked for on a terminal when missing)',
  helpValue: 'TEXT',
});

/** --supervisor, --unit-dir, --service-user: handing the members a run starts to the host's supervisor. */
export const supervisorFlags = {
  supervisor: Flags.string({
    description:
      'hand the members the run starts or re-creates over: print (write an env file next to each data dir, print its command line and systemd unit), systemd (also write the units to --unit-dir), none (print the command lines only)',
    options: ['none', 'print', 'systemd'],
    default: 'print',
  }),
  'unit-dir': Flags.string({ description: 'where --supervisor systemd writes the unit files (e.g. /etc/systemd/system)', helpValue: 'DIR' }),
  'service-user': Flags.string({
    description: "the user the units run members as: data dirs and env files are given to it (e.g. etcd, as Debian's etcd unit)",
    helpValue: 'USER',
  }),
};

/** The supervisor flags as a session request. */
export function supervisorFromFlags(flags: { supervisor: string; 'unit-dir'?: string | undefined; 'service-user'?: string | undefined }): {
  mode: string;
  unitDir?: string;
  serviceUser?: string;
} {
  return {
    mode: flags.supervisor,
    ...(flags['unit-dir'] !== undefined ? { unitDir: flags['unit-dir'] } : {}),
    ...(flags['service-user'] !== undefined ? { serviceUser: flags['service-user'] } : {}),
  };
}

/** Whether the operator gave a flag (on the command line or through its environment variable) rather than taking its default. */
export function flagGiven(metadata: { flags: Record<string, { setFromDefault?: boolean } | undefined> }, name: string): boolean {
  const m = metadata.flags[name];
  return m !== undefined && !m.setFromDefault;
}

/**
 * Every flag the operator gave (on the command line or through its environment
 * variable), but those in `skip`, as a runbook line's words: a path that exists
 * made absolute (the line may run from anywhere), a duration in ms. The password's
 * text never: --password-file by its path, else LIFEBOAT_PASSWORD is named, as
 * --user NAME:PASSWORD is cut to --user NAME.
 */
export function runbookSettings(
  flags: Record<string, unknown>,
  metadata: { flags: Record<string, { setFromDefault?: boolean } | undefined> },
  skip: readonly string[],
): RunbookSettings {
  const words: string[] = [];
  const env: string[] = [];
  // oclif keeps metadata only for flags it filled in (setFromDefault): a flag without any was given, if it has a value.
  const given = (name: string) => flags[name] !== undefined && metadata.flags[name]?.setFromDefault !== true;
  for (const name of Object.keys(flags).sort()) {
    if (skip.includes(name) || name === 'debug' || name === 'password' || !given(name)) continue;
    const value = flags[name];
    if (name === 'user') {
      words.push('--user', String(value).split(':')[0]);
      continue;
    }
    for (const v of Array.isArray(value) ? value : [value]) {
      if (typeof v === 'boolean') words.push(v ? `--${name}` : `--${name}=false`);
      else if (typeof v === 'number') words.push(`--${name}`, `${v}ms`);
      else if (typeof v === 'string') words.push(`--${name}`, v !== '' && existsSync(v) ? path.resolve(v) : v);
    }
  }
  if (given('user') && !given('password-file')) env.push('LIFEBOAT_PASSWORD');
  return { flags: words, env };
}

/** Flags of a run that a runbook line of `playbook run` does not take or sets itself. */
export const RUNBOOK_SKIP = ['set', 'vars', 'yes', 'reason', 'audit-db', 'dry-run', 'write-out'] as const;

/**
 * A refused playbook: one line per problem (file:line:col: field: message) on
 * stderr, then exit 2. Returns (doing nothing) for any other error.
 */
export function exitIfInvalid(cmd: Command, err: unknown): void {
  if (!(err instanceof PlaybookInvalidError)) return;
  for (const line of err.lines()) process.stderr.write(`${line}\n`);
  process.stderr.write(`Error: refused: ${err.problems.length} problem${err.problems.length === 1 ? '' : 's'} (above); nothing was run\n`);
  cmd.exit(EXIT.USAGE);
}

/** A command that runs a playbook session: prints its result, ends with its error (exit code from the run's outcome), and prints a refused playbook. */
export abstract class SessionCommand extends EtcdCommand {
  /** A run's clients (its password check, its steps) dial IP addresses over TLS too: no DEP0123 in its output. */
  override async init(): Promise<void> {
    await super.init();
    silenceTlsServerNameWarning();
  }

  protected async printSession(writeOut: WriteOut, session: Promise<SessionResult>): Promise<void> {
    const result = await session;
    this.print(writeOut, result, { simple: (r: SessionResult) => r.text, json: (r: SessionResult) => r.json });
    if (!result.error) return;
    if (result.run) Object.assign(result.error, { oclif: { exit: exitCodeFor(result.run.outcome) } });
    throw result.error;
  }

  protected override async catch(err: Error & { commandId?: string; oclif?: { exit?: number } }): Promise<unknown> {
    exitIfInvalid(this, err);
    return super.catch(err);
  }
}
