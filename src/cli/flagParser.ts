// Flags as plain data, and the one parser of them for the commands that run
// without oclif (bin/run.js): `lifeboat server` (a long-lived member: oclif's
// parser and builders held it about 4 MiB larger for good) and `lifeboat snapshot
// save` (oclif's import and config were about 0.1 s of a 0.9 s save). oclif still
// prints their --help, from flags built out of the same tables (oclifFlag.ts).
// The parser keeps oclif's rules and, through exitFor, the toolkit's wording of
// usage errors.
import { parseSize } from '../common/byteSizes.js';
import { parseDuration } from '../common/durations.js';

interface FlagBase {
  description: string;
  /** a one-letter alias: -w json */
  char?: string;
  /** environment variables read in this order when the flag is not given */
  env?: readonly string[];
  /** --help's group */
  helpGroup?: 'GLOBAL';
  /** --help's text for the default, where the default is not a plain value */
  defaultHelp?: string;
  /** --help's name for the value: --spool-dir DIR */
  helpValue?: string;
}
export type FlagSpec =
  | (FlagBase & { type: 'string'; default?: string; options?: readonly string[]; required?: boolean })
  /** given any number of times (never from the environment): a list */
  | (FlagBase & { type: 'strings' })
  /** bytes, written as "4MiB" or "4096" */
  | (FlagBase & { type: 'size'; default: number })
  | (FlagBase & { type: 'integer'; default: number })
  /** milliseconds, written as "5s" or "500ms" */
  | (FlagBase & { type: 'duration'; default: number })
  | (FlagBase & { type: 'boolean'; default: boolean; allowNo?: boolean });

export type FlagValues = Record<string, string | string[] | number | boolean | undefined>;

/** A flag's environment variable: LIFEBOAT_<FLAG>, or etcdctl's ETCDCTL_<FLAG>. */
export const envName = (prefix: 'LIFEBOAT' | 'ETCDCTL', flag: string) => `${prefix}_${flag.toUpperCase().replaceAll('-', '_')}`;

/** A usage error of `commandId`: exitFor says it in one line with exit 2 and a pointer to its --help. */
const usage = (commandId: string, message: string) => Object.assign(new Error(message), { parse: {}, commandId });

/** oclif's reading of a boolean from the environment. */
const truthy = (v: string) => ['1', 'true', 'y', 'yes'].includes(v.toLowerCase());

/** `raw` read as `spec` says; `source` names where it came from (the flag or a variable). */
export function flagValue(spec: FlagSpec, raw: string, source: string, fail: (message: string) => Error): string | number | boolean {
  if (spec.type === 'integer') {
    if (!/^-?\d+$/.test(raw)) throw fail(`Expected an integer but received: ${raw}`);
    return Number.parseInt(raw, 10);
  }
  if (spec.type === 'duration') {
    try {
      return parseDuration(raw, source);
    } catch (err) {
      throw fail((err as Error).message);
    }
  }
  if (spec.type === 'size') {
    try {
      return parseSize(raw, source);
    } catch (err) {
      throw fail((err as Error).message);
    }
  }
  if (spec.type === 'boolean') return truthy(raw);
  if (spec.type === 'strings') return raw;
  if (spec.options && !spec.options.includes(raw)) throw fail(`invalid ${source} "${raw}": expected one of ${spec.options.join(', ')}`);
  return raw;
}

/** The first of `spec.env` that is set, read; undefined when none is. */
export function envValue(spec: FlagSpec, env: NodeJS.ProcessEnv, fail: (message: string) => Error): string | number | boolean | undefined {
  if (spec.type === 'strings') return undefined;
  for (const name of spec.env ?? []) {
    const raw = env[name];
    if (raw) return flagValue(spec, raw, name, fail);
  }
  return undefined;
}

/**
 * Parses a command's arguments (after its name): `--flag value`, `--flag=value`,
 * `-c value` for a flag's char, booleans as `--flag`, `--no-flag` where allowed
 * and etcd's `--flag=true|false`; the rest (and all after `--`) are the
 * positional `args`, each required, then the `optionalArgs`. Then the flag's environment variables, then
 * its default.
 */
export function parseFlags(
  argv: readonly string[],
  specs: Record<string, FlagSpec>,
  o: { commandId: string; args?: readonly string[]; optionalArgs?: readonly string[]; env?: NodeJS.ProcessEnv },
): { flags: FlagValues; args: string[] } {
  const fail = (message: string) => usage(o.commandId, message);
  const byChar = new Map(Object.entries(specs).flatMap(([name, s]) => (s.char ? [[s.char, name] as const] : [])));
  const given = new Map<string, string | string[] | number | boolean>();
  const positional: string[] = [];
  const set = (flag: string, v: string | number | boolean) => {
    const list = specs[flag]?.type === 'strings' ? given.get(flag) : undefined;
    if (Array.isArray(list)) return void list.push(String(v));
    if (given.has(flag)) throw fail(`--${flag} can only be given once`);
    given.set(flag, specs[flag]?.type === 'strings' ? [String(v)] : v);
  };
  const isFlag = (arg: string) => specs[arg.replace(/^--(no-)?|=[\s\S]*$/g, '')] !== undefined || byChar.has(arg.slice(1, 2));
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      positional.push(...argv.slice(i + 1));
      break;
    }
    const long = /^--([^=]+)(?:=([\s\S]*))?$/.exec(arg);
    const short = long ? undefined : /^-([A-Za-z])(?:=?([\s\S]+))?$/.exec(arg);
    if (!long && !short) {
      positional.push(arg);
      continue;
    }
    const name = long ? long[1] : byChar.get(short![1]);
    // The flag alone, not what follows it: a mistyped -p may carry a password.
    if (name === undefined) throw fail(`Nonexistent flag: -${short![1]}`);
    const inline = long ? long[2] : short![2];
    const negated = name.startsWith('no-') ? specs[name.slice(3)] : undefined;
    if (!specs[name] && negated?.type === 'boolean' && negated.allowNo && inline === undefined) {
      set(name.slice(3), false);
      continue;
    }
    const spec = specs[name];
    if (!spec) throw fail(`Nonexistent flag: --${name}`);
    if (spec.type === 'boolean') {
      if (inline === undefined) set(name, true);
      else if (/^(true|1)$/.test(inline)) set(name, true);
      else if (/^(false|0)$/.test(inline)) set(name, false);
      else throw fail(`invalid --${name}="${inline}": expected true or false`);
      continue;
    }
    // A missing value, or the next flag where the value should be, as oclif reads it.
    const raw = inline ?? argv[i + 1];
    if (raw === undefined || (inline === undefined && raw.startsWith('-') && isFlag(raw))) {
      throw fail(`--${name} needs a value${spec.type === 'string' && spec.options ? `: one of ${spec.options.join(', ')}` : ''}`);
    }
    if (inline === undefined) i++;
    set(name, flagValue(spec, raw, `--${name}`, fail));
  }
  const names = o.args ?? [];
  const most = names.length + (o.optionalArgs?.length ?? 0);
  if (positional.length > most) throw fail(`Unexpected argument: ${positional[most]}`);
  if (positional.length < names.length) {
    const missing = names.slice(positional.length);
    throw fail(`Missing ${missing.length} required arg${missing.length > 1 ? 's' : ''}: ${missing.join(', ')}`);
  }
  const flags: FlagValues = {};
  for (const [flag, spec] of Object.entries(specs)) {
    flags[flag] = given.has(flag) ? given.get(flag) : (envValue(spec, o.env ?? process.env, fail) ?? ('default' in spec ? spec.default : undefined));
  }
  // Every missing one at once, as oclif lists them.
  const missing = Object.entries(specs)
    .filter(([flag, spec]) => spec.type === 'string' && spec.required && flags[flag] === undefined)
    .map(([flag]) => `Missing required flag ${flag}`)
    .sort();
  if (missing.length > 0) throw fail(missing.join('; '));
  return { flags, args: positional };
}
