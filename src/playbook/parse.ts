// Reading a playbook file: YAML (with source positions kept) into the tree of
// schema.ts, reporting every structural problem — unknown or missing keys,
// wrong shapes, bad variable definitions and defaults, duplicate ids — at once.
// Checking steps against the step library is validate.ts's job. One Ctx per
// file read, one function per part (top, variables, validation, steps, ids).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LineCounter, isMap, isNode, isScalar, isSeq, parseDocument, type Document, type Node, type YAMLMap } from 'yaml';
import { InputError } from '../common/errors.js';
import { Problems } from './errors.js';
import {
  NAME_PATTERN,
  PARAM_TYPES,
  PLAYBOOK_KEYS,
  STEP_KEYS,
  VALIDATION_KEYS,
  VARIABLE_KEYS,
  type ForEachNode,
  type Origin,
  type PlanNode,
  type Playbook,
  type StepNode,
  type Validation,
  type VariableDef,
} from './schema.js';
import type { ParamType } from './stepTypes.js';
import { secretEnvName } from './secrets.js';
import { didYouMean } from './suggest.js';
import { ruleProblem } from './variables.js';
import { convertValue, describeRaw } from './values.js';

/** Names a for-each item cannot take: they are reference roots already. */
const RESERVED_ROOTS = ['vars', 'steps'];

/** Reads and parses the playbook at `file` (as the operator named it). Throws PlaybookInvalidError or InputError. */
export function readPlaybook(file: string): Playbook {
  const { playbook, problems } = readPlaybookWithProblems(file);
  problems.throwIfAny();
  return playbook;
}

/**
 * Like readPlaybook, but structural problems are returned (with what could be
 * parsed) so that validation can add its own and report everything at once.
 * Only unreadable YAML throws.
 */
export function readPlaybookWithProblems(file: string): { playbook: Playbook; problems: Problems } {
  const absPath = path.resolve(file);
  let bytes: Buffer;
  try {
    bytes = readFileSync(absPath);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new InputError(
      `cannot read playbook ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (err as Error).message}`,
    );
  }
  return parsePlaybookWithProblems(bytes.toString('utf8'), file, absPath, createHash('sha256').update(bytes).digest('hex'));
}

/** Parses playbook text; `file` is how errors name it. Throws PlaybookInvalidError. */
export function parsePlaybook(text: string, file: string, absPath = path.resolve(file), sha256 = createHash('sha256').update(text).digest('hex')): Playbook {
  const { playbook, problems } = parsePlaybookWithProblems(text, file, absPath, sha256);
  problems.throwIfAny();
  return playbook;
}

/** Parses playbook text, returning the problems found with what could be parsed; only YAML that cannot be read throws. */
export function parsePlaybookWithProblems(
  text: string,
  file: string,
  absPath = path.resolve(file),
  sha256 = createHash('sha256').update(text).digest('hex'),
): { playbook: Playbook; problems: Problems } {
  const problems = new Problems(file);
  const lc = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lc, prettyErrors: false, uniqueKeys: true });
  yamlSyntaxProblem(doc, lc, text, problems);
  problems.throwIfAny();

  const ctx: Ctx = { doc, lc, problems, explicitIds: new Map(), pendingIds: [] };
  const { keys, name, description } = parseTop(ctx);
  const variables = parseVariables(ctx, keys.get('variables'));
  const stepsEntry = keys.get('steps');
  const steps = stepsEntry ? parseSteps(ctx, stepsEntry.value, 'steps', origin(ctx, stepsEntry.key, 'steps')) : [];
  nameUnnamedSteps(ctx);

  return { playbook: { file, absPath, text, sha256, name: name ?? '', description: description ?? '', variables, steps }, problems };
}

/** What the functions below share while one file is read. */
interface Ctx {
  doc: Document.Parsed;
  lc: LineCounter;
  problems: Problems;
  /** step ids given in the file, and where */
  explicitIds: Map<string, Origin>;
  /** steps without an id: named (nameUnnamedSteps) once every explicit id is known */
  pendingIds: Array<{ node: PlanNode; base: string }>;
}

type Entries = Map<string, { key: Node; value: Node | null }>;

/** The first YAML syntax error only: the ones after it are mostly its echoes. */
function yamlSyntaxProblem(doc: Document.Parsed, lc: LineCounter, text: string, problems: Problems): void {
  if (doc.errors.length === 0) return;
  const e = doc.errors[0];
  const p = lc.linePos(e.pos[0]);
  const lineText = text.split('\n')[p.line - 1] ?? '';
  const hint = /[{[][^}\]]*\$\{/.test(lineText) ? ' (inside { } or [ ], quote references: "${vars.x}")' : '';
  problems.add({ line: p.line, col: p.col, field: '(yaml)' }, `${e.message.split('\n')[0]}${hint}`);
}

function origin(ctx: Ctx, node: Node | null | undefined, field: string): Origin {
  const p = ctx.lc.linePos(node?.range?.[0] ?? 0);
  return { line: p.line, col: p.col, field };
}

function toJS(ctx: Ctx, node: unknown): unknown {
  return isNode(node) ? node.toJS(ctx.doc) : (node ?? null);
}

/** The map's entries by key, reporting unknown keys (and non-text keys). */
function entries(ctx: Ctx, map: YAMLMap, field: string, known: readonly string[], what: string): Entries {
  const out = new Map<string, { key: Node; value: Node | null }>();
  for (const pair of map.items) {
    const key = pair.key as Node;
    const name = isScalar(key) ? String(key.value) : undefined;
    const keyField = field === '' ? String(name) : `${field}.${name}`;
    if (name === undefined) {
      ctx.problems.add(origin(ctx, key, field || '(top)'), `keys must be plain text`);
      continue;
    }
    if (!known.includes(name)) {
      ctx.problems.add(origin(ctx, key, keyField), `unknown key "${name}" in ${what}${didYouMean(name, known)}; known keys: ${known.join(', ')}`);
      continue;
    }
    out.set(name, { key, value: isNode(pair.value) ? pair.value : null });
  }
  return out;
}

function text1(ctx: Ctx, node: Node | null, field: string, required: boolean, where: Origin): string | undefined {
  if (node === null) {
    if (required) ctx.problems.add(where, `${field.split('.').at(-1)} is required`);
    return undefined;
  }
  const v = toJS(ctx, node);
  if (typeof v !== 'string' || v.trim() === '') {
    ctx.problems.add(origin(ctx, node, field), `expected text, got ${describeRaw(v)}`);
    return undefined;
  }
  return v;
}

/** The top-level map: its keys (unknown ones reported), name and description. */
function parseTop(ctx: Ctx): { keys: Entries; name: string | undefined; description: string | undefined } {
  const top = ctx.doc.contents;
  if (!isMap(top)) {
    ctx.problems.add(origin(ctx, top, '(top)'), 'a playbook is a map with name, description, variables and steps');
    ctx.problems.throwIfAny();
  }
  const topMap = top as YAMLMap;
  const topOrigin = origin(ctx, topMap, '(top)');
  const keys = entries(ctx, topMap, '', PLAYBOOK_KEYS, 'the playbook');
  for (const k of ['name', 'description', 'steps'] as const) {
    if (!keys.has(k)) ctx.problems.add(topOrigin, `missing key "${k}"`);
  }
  const nameNode = keys.get('name');
  const name = nameNode ? text1(ctx, nameNode.value, 'name', true, origin(ctx, nameNode.key, 'name')) : undefined;
  if (name !== undefined && !NAME_PATTERN.test(name)) {
    ctx.problems.add(origin(ctx, nameNode!.value, 'name'), `${JSON.stringify(name)} is not a playbook name: lowercase words joined by hyphens`);
  }
  const descNode = keys.get('description');
  const description = descNode ? text1(ctx, descNode.value, 'description', true, origin(ctx, descNode.key, 'description')) : undefined;
  return { keys, name, description };
}

function parseVariables(ctx: Ctx, varsEntry: { key: Node; value: Node | null } | undefined): VariableDef[] {
  const variables: VariableDef[] = [];
  if (varsEntry && varsEntry.value !== null) {
    if (!isMap(varsEntry.value)) ctx.problems.add(origin(ctx, varsEntry.value, 'variables'), 'variables is a map of NAME: {type, default, prompt, validation}');
    else {
      for (const pair of varsEntry.value.items) {
        const key = pair.key as Node;
        const vname = isScalar(key) ? String(key.value) : '?';
        const field = `variables.${vname}`;
        const def = parseVariable(ctx, vname, key, isNode(pair.value) ? pair.value : null, field);
        if (def) variables.push(def);
      }
    }
  }
  return variables;
}

function parseVariable(ctx: Ctx, vname: string, key: Node, node: Node | null, field: string): VariableDef | undefined {
  const at = origin(ctx, key, field);
  if (!NAME_PATTERN.test(vname)) {
    ctx.problems.add(at, `${JSON.stringify(vname)} is not a variable name: lowercase words joined by hyphens`);
    return undefined;
  }
  if (!isMap(node)) {
    ctx.problems.add(node ? origin(ctx, node, field) : at, 'a variable is a map with type (and default, prompt, description, validation, items)');
    return undefined;
  }
  const e = entries(ctx, node, field, VARIABLE_KEYS, `variable ${vname}`);
  const typeEntry = e.get('type');
  if (!typeEntry) {
    ctx.problems.add(at, `missing key "type" (one of ${PARAM_TYPES.join(', ')})`);
    return { name: vname, type: 'string', hasDefault: false, validation: {}, origin: at, invalid: true };
  }
  const type = toJS(ctx, typeEntry.value);
  if (typeof type !== 'string' || !(PARAM_TYPES as readonly string[]).includes(type)) {
    ctx.problems.add(
      origin(ctx, typeEntry.value, `${field}.type`),
      `unknown type ${describeRaw(type)}${typeof type === 'string' ? didYouMean(type, PARAM_TYPES) : ''}; types: ${PARAM_TYPES.join(', ')}`,
    );
    return { name: vname, type: 'string', hasDefault: false, validation: {}, origin: at, invalid: true };
  }
  const def: VariableDef = { name: vname, type: type as ParamType, hasDefault: false, validation: {}, origin: at };
  const itemsEntry = e.get('items');
  if (itemsEntry) {
    const items = toJS(ctx, itemsEntry.value);
    if (def.type !== 'list') ctx.problems.add(origin(ctx, itemsEntry.key, `${field}.items`), `items is for list variables, this one is ${def.type}`);
    else if (typeof items !== 'string' || !(PARAM_TYPES as readonly string[]).includes(items) || items === 'list' || items === 'secret') {
      ctx.problems.add(
        origin(ctx, itemsEntry.value, `${field}.items`),
        `items must be one of ${PARAM_TYPES.filter((t) => t !== 'list' && t !== 'secret').join(', ')}, got ${describeRaw(items)}`,
      );
    } else def.items = items as ParamType;
  }
  for (const k of ['prompt', 'description'] as const) {
    const ent = e.get(k);
    if (ent) def[k] = text1(ctx, ent.value, `${field}.${k}`, true, origin(ctx, ent.key, `${field}.${k}`));
  }
  const valEntry = e.get('validation');
  if (valEntry) def.validation = parseValidation(ctx, def, valEntry.value, `${field}.validation`, origin(ctx, valEntry.key, `${field}.validation`));
  const defEntry = e.get('default');
  // A secret written in the playbook is in every copy of it: it comes from --set, the environment or a prompt.
  if (defEntry && def.type === 'secret') {
    ctx.problems.add(
      origin(ctx, defEntry.key, `${field}.default`),
      `a secret has no default (it would be readable in the playbook file); it is given with --set, ${secretEnvName(def.name)} or at a prompt`,
    );
  } else if (defEntry) {
    const raw = toJS(ctx, defEntry.value);
    const where = origin(ctx, defEntry.value ?? defEntry.key, `${field}.default`);
    const c = convertValue(raw, def.type, def.items);
    if (!c.ok) ctx.problems.add(where, c.error);
    else {
      const bad = ruleProblem(def, c.value);
      if (bad) ctx.problems.add(where, `the default breaks the variable's validation: ${bad}`);
      def.hasDefault = true;
      def.default = c.value;
    }
  }
  return def;
}

function parseValidation(ctx: Ctx, def: VariableDef, node: Node | null, field: string, at: Origin): Validation {
  const out: Validation = {};
  if (!isMap(node)) {
    ctx.problems.add(node ? origin(ctx, node, field) : at, `validation is a map with ${VALIDATION_KEYS.join(', ')}`);
    return out;
  }
  const e = entries(ctx, node, field, VALIDATION_KEYS, `the validation of ${def.name}`);
  const textual =
    def.type === 'string' ||
    def.type === 'secret' ||
    def.type === 'url' ||
    def.type === 'path' ||
    (def.type === 'list' && (def.items ?? 'string') === 'string');
  const pat = e.get('pattern');
  if (pat) {
    const v = toJS(ctx, pat.value);
    const where = origin(ctx, pat.value ?? pat.key, `${field}.pattern`);
    if (!textual) ctx.problems.add(where, `pattern applies to string, secret, url, path and list variables, ${def.name} is ${def.type}`);
    else if (typeof v !== 'string') ctx.problems.add(where, `pattern must be a regular expression as text, got ${describeRaw(v)}`);
    else {
      try {
        out.pattern = new RegExp(v, 'u');
      } catch (err) {
        ctx.problems.add(where, `bad regular expression: ${(err as Error).message}`);
      }
    }
  }
  for (const k of ['min', 'max'] as const) {
    const ent = e.get(k);
    if (!ent) continue;
    const where = origin(ctx, ent.value ?? ent.key, `${field}.${k}`);
    if (def.type !== 'int' && def.type !== 'duration' && def.type !== 'list') {
      ctx.problems.add(where, `${k} applies to int, duration and list variables (a list: its number of items), ${def.name} is ${def.type}`);
      continue;
    }
    const c = convertValue(toJS(ctx, ent.value), def.type === 'duration' ? 'duration' : 'int');
    if (!c.ok) ctx.problems.add(where, c.error);
    else out[k] = c.value as number;
  }
  if (out.min !== undefined && out.max !== undefined && out.min > out.max) ctx.problems.add(at, 'min is above max');
  const ch = e.get('choices');
  if (ch) {
    const v = toJS(ctx, ch.value);
    const where = origin(ctx, ch.value ?? ch.key, `${field}.choices`);
    if (def.type === 'list' || def.type === 'member') ctx.problems.add(where, `choices apply to single values, ${def.name} is a ${def.type}`);
    else if (def.type === 'secret') ctx.problems.add(where, `a secret has no choices (they would be readable in the playbook file)`);
    else if (!Array.isArray(v) || v.length === 0) ctx.problems.add(where, 'choices must be a non-empty list');
    else {
      out.choices = [];
      for (const [i, c] of v.entries()) {
        const conv = convertValue(c, def.type);
        if (!conv.ok) ctx.problems.add(where, `choice ${i + 1}: ${conv.error}`);
        else out.choices.push(conv.value);
      }
    }
  }
  return out;
}

function parseSteps(ctx: Ctx, node: Node | null, field: string, at: Origin): PlanNode[] {
  if (!isSeq(node) || node.items.length === 0) {
    ctx.problems.add(node ? origin(ctx, node, field) : at, `${field.split('.').at(-1)} must be a non-empty list of steps`);
    return [];
  }
  const out: PlanNode[] = [];
  node.items.forEach((item, i) => {
    const step = parseStep(ctx, isNode(item) ? item : null, `${field}[${i + 1}]`, at);
    if (step) out.push(step);
  });
  return out;
}

function parseStep(ctx: Ctx, node: Node | null, field: string, parentAt: Origin): PlanNode | undefined {
  const at = origin(ctx, node, field);
  if (!isMap(node)) {
    ctx.problems.add(node ? at : parentAt, 'a step is a map with type and with (or for-each, as and steps)');
    return undefined;
  }
  const e = entries(ctx, node, field, STEP_KEYS, 'a step');
  const id = parseStepId(ctx, e, field);
  const nameEntry = e.get('name');
  const title = nameEntry ? text1(ctx, nameEntry.value, `${field}.name`, true, origin(ctx, nameEntry.key, `${field}.name`)) : undefined;
  const step: StepHead = { e, field, at, id, title };
  return e.has('for-each') ? parseForEach(ctx, step) : parseTypedStep(ctx, step, node.items.length);
}

/** What parseStep read before telling a for-each from a typed step. */
interface StepHead {
  e: Entries;
  field: string;
  at: Origin;
  /** the explicit id, if valid */
  id: string | undefined;
  title: string | undefined;
}

/** The step's explicit id, if it has a valid one; duplicates are reported. */
function parseStepId(ctx: Ctx, e: Entries, field: string): string | undefined {
  const idEntry = e.get('id');
  let id: string | undefined;
  if (idEntry) {
    id = text1(ctx, idEntry.value, `${field}.id`, true, origin(ctx, idEntry.key, `${field}.id`));
    if (id !== undefined && !NAME_PATTERN.test(id)) {
      ctx.problems.add(origin(ctx, idEntry.value, `${field}.id`), `${JSON.stringify(id)} is not a step id: lowercase words joined by hyphens`);
      id = undefined;
    } else if (id !== undefined) {
      const prev = ctx.explicitIds.get(id);
      if (prev) ctx.problems.add(origin(ctx, idEntry.value, `${field}.id`), `step id ${id} is already used at line ${prev.line} (${prev.field})`);
      else ctx.explicitIds.set(id, origin(ctx, idEntry.value, `${field}.id`));
    }
  }
  return id;
}

function parseForEach(ctx: Ctx, { e, field, at, id, title }: StepHead): ForEachNode {
  const fe = e.get('for-each')!;
  for (const k of ['type', 'with'] as const) {
    const ent = e.get(k);
    if (ent) ctx.problems.add(origin(ctx, ent.key, `${field}.${k}`), `a for-each step has no ${k}: put the steps to repeat under steps`);
  }
  const asEntry = e.get('as');
  let as = 'item';
  if (asEntry) {
    const v = text1(ctx, asEntry.value, `${field}.as`, true, origin(ctx, asEntry.key, `${field}.as`));
    if (v !== undefined && (!NAME_PATTERN.test(v) || RESERVED_ROOTS.includes(v))) {
      ctx.problems.add(
        origin(ctx, asEntry.value, `${field}.as`),
        `${JSON.stringify(v)} cannot name the item: use a lowercase word other than ${RESERVED_ROOTS.join(' and ')}`,
      );
    } else if (v !== undefined) as = v;
  }
  const stepsEntry = e.get('steps');
  if (!stepsEntry) ctx.problems.add(at, 'a for-each step needs steps: the steps to run for each item');
  const fnode: ForEachNode = {
    kind: 'for-each',
    id: id ?? '',
    ...(title !== undefined ? { name: title } : {}),
    forEach: { value: toJS(ctx, fe.value), origin: origin(ctx, fe.value ?? fe.key, `${field}.for-each`) },
    as,
    steps: [],
    origin: at,
  };
  if (id === undefined) ctx.pendingIds.push({ node: fnode, base: 'for-each' });
  if (stepsEntry) fnode.steps = parseSteps(ctx, stepsEntry.value, `${field}.steps`, origin(ctx, stepsEntry.key, `${field}.steps`));
  return fnode;
}

function parseTypedStep(ctx: Ctx, { e, field, at, id, title }: StepHead, keyCount: number): StepNode | undefined {
  for (const k of ['as', 'steps'] as const) {
    const ent = e.get(k);
    if (ent) ctx.problems.add(origin(ctx, ent.key, `${field}.${k}`), `${k} belongs to a for-each step; this step has no for-each`);
  }
  const typeEntry = e.get('type');
  if (!typeEntry) {
    ctx.problems.add(at, 'missing key "type" (the step library\'s step type) or "for-each"');
    return undefined;
  }
  const type = text1(ctx, typeEntry.value, `${field}.type`, true, origin(ctx, typeEntry.key, `${field}.type`));
  if (type === undefined) return undefined;
  const params: StepNode['with'] = {};
  const withEntry = e.get('with');
  if (withEntry && withEntry.value !== null) {
    if (!isMap(withEntry.value)) ctx.problems.add(origin(ctx, withEntry.value, `${field}.with`), 'with is a map of PARAMETER: VALUE');
    else {
      for (const pair of withEntry.value.items) {
        const key = pair.key as Node;
        const pname = isScalar(key) ? String(key.value) : '?';
        const value = isNode(pair.value) ? pair.value : null;
        params[pname] = { value: toJS(ctx, value), origin: origin(ctx, value ?? key, `${field}.with.${pname}`) };
      }
    }
  }
  const snode: StepNode = {
    kind: 'step',
    id: id ?? '',
    type,
    ...(title !== undefined ? { name: title } : {}),
    with: params,
    origin: at,
    typeOrigin: origin(ctx, typeEntry.value, `${field}.type`),
    ...(keyCount > e.size ? { hasUnknownKeys: true } : {}),
  };
  if (id === undefined) ctx.pendingIds.push({ node: snode, base: type });
  return snode;
}

/** Steps without an id take their type (for-each: "for-each"), numbered from the second on. */
function nameUnnamedSteps(ctx: Ctx): void {
  const taken = new Set(ctx.explicitIds.keys());
  const seen = new Map<string, number>();
  for (const { node, base } of ctx.pendingIds) {
    let n = seen.get(base) ?? 0;
    let id: string;
    do {
      n++;
      id = n === 1 ? base : `${base}-${n}`;
    } while (taken.has(id));
    seen.set(base, n);
    taken.add(id);
    node.id = id;
  }
}
