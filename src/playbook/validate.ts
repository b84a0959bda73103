// Checking a parsed playbook against the step library before anything runs:
// step types exist, parameters are known and present, literal values have the
// parameter's type, and every `${…}` reference names something that will exist
// where it is used, with a type the parameter can take. What depends on values
// (variables, step outputs) is checked again once they are known (plan.ts, and
// the engine at run time).
import { Problems } from './errors.js';
import { referencesIn, type Ref } from './interpolate.js';
import type { ForEachNode, Origin, PlanNode, Playbook, StepNode } from './schema.js';
import type { ParamType, StepDefinition } from './stepTypes.js';
import { didYouMean } from './suggest.js';
import { convertValue } from './values.js';

export type StepLibrary = Record<string, StepDefinition>;

/** A step parameter of this name that the playbook leaves out takes the run's --endpoints. */
export const ENDPOINTS_PARAM = 'endpoints';

/** What a reference is known to hold before the run: a type, or unknown (a step output). */
export type StaticType = { type: ParamType; items?: ParamType } | null;

const MEMBER_FIELDS: Record<string, ParamType> = { name: 'string', peerUrl: 'url', clientUrl: 'url', dataDir: 'path' };

interface StepInfo {
  id: string;
  origin: Origin;
  /** the for-each nodes enclosing it, outermost first */
  enclosing: ForEachNode[];
  /** position in file order */
  index: number;
}

interface Scope {
  /** for-each items in scope: name → type */
  items: Map<string, StaticType>;
  /** enclosing for-each nodes, outermost first */
  enclosing: ForEachNode[];
  /** file-order index of the node being checked */
  index: number;
}

/**
 * Checks `pb` against `library`, adding to `problems` (e.g. those parsing found)
 * and throwing PlaybookInvalidError with all of them if there are any.
 */
export function validatePlaybook(pb: Playbook, library: StepLibrary, problems: Problems = new Problems(pb.file)): void {
  const vars = new Map(pb.variables.map((v) => [v.name, v]));
  const steps = new Map<string, StepInfo>();
  let counter = 0;
  const index = new Map<PlanNode, number>();
  const collect = (nodes: PlanNode[], enclosing: ForEachNode[]) => {
    for (const n of nodes) {
      index.set(n, counter++);
      if (n.kind === 'step') steps.set(n.id, { id: n.id, origin: n.origin, enclosing, index: index.get(n)! });
      else collect(n.steps, [...enclosing, n]);
    }
  };
  collect(pb.steps, []);

  const typeOfRef = (ref: Ref, scope: Scope, origin: Origin): StaticType | 'error' => {
    const bad = (message: string): 'error' => {
      problems.add(origin, message);
      return 'error';
    };
    if (ref.root === 'vars') {
      const name = ref.path[0];
      if (name === undefined) return bad(`${ref.text}: name the variable, e.g. \${vars.NAME}`);
      const def = vars.get(name);
      if (!def)
        return bad(
          `${ref.text}: no variable ${name}${didYouMean(name, vars.keys())}${vars.size ? `; variables: ${[...vars.keys()].join(', ')}` : ' (the playbook declares none)'}`,
        );
      if (def.invalid) return null;
      return followType({ type: def.type, items: def.items }, ref.path.slice(1), ref, bad);
    }
    if (ref.root === 'steps') {
      const id = ref.path[0];
      if (id === undefined || ref.path.length < 2) return bad(`${ref.text}: name the step and its output, e.g. \${steps.ID.OUTPUT}`);
      const target = steps.get(id);
      if (!target) return bad(`${ref.text}: no step with id ${id}${didYouMean(id, steps.keys())}`);
      if (target.index >= scope.index)
        return bad(`${ref.text}: step ${id} (line ${target.origin.line}) runs later; a step can only use outputs of steps before it`);
      const outside = target.enclosing.find((f) => !scope.enclosing.includes(f));
      if (outside) return bad(`${ref.text}: step ${id} is inside for-each ${outside.id}; its outputs are visible only to the steps after it in that for-each`);
      return null;
    }
    if (scope.items.has(ref.root)) return followType(scope.items.get(ref.root)!, ref.path, ref, bad);
    const roots = ['vars', 'steps', ...scope.items.keys()];
    return bad(`${ref.text}: unknown name ${ref.root}${didYouMean(ref.root, roots)}; a reference starts with ${roots.join(', ')}`);
  };

  /** Checks the references in `value`; returns those that resolve statically, and whether it holds any reference at all. */
  const checkValue = (value: unknown, scope: Scope, origin: Origin): Array<{ ref: Ref; type: StaticType }> & { templated?: boolean } => {
    const out: Array<{ ref: Ref; type: StaticType }> & { templated?: boolean } = [];
    let templated = false;
    for (const ref of referencesIn(value, (m) => {
      templated = true;
      problems.add(origin, m);
    })) {
      templated = true;
      const t = typeOfRef(ref, scope, origin);
      if (t !== 'error') out.push({ ref, type: t });
    }
    out.templated = templated;
    return out;
  };

  const checkStep = (step: StepNode, scope: Scope) => {
    const def = library[step.type];
    if (step.name !== undefined) checkValue(step.name, scope, { ...step.origin, field: `${step.origin.field}.name` });
    if (!def) {
      problems.add(
        step.typeOrigin,
        `unknown step type "${step.type}"${didYouMean(step.type, Object.keys(library))}; step types: ${Object.keys(library).sort().join(', ')}`,
      );
      for (const p of Object.values(step.with)) checkValue(p.value, scope, p.origin);
      return;
    }
    for (const [name, p] of Object.entries(step.with)) {
      const spec = def.params[name];
      const refs = checkValue(p.value, scope, p.origin);
      if (!spec) {
        const known = Object.keys(def.params);
        problems.add(p.origin, `step type ${step.type} has no parameter "${name}"${didYouMean(name, known)}; parameters: ${known.join(', ') || '(none)'}`);
        continue;
      }
      if (!refs.templated) {
        const c = convertValue(p.value, spec.type);
        if (!c.ok) problems.add(p.origin, `${spec.type} parameter: ${c.error}`);
        continue;
      }
      if (typeof p.value === 'string') {
        const whole = refs.length === 1 && p.value === refs[0].ref.text;
        if (whole) {
          const mismatch = incompatible(spec.type, refs[0].type);
          if (mismatch) problems.add(p.origin, `${refs[0].ref.text} ${mismatch}, parameter ${name} takes ${article(spec.type)}`);
        } else {
          for (const { ref, type } of refs) {
            if (type && (type.type === 'list' || type.type === 'member')) {
              const hint =
                type.type === 'member' ? ` (use one of its fields, e.g. ${ref.text.replace(/}$/, '.name}')})` : ' (a list can only be a whole value)';
              problems.add(p.origin, `${ref.text} is ${article(type.type)}; it cannot be part of a longer string${hint}`);
            }
          }
        }
      }
    }
    for (const [name, spec] of Object.entries(def.params)) {
      if (step.hasUnknownKeys) break; // a misspelt `with` already said it
      if (name in step.with || !spec.required || spec.default !== undefined || name === ENDPOINTS_PARAM) continue;
      problems.add(step.origin, `missing parameter "${name}" (${spec.type}) of step type ${step.type}: ${spec.description}`);
    }
  };

  const walk = (nodes: PlanNode[], scope: Omit<Scope, 'index'>) => {
    for (const n of nodes) {
      const here: Scope = { ...scope, index: index.get(n)! };
      if (n.kind === 'step') {
        checkStep(n, here);
        continue;
      }
      if (n.name !== undefined) checkValue(n.name, here, { ...n.origin, field: `${n.origin.field}.name` });
      let itemType: StaticType = null;
      const fe = n.forEach;
      if (Array.isArray(fe.value)) checkValue(fe.value, here, fe.origin);
      else if (typeof fe.value === 'string') {
        const refs = checkValue(fe.value, here, fe.origin);
        if (refs.length !== 1 || refs[0].ref.text !== fe.value) {
          if (refs.length > 0 || !fe.value.includes('${'))
            problems.add(fe.origin, 'for-each takes one reference to a list (e.g. ${vars.members}) or a YAML list');
        } else {
          const t = refs[0].type;
          if (t && t.type !== 'list') problems.add(fe.origin, `${refs[0].ref.text} is ${article(t.type)}; for-each needs a list`);
          else if (t) itemType = { type: t.items ?? 'string' };
        }
      } else problems.add(fe.origin, 'for-each takes one reference to a list (e.g. ${vars.members}) or a YAML list');
      if (scope.items.has(n.as)) problems.add(n.origin, `for-each ${n.id} names its item ${n.as}, like the for-each around it; choose another name with as:`);
      walk(n.steps, { items: new Map([...scope.items, [n.as, itemType]]), enclosing: [...scope.enclosing, n] });
    }
  };
  walk(pb.steps, { items: new Map(), enclosing: [] });
  problems.throwIfAny();
}

function followType(t: StaticType, path: string[], ref: Ref, bad: (m: string) => 'error'): StaticType | 'error' {
  let cur = t;
  for (const seg of path) {
    if (cur === null) return null;
    if (cur.type !== 'member') return bad(`${ref.text}: ${article(cur.type)} has no field ${seg}`);
    const f = MEMBER_FIELDS[seg];
    if (!f)
      return bad(`${ref.text}: a member has no field ${seg}${didYouMean(seg, Object.keys(MEMBER_FIELDS))}; fields: ${Object.keys(MEMBER_FIELDS).join(', ')}`);
    cur = { type: f };
  }
  return cur;
}

/** Why a value of type `got` cannot go into a parameter of type `want` (undefined: it can, maybe after a check at run time). */
function incompatible(want: ParamType, got: StaticType): string | undefined {
  if (got === null || got.type === want) {
    if (got && want === 'list' && (got.items ?? 'string') !== 'string') return `is a list of ${got.items}`;
    return undefined;
  }
  const fromText: ParamType[] = ['url', 'path', 'int', 'bool', 'duration', 'member', 'list', 'secret'];
  if (got.type === 'string' && fromText.includes(want)) return undefined; // checked when the value is known
  // A secret is text: a step's string parameter takes it (the engine keeps it out of the audit log and the output).
  if (want === 'string' && ['url', 'path', 'int', 'bool', 'secret'].includes(got.type)) return undefined;
  return `is ${article(got.type)}`;
}

function article(t: ParamType): string {
  return t === 'int' ? 'an int' : t === 'url' ? 'a url' : `a ${t}`;
}
