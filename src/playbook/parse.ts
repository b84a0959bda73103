// Reading a playbook file: YAML (with source positions kept) into the tree of
// schema.ts, reporting every structural problem — unknown or missing keys,
// wrong shapes, bad variable definitions and defaults, duplicate ids — at once.
// Checking steps against the step library is validate.ts's job.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { LineCounter, isMap, isNode, isScalar, isSeq, parseDocument, type Node, type YAMLMap } from 'yaml';
import { InputError } from '../client/errors.js';
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
    throw new InputError(`cannot read playbook ${file}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (err as Error).message}`);
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
  if (doc.errors.length > 0) {
    // The first syntax error only: the ones after it are mostly its echoes.
    const e = doc.errors[0]!;
    const p = lc.linePos(e.pos[0]);
    const lineText = text.split('\n')[p.line - 1] ?? '';
    const hint = /[{[][^}\]]*\$\{/.test(lineText) ? ' (inside { } or [ ], quote references: "${vars.x}")' : '';
    problems.add({ line: p.line, col: p.col, field: '(yaml)' }, `${e.message.split('\n')[0]!}${hint}`);
  }
  problems.throwIfAny();

  const origin = (node: Node | null | undefined, field: string): Origin => {
    const p = lc.linePos(node?.range?.[0] ?? 0);
    return { line: p.line, col: p.col, field };
  };
  const toJS = (node: unknown): unknown => (isNode(node) ? node.toJS(doc) : node ?? null);

  /** The map's entries by key, reporting unknown keys (and non-text keys). */
  const entries = (map: YAMLMap, field: string, known: readonly string[], what: string): Map<string, { key: Node; value: Node | null }> => {
    const out = new Map<string, { key: Node; value: Node | null }>();
    for (const pair of map.items) {
      const key = pair.key as Node;
      const name = isScalar(key) ? String(key.value) : undefined;
      const keyField = field === '' ? String(name) : `${field}.${name}`;
      if (name === undefined) {
        problems.add(origin(key, field || '(top)'), `keys must be plain text`);
        continue;
      }
      if (!known.includes(name)) {
        problems.add(origin(key, keyField), `unknown key "${name}" in ${what}${didYouMean(name, known)}; known keys: ${known.join(', ')}`);
        continue;
      }
      out.set(name, { key, value: isNode(pair.value) ? pair.value : null });
    }
    return out;
  };

  const text1 = (node: Node | null, field: string, required: boolean, where: Origin): string | undefined => {
    if (node === null) {
      if (required) problems.add(where, `${field.split('.').at(-1)} is required`);
      return undefined;
    }
    const v = toJS(node);
    if (typeof v !== 'string' || v.trim() === '') {
      problems.add(origin(node, field), `expected text, got ${describeRaw(v)}`);
      return undefined;
    }
    return v;
  };

  const top = doc.contents;
  if (!isMap(top)) {
    problems.add(origin(top as Node | null, '(top)'), 'a playbook is a map with name, description, variables and steps');
    problems.throwIfAny();
  }
  const topMap = top as YAMLMap;
  const topOrigin = origin(topMap, '(top)');
  const keys = entries(topMap, '', PLAYBOOK_KEYS, 'the playbook');
  for (const k of ['name', 'description', 'steps'] as const) {
    if (!keys.has(k)) problems.add(topOrigin, `missing key "${k}"`);
  }
  const nameNode = keys.get('name');
  const name = nameNode ? text1(nameNode.value, 'name', true, origin(nameNode.key, 'name')) : undefined;
  if (name !== undefined && !NAME_PATTERN.test(name)) {
    problems.add(origin(nameNode!.value, 'name'), `${JSON.stringify(name)} is not a playbook name: lowercase words joined by hyphens`);
  }
  const descNode = keys.get('description');
  const description = descNode ? text1(descNode.value, 'description', true, origin(descNode.key, 'description')) : undefined;

  // ---- variables
  const variables: VariableDef[] = [];
  const varsEntry = keys.get('variables');
  if (varsEntry && varsEntry.value !== null) {
    if (!isMap(varsEntry.value)) problems.add(origin(varsEntry.value, 'variables'), 'variables is a map of NAME: {type, default, prompt, validation}');
    else {
      for (const pair of varsEntry.value.items) {
        const key = pair.key as Node;
        const vname = isScalar(key) ? String(key.value) : '?';
        const field = `variables.${vname}`;
        const def = parseVariable(vname, key, isNode(pair.value) ? pair.value : null, field);
        if (def) variables.push(def);
      }
    }
  }

  function parseVariable(vname: string, key: Node, node: Node | null, field: string): VariableDef | undefined {
    const at = origin(key, field);
    if (!NAME_PATTERN.test(vname)) {
      problems.add(at, `${JSON.stringify(vname)} is not a variable name: lowercase words joined by hyphens`);
      return undefined;
    }
    if (!isMap(node)) {
      problems.add(node ? origin(node, field) : at, 'a variable is a map with type (and default, prompt, description, validation, items)');
      return undefined;
    }
    const e = entries(node, field, VARIABLE_KEYS, `variable ${vname}`);
    const typeEntry = e.get('type');
    if (!typeEntry) {
      problems.add(at, `missing key "type" (one of ${PARAM_TYPES.join(', ')})`);
      return { name: vname, type: 'string', hasDefault: false, validation: {}, origin: at, invalid: true };
    }
    const type = toJS(typeEntry.value);
    if (typeof type !== 'string' || !(PARAM_TYPES as readonly string[]).includes(type)) {
      problems.add(origin(typeEntry.value, `${field}.type`), `unknown type ${describeRaw(type)}${typeof type === 'string' ? didYouMean(type, PARAM_TYPES) : ''}; types: ${PARAM_TYPES.join(', ')}`);
      return { name: vname, type: 'string', hasDefault: false, validation: {}, origin: at, invalid: true };
    }
    const def: VariableDef = { name: vname, type: type as ParamType, hasDefault: false, validation: {}, origin: at };
    const itemsEntry = e.get('items');
    if (itemsEntry) {
      const items = toJS(itemsEntry.value);
      if (def.type !== 'list') problems.add(origin(itemsEntry.key, `${field}.items`), `items is for list variables, this one is ${def.type}`);
      else if (typeof items !== 'string' || !(PARAM_TYPES as readonly string[]).includes(items) || items === 'list') {
        problems.add(origin(itemsEntry.value, `${field}.items`), `items must be one of ${PARAM_TYPES.filter((t) => t !== 'list').join(', ')}, got ${describeRaw(items)}`);
      } else def.items = items as ParamType;
    }
    for (const k of ['prompt', 'description'] as const) {
      const ent = e.get(k);
      if (ent) def[k] = text1(ent.value, `${field}.${k}`, true, origin(ent.key, `${field}.${k}`));
    }
    const valEntry = e.get('validation');
    if (valEntry) def.validation = parseValidation(def, valEntry.value, `${field}.validation`, origin(valEntry.key, `${field}.validation`));
    const defEntry = e.get('default');
    if (defEntry) {
      const raw = toJS(defEntry.value);
      const where = origin(defEntry.value ?? defEntry.key, `${field}.default`);
      const c = convertValue(raw, def.type, def.items);
      if (!c.ok) problems.add(where, c.error);
      else {
        const bad = ruleProblem(def, c.value);
        if (bad) problems.add(where, `the default breaks the variable's validation: ${bad}`);
        def.hasDefault = true;
        def.default = c.value;
      }
    }
    return def;
  }

  function parseValidation(def: VariableDef, node: Node | null, field: string, at: Origin): Validation {
    const out: Validation = {};
    if (!isMap(node)) {
      problems.add(node ? origin(node, field) : at, `validation is a map with ${VALIDATION_KEYS.join(', ')}`);
      return out;
    }
    const e = entries(node, field, VALIDATION_KEYS, `the validation of ${def.name}`);
    const textual = def.type === 'string' || def.type === 'url' || def.type === 'path' || (def.type === 'list' && (def.items ?? 'string') === 'string');
    const pat = e.get('pattern');
    if (pat) {
      const v = toJS(pat.value);
      const where = origin(pat.value ?? pat.key, `${field}.pattern`);
      if (!textual) problems.add(where, `pattern applies to string, url, path and list variables, ${def.name} is ${def.type}`);
      else if (typeof v !== 'string') problems.add(where, `pattern must be a regular expression as text, got ${describeRaw(v)}`);
      else {
        try {
          out.pattern = new RegExp(v, 'u');
        } catch (err) {
          problems.add(where, `bad regular expression: ${(err as Error).message}`);
        }
      }
    }
    for (const k of ['min', 'max'] as const) {
      const ent = e.get(k);
      if (!ent) continue;
      const where = origin(ent.value ?? ent.key, `${field}.${k}`);
      if (def.type !== 'int' && def.type !== 'duration' && def.type !== 'list') {
        problems.add(where, `${k} applies to int, duration and list variables (a list: its number of items), ${def.name} is ${def.type}`);
        continue;
      }
      const c = convertValue(toJS(ent.value), def.type === 'duration' ? 'duration' : 'int');
      if (!c.ok) problems.add(where, c.error);
      else out[k] = c.value as number;
    }
    if (out.min !== undefined && out.max !== undefined && out.min > out.max) problems.add(at, 'min is above max');
    const ch = e.get('choices');
    if (ch) {
      const v = toJS(ch.value);
      const where = origin(ch.value ?? ch.key, `${field}.choices`);
      if (def.type === 'list' || def.type === 'member') problems.add(where, `choices apply to single values, ${def.name} is a ${def.type}`);
      else if (!Array.isArray(v) || v.length === 0) problems.add(where, 'choices must be a non-empty list');
      else {
        out.choices = [];
        for (const [i, c] of v.entries()) {
          const conv = convertValue(c, def.type);
          if (!conv.ok) problems.add(where, `choice ${i + 1}: ${conv.error}`);
          else out.choices.push(conv.value);
        }
      }
    }
    return out;
  }

  // ---- steps
  const explicitIds = new Map<string, Origin>();
  const pendingIds: Array<{ node: PlanNode; base: string }> = [];

  function parseSteps(node: Node | null, field: string, at: Origin): PlanNode[] {
    if (!isSeq(node) || node.items.length === 0) {
      problems.add(node ? origin(node, field) : at, `${field.split('.').at(-1)} must be a non-empty list of steps`);
      return [];
    }
    const out: PlanNode[] = [];
    node.items.forEach((item, i) => {
      const step = parseStep(isNode(item) ? item : null, `${field}[${i + 1}]`, at);
      if (step) out.push(step);
    });
    return out;
  }

  function parseStep(node: Node | null, field: string, parentAt: Origin): PlanNode | undefined {
    const at = origin(node, field);
    if (!isMap(node)) {
      problems.add(node ? at : parentAt, 'a step is a map with type and with (or for-each, as and steps)');
      return undefined;
    }
    const e = entries(node, field, STEP_KEYS, 'a step');
    const idEntry = e.get('id');
    let id: string | undefined;
    if (idEntry) {
      id = text1(idEntry.value, `${field}.id`, true, origin(idEntry.key, `${field}.id`));
      if (id !== undefined && !NAME_PATTERN.test(id)) {
        problems.add(origin(idEntry.value, `${field}.id`), `${JSON.stringify(id)} is not a step id: lowercase words joined by hyphens`);
        id = undefined;
      } else if (id !== undefined) {
        const prev = explicitIds.get(id);
        if (prev) problems.add(origin(idEntry.value, `${field}.id`), `step id ${id} is already used at line ${prev.line} (${prev.field})`);
        else explicitIds.set(id, origin(idEntry.value, `${field}.id`));
      }
    }
    const nameEntry = e.get('name');
    const title = nameEntry ? text1(nameEntry.value, `${field}.name`, true, origin(nameEntry.key, `${field}.name`)) : undefined;

    const fe = e.get('for-each');
    if (fe) {
      for (const k of ['type', 'with'] as const) {
        const ent = e.get(k);
        if (ent) problems.add(origin(ent.key, `${field}.${k}`), `a for-each step has no ${k}: put the steps to repeat under steps`);
      }
      const asEntry = e.get('as');
      let as = 'item';
      if (asEntry) {
        const v = text1(asEntry.value, `${field}.as`, true, origin(asEntry.key, `${field}.as`));
        if (v !== undefined && (!NAME_PATTERN.test(v) || RESERVED_ROOTS.includes(v))) {
          problems.add(origin(asEntry.value, `${field}.as`), `${JSON.stringify(v)} cannot name the item: use a lowercase word other than ${RESERVED_ROOTS.join(' and ')}`);
        } else if (v !== undefined) as = v;
      }
      const stepsEntry = e.get('steps');
      if (!stepsEntry) problems.add(at, 'a for-each step needs steps: the steps to run for each item');
      const fnode: ForEachNode = {
        kind: 'for-each',
        id: id ?? '',
        ...(title !== undefined ? { name: title } : {}),
        forEach: { value: toJS(fe.value), origin: origin(fe.value ?? fe.key, `${field}.for-each`) },
        as,
        steps: [],
        origin: at,
      };
      if (id === undefined) pendingIds.push({ node: fnode, base: 'for-each' });
      if (stepsEntry) fnode.steps = parseSteps(stepsEntry.value, `${field}.steps`, origin(stepsEntry.key, `${field}.steps`));
      return fnode;
    }
    for (const k of ['as', 'steps'] as const) {
      const ent = e.get(k);
      if (ent) problems.add(origin(ent.key, `${field}.${k}`), `${k} belongs to a for-each step; this step has no for-each`);
    }
    const typeEntry = e.get('type');
    if (!typeEntry) {
      problems.add(at, 'missing key "type" (the step library\'s step type) or "for-each"');
      return undefined;
    }
    const type = text1(typeEntry.value, `${field}.type`, true, origin(typeEntry.key, `${field}.type`));
    if (type === undefined) return undefined;
    const params: StepNode['with'] = {};
    const withEntry = e.get('with');
    if (withEntry && withEntry.value !== null) {
      if (!isMap(withEntry.value)) problems.add(origin(withEntry.value, `${field}.with`), 'with is a map of PARAMETER: VALUE');
      else {
        for (const pair of withEntry.value.items) {
          const key = pair.key as Node;
          const pname = isScalar(key) ? String(key.value) : '?';
          const value = isNode(pair.value) ? pair.value : null;
          params[pname] = { value: toJS(value), origin: origin(value ?? key, `${field}.with.${pname}`) };
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
      typeOrigin: origin(typeEntry.value, `${field}.type`),
      ...(node.items.length > e.size ? { hasUnknownKeys: true } : {}),
    };
    if (id === undefined) pendingIds.push({ node: snode, base: type });
    return snode;
  }

  const stepsEntry = keys.get('steps');
  const steps = stepsEntry ? parseSteps(stepsEntry.value, 'steps', origin(stepsEntry.key, 'steps')) : [];

  // Steps without an id take their type (for-each: "for-each"), numbered from the second on.
  const taken = new Set(explicitIds.keys());
  const seen = new Map<string, number>();
  for (const { node, base } of pendingIds) {
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

  return { playbook: { file, absPath, text, sha256, name: name ?? '', description: description ?? '', variables, steps }, problems };
}
