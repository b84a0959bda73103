// A playbook's variables: their validation rules, and binding values to them
// from the places values come from — the playbook's defaults, a --vars file,
// --set NAME=VALUE, the run's --endpoints, and (on a terminal) the operator.
import { readFileSync } from 'node:fs';
import { LineCounter, isMap, isNode, isScalar, parseDocument, type YAMLMap } from 'yaml';
import { formatDuration } from '../common/durations.js';
import { isSecretDigest, SECRET_MARK } from '../audit/secretDigest.js';
import { InputError } from '../common/errors.js';
import { Problems } from './errors.js';
import type { Playbook, VariableDef } from './schema.js';
import { hiddenVariable, secretEnvName } from './secrets.js';
import { didYouMean } from './suggest.js';
import { convertValue, formatValue } from './values.js';

/** Why `value` (already converted to the variable's type) breaks the variable's validation, if it does. */
export function ruleProblem(def: Pick<VariableDef, 'type' | 'items' | 'validation'>, value: unknown): string | undefined {
  const v = def.validation;
  const show = (x: unknown) => (def.type === 'duration' && typeof x === 'number' ? formatDuration(x) : JSON.stringify(x));
  if (v.pattern) {
    const texts = def.type === 'list' ? (value as unknown[]) : [value];
    for (const t of texts) {
      if (typeof t === 'string' && !v.pattern.test(t))
        return `${def.type === 'secret' ? 'the secret' : JSON.stringify(t)} does not match the pattern ${v.pattern.source}`;
    }
  }
  if (def.type === 'list') {
    const n = (value as unknown[]).length;
    if (v.min !== undefined && n < v.min) return `needs at least ${v.min} item${v.min === 1 ? '' : 's'}, got ${n}`;
    if (v.max !== undefined && n > v.max) return `takes at most ${v.max} item${v.max === 1 ? '' : 's'}, got ${n}`;
  } else if (typeof value === 'number') {
    if (v.min !== undefined && value < v.min) return `${show(value)} is below the minimum ${show(v.min)}`;
    if (v.max !== undefined && value > v.max) return `${show(value)} is above the maximum ${show(v.max)}`;
  }
  if (v.choices && !v.choices.some((c) => c === value)) {
    return `${show(value)} is not one of ${v.choices.map((c) => show(c)).join(', ')}`;
  }
  return undefined;
}

/** Converts and checks one value for `def`: the value, or an error message. */
export function checkVariableValue(def: VariableDef, raw: unknown): { ok: true; value: unknown } | { ok: false; error: string } {
  const c = convertValue(raw, def.type, def.items);
  if (!c.ok) return c;
  const bad = ruleProblem(def, c.value);
  return bad ? { ok: false, error: bad } : c;
}

export type VariableSource = 'default' | 'vars-file' | 'set' | 'endpoints-flag' | 'prompt' | 'recorded' | 'plan' | 'env';

export interface BoundVariables {
  values: Record<string, unknown>;
  sources: Record<string, VariableSource>;
  /** questions asked and the answers given, in order, with when each was answered (ISO 8601), for the audit log */
  prompts: Array<{ variable: string; question: string; answer: unknown; at: string }>;
}

/** Why a converted value fails a check on this host (entryChecks.ts), if it does. */
export type ValueCheck = (def: VariableDef, value: unknown) => Promise<string | undefined>;

/**
 * Asks the operator for one variable's value; returns it converted and checked
 * (`check` too: a failing answer is asked again, with the reason).
 */
export type VariableAsker = (def: VariableDef, current: unknown, check?: (value: unknown) => Promise<string | undefined>) => Promise<unknown>;

export interface BindOptions {
  /** a YAML file of NAME: VALUE */
  varsFile?: string;
  /** NAME=VALUE, in order (later wins) */
  sets?: string[];
  /** NAME=VALUE a caller worked out itself (`lifeboat recover`'s plan), below --set */
  planned?: string[];
  /** values given by a caller in code (e.g. `lifeboat recover`), before --vars/--set */
  given?: Record<string, unknown>;
  /** the --endpoints flag, when the operator gave it: the value of a variable named `endpoints` unless set otherwise */
  endpoints?: string;
  /** asks for what is missing (a terminal); absent: missing values are an error */
  ask?: VariableAsker;
  /** checks a value from --vars, --set or a prompt on this host (not `given` ones: a resumed run's members may be running) */
  check?: ValueCheck;
  /** defaults offered at a prompt instead of the playbook's (e.g. what `lifeboat recover` derives from the survivor) */
  promptDefaults?: Record<string, unknown>;
  /** where secrets' LIFEBOAT_SECRET_<NAME> are read (default: none) */
  env?: NodeJS.ProcessEnv;
}

/**
 * Binds every variable of `pb`. Order of precedence: --set, then the --vars file,
 * then (secrets) LIFEBOAT_SECRET_<NAME>, then `given`, then --endpoints (for a
 * variable named `endpoints`), then — on a terminal — a prompt for every variable
 * that has `prompt` text or no default, then the default. Unknown names and bad
 * values are errors (exit 2) naming where they came from, never showing a
 * secret; without `ask`, so is every variable left without a value. A secret
 * `given` as recorded (its digest) counts as not given: it is asked for again.
 */
export async function bindVariables(pb: Playbook, opts: BindOptions = {}): Promise<BoundVariables> {
  const defs = new Map(pb.variables.map((d) => [d.name, d]));
  const values: Record<string, unknown> = {};
  const sources: Record<string, VariableSource> = {};
  const prompts: BoundVariables['prompts'] = [];

  if (opts.given) {
    for (const [name, raw] of Object.entries(opts.given)) {
      const def = defs.get(name);
      if (!def) throw new InputError(`playbook ${pb.name} has no variable ${name}${didYouMean(name, defs.keys())}`);
      if (def.type === 'secret' && isSecretDigest(raw)) continue;
      const c = checkVariableValue(def, raw);
      if (!c.ok) throw new InputError(`variable ${name}: ${c.error}`);
      values[name] = c.value;
      sources[name] = 'recorded';
    }
  }
  if (opts.endpoints !== undefined && defs.has('endpoints') && values.endpoints === undefined) {
    const c = checkVariableValue(defs.get('endpoints')!, opts.endpoints);
    if (!c.ok) throw new InputError(`--endpoints ${opts.endpoints}: ${c.error} (the playbook's variable endpoints)`);
    values.endpoints = c.value;
    sources.endpoints = 'endpoints-flag';
  }
  for (const def of pb.variables) {
    const fromEnv = def.type === 'secret' ? opts.env?.[secretEnvName(def.name)] : undefined;
    if (fromEnv === undefined || fromEnv === '') continue;
    const c = checkVariableValue(def, fromEnv);
    if (!c.ok) throw new InputError(`${secretEnvName(def.name)}: ${c.error}`);
    values[def.name] = c.value;
    sources[def.name] = 'env';
  }
  if (opts.varsFile !== undefined) {
    const problems = new Problems(opts.varsFile);
    for (const [name, raw, origin] of readVarsFile(opts.varsFile, problems)) {
      const def = defs.get(name);
      if (!def) {
        problems.add(origin, `playbook ${pb.name} has no variable ${name}${didYouMean(name, defs.keys())}`);
        continue;
      }
      const c = checkVariableValue(def, raw);
      const bad = c.ok ? await opts.check?.(def, c.value) : undefined;
      if (!c.ok) problems.add({ ...origin, field: name }, c.error);
      else if (bad) problems.add({ ...origin, field: name }, bad);
      else {
        values[name] = c.value;
        sources[name] = 'vars-file';
      }
    }
    problems.throwIfAny();
  }
  // With secrets about, a --set that is not clearly another variable's is shown without its value: it may be a misspelt secret.
  const anySecret = pb.variables.some((d) => d.type === 'secret');
  for (const [given, source] of [...(opts.planned ?? []).map((s) => [s, 'plan'] as const), ...(opts.sets ?? []).map((s) => [s, 'set'] as const)]) {
    const eq = given.indexOf('=');
    if (eq <= 0) throw new InputError(`--set ${anySecret ? '(value not shown)' : given}: expected NAME=VALUE`);
    const name = given.slice(0, eq).trim();
    const text = given.slice(eq + 1);
    const def = defs.get(name);
    const set = (def ? hiddenVariable(def) : anySecret) ? `${name}=${SECRET_MARK}` : given;
    if (!def) throw new InputError(`--set ${set}: playbook ${pb.name} has no variable ${name}${didYouMean(name, defs.keys())}`);
    const raw = def.type !== 'secret' && /^\s*[[{]/.test(text) ? parseFlowValue(text, set) : text;
    const c = checkVariableValue(def, raw);
    if (!c.ok) throw new InputError(`--set ${set}: ${c.error}`);
    const bad = await opts.check?.(def, c.value);
    if (bad) throw new InputError(`--set ${set}: ${bad}`);
    values[name] = c.value;
    sources[name] = source;
  }

  const missing: VariableDef[] = [];
  for (const def of pb.variables) {
    if (def.name in values) continue;
    if (opts.ask && (def.prompt !== undefined || !def.hasDefault)) {
      const offered = opts.promptDefaults && def.name in opts.promptDefaults ? opts.promptDefaults[def.name] : def.hasDefault ? def.default : undefined;
      const check = opts.check;
      const answer = await opts.ask(def, offered, check ? (v) => check(def, v) : undefined);
      values[def.name] = answer;
      sources[def.name] = 'prompt';
      prompts.push({ variable: def.name, question: promptText(def), answer, at: new Date().toISOString() });
    } else if (def.hasDefault) {
      values[def.name] = def.default;
      sources[def.name] = 'default';
    } else missing.push(def);
  }
  if (missing.length > 0) {
    const list = missing.map((d) => `${d.name} (${d.type}${d.prompt ? `: ${d.prompt}` : ''})`).join(', ');
    const envs = missing.filter((d) => d.type === 'secret').map((d) => secretEnvName(d.name));
    throw new InputError(
      `missing variable${missing.length > 1 ? 's' : ''} ${list}; give ${missing.length > 1 ? 'them' : 'it'} with --set NAME=VALUE or --vars FILE.yaml${
        envs.length > 0 ? ` (a secret also from ${envs.join(', ')}; it is never recorded, so a resumed run needs it again)` : ''
      } (no terminal to ask on)`,
    );
  }
  return { values, sources, prompts };
}

/** The question a prompt asks for `def`. */
export function promptText(def: VariableDef): string {
  return def.prompt ?? def.description ?? `${def.name} (${def.type === 'list' ? `list of ${def.items ?? 'string'}` : def.type})`;
}

function parseFlowValue(text: string, set: string): unknown {
  const doc = parseDocument(text, { prettyErrors: false });
  if (doc.errors.length > 0) throw new InputError(`--set ${set}: not a YAML value: ${doc.errors[0].message}`);
  return doc.toJS();
}

function readVarsFile(file: string, problems: Problems): Array<[string, unknown, { line: number; col: number; field: string }]> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new InputError(`cannot read --vars ${file}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  for (const e of doc.errors) {
    const p = lc.linePos(e.pos[0]);
    problems.add({ line: p.line, col: p.col, field: '(yaml)' }, e.message.split('\n')[0]);
  }
  problems.throwIfAny();
  if (doc.contents === null) return [];
  if (!isMap(doc.contents)) {
    problems.add({ ...lc.linePos(doc.contents.range?.[0] ?? 0), field: '(top)' }, 'a --vars file is a map of NAME: VALUE');
    problems.throwIfAny();
  }
  const out: Array<[string, unknown, { line: number; col: number; field: string }]> = [];
  for (const pair of (doc.contents as YAMLMap).items) {
    const key = pair.key;
    const name = isScalar(key) ? String(key.value) : '?';
    const node = isNode(pair.value) ? pair.value : isNode(key) ? key : undefined;
    const pos = lc.linePos(node?.range?.[0] ?? 0);
    out.push([name, isNode(pair.value) ? pair.value.toJS(doc) : null, { line: pos.line, col: pos.col, field: name }]);
  }
  return out;
}

/** One line per variable: `name = value  (source)`, for the run's header and dry-run. */
export function formatBound(pb: Playbook, bound: Pick<BoundVariables, 'values' | 'sources'>): string[] {
  const width = Math.max(0, ...pb.variables.map((d) => d.name.length));
  // A secret (by its type or name) is not printed: the scripted equivalent leaves it out too.
  const show = (d: VariableDef) => (hiddenVariable(d) && bound.values[d.name] !== '' ? SECRET_MARK : formatValue(bound.values[d.name], d.type, d.items));
  return pb.variables.map((d) => `${d.name.padEnd(width)} = ${show(d)}  (${sourceLabel(bound.sources[d.name])})`);
}

function sourceLabel(s: VariableSource | undefined): string {
  switch (s) {
    case 'vars-file':
      return '--vars';
    case 'set':
      return '--set';
    case 'endpoints-flag':
      return '--endpoints';
    case 'prompt':
      return 'answered';
    case 'recorded':
      return 'given';
    case 'plan':
      return 'recover plan';
    case 'env':
      return 'environment';
    default:
      return 'default';
  }
}
