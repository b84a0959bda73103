// oclif's flags built from flagParser.ts's tables, for --help and for the
// commands oclif parses: one table, so both parsers take the same flags.
import { Args, Flags } from '#oclif-core';
import type { ArgSpec } from './commandTable.js';
import { parseSize } from '../common/byteSizes.js';
import { parseDuration } from '../common/durations.js';
import { envValue, type FlagSpec } from './flagParser.js';

type Spec<T extends FlagSpec['type']> = Extract<FlagSpec, { type: T }>;

/** What every kind of flag shares: oclif reads the first variable itself; the others (etcdctl's) come in through the default. */
function common(name: string, spec: FlagSpec) {
  const [env, ...more] = spec.env ?? [];
  const fallback = more.length > 0 ? { ...spec, env: more } : undefined;
  // oclif awaits a default function inside its own try, so a throw there is caught as a rejection would be.
  const fail = (message: string) => new Error(`Parsing --${name} \n\t${message}`);
  return {
    description: spec.description,
    ...(spec.char ? { char: spec.char as 'w' } : {}),
    ...(env ? { env } : {}),
    ...(spec.helpGroup ? { helpGroup: spec.helpGroup } : {}),
    ...(spec.helpValue ? { helpValue: spec.helpValue } : {}),
    ...(spec.defaultHelp === undefined ? {} : { defaultHelp: () => Promise.resolve(spec.defaultHelp) }),
    /** the default, or the value of a further variable */
    defaultFrom: <T>(def: T) => (fallback ? () => Promise.resolve((envValue(fallback, process.env, fail) as T | undefined) ?? def) : def),
  };
}

export function oclifString(name: string, spec: Spec<'string'>) {
  const { defaultFrom, ...c } = common(name, spec);
  const options = spec.options ? [...spec.options] : undefined;
  // No default but a further variable (etcdctl's): the default is that variable's value, when set.
  const def = defaultFrom(spec.default) as string | (() => Promise<string>) | undefined;
  const required = spec.required ? { required: true } : {};
  return def === undefined ? Flags.string({ ...c, ...required, options }) : Flags.string({ ...c, ...required, options, default: def });
}

export function oclifInteger(name: string, spec: Spec<'integer'>) {
  const { defaultFrom, ...c } = common(name, spec);
  return Flags.integer({ ...c, default: defaultFrom(spec.default) });
}

export function oclifBoolean(name: string, spec: Spec<'boolean'>) {
  const { defaultFrom, ...c } = common(name, spec);
  return Flags.boolean({ ...c, default: defaultFrom(spec.default), allowNo: spec.allowNo ?? false });
}

export function oclifDuration(name: string, spec: Spec<'duration'>) {
  const { defaultFrom, ...c } = common(name, spec);
  return Flags.custom<number>({
    ...c,
    default: defaultFrom(spec.default),
    parse: (input) => Promise.resolve(parseDuration(input, `--${name}`)),
  })();
}

export function oclifSize(name: string, spec: Spec<'size'>) {
  const { defaultFrom, ...c } = common(name, spec);
  return Flags.custom<number>({
    ...c,
    default: defaultFrom(spec.default),
    parse: (input) => Promise.resolve(parseSize(input, `--${name}`)),
  })();
}

/** A flag given any number of times: a list (never from the environment). */
export function oclifStrings(name: string, spec: Spec<'strings'>) {
  const { defaultFrom: _, env: __, ...c } = common(name, spec);
  return Flags.string({ ...c, multiple: true });
}

/** Any flag of a table, typed loosely (commands/server.ts: its run parses its own argv). */
export function oclifFlag(name: string, spec: FlagSpec) {
  if (spec.type === 'integer') return oclifInteger(name, spec);
  if (spec.type === 'boolean') return oclifBoolean(name, spec);
  if (spec.type === 'duration') return oclifDuration(name, spec);
  if (spec.type === 'size') return oclifSize(name, spec);
  if (spec.type === 'strings') return oclifStrings(name, spec);
  return oclifString(name, spec);
}

/** oclif's flags of a table. */
export const oclifFlags = (specs: Record<string, FlagSpec>) => Object.fromEntries(Object.entries(specs).map(([name, spec]) => [name, oclifFlag(name, spec)]));

/** oclif's arguments of a table. */
export const oclifArgs = (args: readonly ArgSpec[]) =>
  Object.fromEntries(
    args.map((a) => [a.name, a.required ? Args.string({ description: a.description, required: true }) : Args.string({ description: a.description })]),
  );

interface OclifFlagShape {
  type: string;
  allowNo?: boolean;
  default?: unknown;
}

/**
 * etcd's `--flag=true|false` for a boolean flag, which oclif would read as the flag
 * plus a stray argument (`get a --debug=false` a range end of "false"), rewritten
 * to `--flag`, `--no-flag` or nothing (false being the default), as flagParser.ts
 * reads it; any other value is a usage error. What follows `--` is left alone.
 */
export function etcdBooleanForms(argv: readonly string[], flags: Record<string, OclifFlagShape>, commandId: string | undefined): string[] {
  const fail = (message: string) => Object.assign(new Error(message), { parse: {}, commandId });
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--') {
      out.push(...argv.slice(i));
      break;
    }
    const m = /^--([^=]+)=([\s\S]*)$/.exec(arg);
    const flag = m ? flags[m[1]] : undefined;
    if (!m || flag?.type !== 'boolean') {
      out.push(arg);
      continue;
    }
    const [, name, v] = m;
    if (/^(true|1)$/.test(v)) out.push(`--${name}`);
    else if (!/^(false|0)$/.test(v)) throw fail(`invalid --${name}="${v}": expected true or false`);
    else if (flag.allowNo) out.push(`--no-${name}`);
    else if (flag.default === true) throw fail(`--${name} cannot be turned off`);
  }
  return out;
}
