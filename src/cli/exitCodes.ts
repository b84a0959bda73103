// Process exit codes for every `lifeboat` command, and the one place that turns
// an error escaping a command (or oclif's parser) into a code and a message.
import { InputError, RefusedError } from '../common/errors.js';
import { DataDirLockedError } from '../storage/errors.js';

export const EXIT = {
  OK: 0,
  /** the command ran and failed */
  FAILURE: 1,
  /** bad usage: unknown flag or command, missing or invalid argument */
  USAGE: 2,
  /** refused by a safety check (re-run with the flag named after that check) */
  REFUSED: 3,
  /** removed or superseded: retrying will never succeed */
  PERMANENT: 78,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** How a playbook run's outcome ends the process: succeeded 0, refused 3, failed or interrupted 1. */
export function exitCodeFor(outcome: 'succeeded' | 'failed' | 'refused' | 'interrupted'): ExitCode {
  return outcome === 'succeeded' ? EXIT.OK : outcome === 'refused' ? EXIT.REFUSED : EXIT.FAILURE;
}

/** Tags `err` with the command it escaped and the exit code of our error classes: InputError → 2, RefusedError and a locked data dir → 3. */
export function tagCommandError(err: unknown, commandId: string | undefined): void {
  if (typeof err !== 'object' || err === null) return;
  const e = err as { commandId?: string; oclif?: { exit?: number } };
  if (e.commandId === undefined) e.commandId = commandId;
  if (err instanceof InputError) e.oclif = { exit: EXIT.USAGE };
  else if (err instanceof RefusedError || err instanceof DataDirLockedError) e.oclif = { exit: EXIT.REFUSED };
}

export interface ExitDecision {
  code: number;
  /** one line for stderr; absent when there is nothing to say */
  message?: string;
}

interface ErrorShape {
  message?: unknown;
  code?: unknown;
  oclif?: { exit?: unknown };
  /** set by BaseCommand.catch */
  commandId?: unknown;
  parse?: { input?: { context?: { id?: unknown } } };
  args?: Array<{ name?: unknown }>;
}

const OCLIF_HELP_HINT = /\s*See more help with --help\s*$/;

/**
 * Decide how the process ends after `err` escaped the CLI.
 *
 * - oclif's parse errors (unknown flag, missing or unexpected argument, invalid
 *   flag value) and unknown commands → USAGE, with a pointer to `--help`;
 * - `this.exit(n)` → n, silently;
 * - an error carrying `oclif.exit` (e.g. `this.error(msg, {exit: EXIT.REFUSED})`) → that code;
 * - anything else → FAILURE.
 * The message is always a single line; set LIFEBOAT_DEBUG=1 for stack traces.
 */
export function exitFor(err: unknown, bin = 'lifeboat'): ExitDecision {
  const e: ErrorShape = typeof err === 'object' && err !== null ? err : {};
  const rawMessage = typeof e.message === 'string' ? e.message : String(err);

  // oclif's ExitError, thrown by this.exit(n): the command already said what it had to.
  if (e.code === 'EEXIT') {
    return { code: typeof e.oclif?.exit === 'number' ? e.oclif.exit : EXIT.FAILURE };
  }

  const commandId = typeof e.commandId === 'string' ? e.commandId : typeof e.parse?.input?.context?.id === 'string' ? e.parse.input.context.id : undefined;
  const helpCommand = commandId ? `${bin} ${commandId.replaceAll(':', ' ')} --help` : `${bin} --help`;

  if (isParseError(e, rawMessage)) {
    return { code: EXIT.USAGE, message: `Error: ${usageText(e, rawMessage)}. See '${helpCommand}'.` };
  }

  const notFound = /^command (.+) not found$/.exec(rawMessage);
  if (notFound) {
    const command = notFound[1].replaceAll(':', ' ');
    return { code: EXIT.USAGE, message: `Error: unknown command '${command}'. See '${bin} --help'.` };
  }

  const code = typeof e.oclif?.exit === 'number' ? e.oclif.exit : EXIT.FAILURE;
  return { code, message: `Error: ${oneLine(rawMessage)}` };
}

function isParseError(e: ErrorShape, message: string): boolean {
  // CLIParseError and its subclasses carry the parser's input and output; oclif
  // does not export the classes, so recognise them by shape. A throwing flag
  // `parse` function surfaces as "Parsing --flag ...", a flag given last without
  // its value as "Flag --flag expects a value".
  return (
    (typeof e.parse === 'object' && e.parse !== null) ||
    /^Parsing --\S+/.test(message) ||
    FLAG_WITHOUT_VALUE.test(message) ||
    FLAG_TWICE.test(message) ||
    OPTION_WITHOUT_VALUE.test(message)
  );
}

const FLAG_WITHOUT_VALUE = /^Flag (--\S+) expects a value$/;
// oclif's plain CLIErrors for a flag given twice and an option flag given last without its value.
const FLAG_TWICE = /^Flag (--\S+) can only be specified once$/;
const OPTION_WITHOUT_VALUE = /^Flag (--\S+) expects one of these values: (.+)$/;
// "Nonexistent flag: --pass=S3CRET": the value may be a secret given to a misspelt flag; the name is enough.
const NONEXISTENT_WITH_VALUE = /^(Nonexistent flags?: (?:-[^=\s]+))=\S*/;
// oclif's FailedFlagValidationError and ViolatedFlagConstraintError: a heading, then one reason a line.
const OCLIF_REASONS = /^The following errors? occurred:\s*\n/;
const EXCLUSIVE_REASON = /^(--[\w-]+)(?:=.*)? cannot also be provided when using (--[\w-]+)$/;
const INVALID_OPTION = /^Expected (--[\w-]+)=(.*) to be one of: (.+)$/;
// eslint-disable-next-line no-control-regex -- oclif colours the reasons on a terminal
const ANSI = /\x1b\[[0-9;]*m/g;

/** oclif's wording, said in ours: what is wrong, with the value, in one line. */
function usageText(e: ErrorShape, message: string): string {
  const text = message.replace(OCLIF_HELP_HINT, '').replace(ANSI, '');
  // "Parsing --dial-timeout \n\t<our parse function's message>": our message says it all.
  const parsing = /^Parsing --\S+\s*\n\s*([\s\S]+)$/.exec(text);
  if (parsing) return oneLine(parsing[1]);
  const noValue = FLAG_WITHOUT_VALUE.exec(text);
  if (noValue) return `${noValue[1]} needs a value`;
  const twice = FLAG_TWICE.exec(text);
  if (twice) return `${twice[1]} can only be given once`;
  const noOption = OPTION_WITHOUT_VALUE.exec(text);
  if (noOption) return `${noOption[1]} needs a value: one of ${noOption[2]}`;
  const nonexistent = NONEXISTENT_WITH_VALUE.exec(text);
  if (nonexistent) return nonexistent[1];
  const option = INVALID_OPTION.exec(text);
  if (option) return `invalid ${option[1]} "${option[2]}": expected one of ${option[3]}`;
  if (OCLIF_REASONS.test(text)) {
    const reasons: string[] = [];
    for (const line of text.replace(OCLIF_REASONS, '').split('\n')) {
      const r = line.trim();
      if (r === '') continue;
      const exclusive = EXCLUSIVE_REASON.exec(r);
      const said = exclusive ? `${[exclusive[1], exclusive[2]].sort().join(' and ')} cannot be used together` : r;
      if (!reasons.includes(said)) reasons.push(said);
    }
    return reasons.join('; ');
  }
  // RequiredArgsError lists "name  description" rows under its first line; the names are enough.
  if (/^Missing \d+ required args?/.test(text) && Array.isArray(e.args)) {
    const names = e.args.map((a) => a.name).filter((n): n is string => typeof n === 'string');
    const first = text.split('\n', 1)[0].replace(/:$/, '');
    return names.length > 0 ? `${first}: ${names.join(', ')}` : first;
  }
  return oneLine(text);
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
