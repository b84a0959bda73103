// Turning a step's `with:` into the values its run() receives: references
// resolved in the step's scope (variables, for-each items, outputs of earlier
// steps), defaults filled in, each value converted to its parameter's type.
import { follow, interpolate, UnresolvedReferenceError, referencesIn, type Lookup, type Ref } from './interpolate.js';
import type { Origin, StepNode } from './schema.js';
import type { StepDefinition } from './stepTypes.js';
import { ENDPOINTS_PARAM } from './validate.js';
import { convertValue } from './values.js';

/** What references can see at one point of a run. */
export class RunScope {
  private readonly outputs = new Map<string, Record<string, unknown>>();

  constructor(
    readonly vars: Record<string, unknown>,
    private readonly parent?: RunScope,
    private readonly item?: { name: string; value: unknown; unknown?: boolean },
  ) {}

  /** The scope of one for-each iteration. */
  child(name: string, value: unknown): RunScope {
    return new RunScope(this.vars, this, { name, value });
  }

  /** The scope of the steps of a for-each whose items are only known at run time (dry-run). */
  childOfUnknown(name: string): RunScope {
    return new RunScope(this.vars, this, { name, value: undefined, unknown: true });
  }

  setOutputs(stepId: string, outputs: Record<string, unknown>): void {
    this.outputs.set(stepId, outputs);
  }

  private findOutputs(stepId: string): Record<string, unknown> | undefined {
    return this.outputs.get(stepId) ?? this.parent?.findOutputs(stepId);
  }

  private findItem(name: string): { value: unknown; unknown?: boolean } | undefined {
    if (this.item?.name === name) return this.item;
    return this.parent?.findItem(name);
  }

  /** Whether `ref` can be resolved now. */
  has(ref: Ref): boolean {
    return this.resolve(ref).found;
  }

  resolve = (ref: Ref): Lookup => {
    if (ref.root === 'vars') {
      const name = ref.path[0];
      if (!(name in this.vars)) return { found: false, error: `${ref.text}: no variable ${name}` };
      return follow(this.vars[name], ref.path.slice(1), `vars.${name}`);
    }
    if (ref.root === 'steps') {
      const id = ref.path[0];
      const out = this.findOutputs(id);
      if (!out) return { found: false, error: `${ref.text}: step ${id} has not run` };
      const r = follow(out, ref.path.slice(1), `steps.${id}`);
      return r.found ? r : { found: false, error: `${ref.text}: ${r.error.replace(/ has no field /, ' returned no output ')}` };
    }
    const item = this.findItem(ref.root);
    if (!item) return { found: false, error: `${ref.text}: ${ref.root} is not in scope` };
    if (item.unknown) return { found: false, error: `${ref.text}: known at run time` };
    return follow(item.value, ref.path, ref.root);
  };
}

export type Resolved = { ok: true; params: Record<string, unknown> } | { ok: false; origin: Origin; error: string };

/**
 * The parameters `step` runs with in `scope`. `endpoints` fills a parameter named
 * endpoints that the playbook leaves out (the run's --endpoints).
 */
export function resolveParams(step: StepNode, def: StepDefinition, scope: RunScope, endpoints?: string): Resolved {
  const params: Record<string, unknown> = {};
  for (const [name, p] of Object.entries(step.with)) {
    const spec = def.params[name];
    if (!spec) return { ok: false, origin: p.origin, error: `step type ${step.type} has no parameter ${name}` };
    let value: unknown;
    try {
      value = interpolate(p.value, scope.resolve);
    } catch (err) {
      if (err instanceof UnresolvedReferenceError) return { ok: false, origin: p.origin, error: err.message };
      throw err;
    }
    if (value === undefined) continue; // an unset optional field (a member's dataDir): as if not given
    const c = convertValue(value, spec.type);
    if (!c.ok) return { ok: false, origin: p.origin, error: `${spec.type} parameter: ${c.error}` };
    params[name] = c.value;
  }
  for (const [name, spec] of Object.entries(def.params)) {
    if (name in params) continue;
    const fallback = spec.default !== undefined ? spec.default : name === ENDPOINTS_PARAM ? endpoints : undefined;
    if (fallback === undefined) {
      if (spec.required) return { ok: false, origin: step.origin, error: `missing parameter ${name} (${spec.type}): ${spec.description}` };
      continue;
    }
    const c = convertValue(fallback, spec.type);
    if (!c.ok) return { ok: false, origin: step.origin, error: `the default of parameter ${name}: ${c.error}` };
    params[name] = c.value;
  }
  return { ok: true, params };
}

/** The step's title: its `name:` with references resolved (as far as they can be), else its type. */
export function stepTitle(step: { name?: string; type?: string; id: string }, scope: RunScope): string {
  if (step.name === undefined) return step.type ?? step.id;
  try {
    const v = interpolate(step.name, (ref) => (scope.has(ref) ? scope.resolve(ref) : { found: true, value: ref.text }));
    return typeof v === 'string' ? v : step.name;
  } catch {
    return step.name;
  }
}

/** Whether `value` refers to anything `scope` cannot resolve yet (a step output, an item of such a list). */
export function needsRunTime(value: unknown, scope: RunScope): Ref[] {
  return referencesIn(value, () => {}).filter((r) => !scope.has(r));
}
