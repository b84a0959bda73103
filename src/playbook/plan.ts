// The run laid out before it starts, once the variables are known: for-each
// expanded over its list (when the list does not come from a step's output),
// every step's parameters resolved and checked, and what each step says it
// would change. The dry-run prints it; a real run refuses to start while it has
// problems, so a bad value is found before the first step, not halfway through.
import { Problems } from './errors.js';
import { interpolate, UnresolvedReferenceError, type Lookup, type Ref } from './interpolate.js';
import { needsRunTime, resolveParams, RunScope, stepTitle } from './params.js';
import type { ForEachNode, PlanNode, Playbook, StepNode } from './schema.js';
import type { ParamType } from './stepTypes.js';
import type { StepLibrary } from './validate.js';

export interface PlannedStep {
  kind: 'step';
  depth: number;
  /** position in the run, from 1; null when it depends on a list only known at run time */
  ordinal: number | null;
  /** e.g. `readd[2].add-learner`; `readd[*].add-learner` under a list known only at run time */
  stableId: string;
  node: StepNode;
  title: string;
  /** the resolved parameters, when nothing in them waits for the run */
  params?: Record<string, unknown>;
  /** references only the run can resolve (outputs of earlier steps) */
  runTimeRefs: string[];
  /** the parameters as far as they are known, `<steps.ID.OUTPUT>` for the rest (when `params` is not known) */
  partialParams?: Record<string, unknown>;
  /** the step's describe() lines, when its parameters are known */
  describe: string[];
  /** each parameter's type, for display */
  types: Record<string, ParamType>;
}

export interface PlannedForEach {
  kind: 'for-each';
  depth: number;
  stableId: string;
  node: ForEachNode;
  title: string;
  /** the items, when known before the run */
  items: unknown[] | null;
  /** the for-each expression as written */
  source: string;
}

export type PlanEntry = PlannedStep | PlannedForEach;

export interface RunPlan {
  entries: PlanEntry[];
  /** problems found with the values known before the run (file:line of the parameter) */
  problems: Problems;
}

/** Lays out the run of `pb` with `vars` bound. */
export function planRun(pb: Playbook, library: StepLibrary, vars: Record<string, unknown>, endpoints?: string): RunPlan {
  const problems = new Problems(pb.file);
  const entries: PlanEntry[] = [];
  let ordinal = 0;
  let ordinalsKnown = true;

  const walk = (nodes: PlanNode[], scope: RunScope, prefix: string, depth: number, where: string) => {
    for (const n of nodes) {
      const stableId = `${prefix}${n.id}`;
      if (n.kind === 'step') {
        const def = library[n.type];
        const waits = needsRunTime(
          Object.values(n.with).map((p) => p.value),
          scope,
        ).map((r) => r.text);
        const step: PlannedStep = {
          kind: 'step',
          depth,
          ordinal: ordinalsKnown ? ++ordinal : null,
          stableId,
          node: n,
          title: stepTitle(n, scope),
          runTimeRefs: [...new Set(waits)],
          describe: [],
          types: Object.fromEntries(Object.entries(def.params).map(([k, spec]) => [k, spec.type])),
        };
        if (waits.length === 0) {
          const r = resolveParams(n, def, scope, endpoints);
          if (!r.ok) problems.add(r.origin, `${r.error}${where}`);
          else {
            step.params = r.params;
            try {
              step.describe = def.describe(r.params);
            } catch (err) {
              step.describe = [`(describe failed: ${(err as Error).message})`];
            }
          }
        } else {
          const placeholder = (ref: Ref): Lookup => (scope.has(ref) ? scope.resolve(ref) : { found: true, value: `<${ref.text.slice(2, -1).trim()}>` });
          try {
            step.partialParams = Object.fromEntries(Object.entries(n.with).map(([k, p]) => [k, interpolate(p.value, placeholder)]));
          } catch {
            // shown as written
          }
        }
        entries.push(step);
        continue;
      }
      const source = typeof n.forEach.value === 'string' ? n.forEach.value : JSON.stringify(n.forEach.value);
      let items: unknown[] | null = null;
      if (needsRunTime(n.forEach.value, scope).length === 0) {
        try {
          const v = interpolate(n.forEach.value, scope.resolve);
          if (Array.isArray(v)) items = v;
          else problems.add(n.forEach.origin, `for-each needs a list, ${source} is ${JSON.stringify(v)}${where}`);
        } catch (err) {
          if (!(err instanceof UnresolvedReferenceError)) throw err;
          problems.add(n.forEach.origin, `${err.message}${where}`);
        }
      }
      entries.push({ kind: 'for-each', depth, stableId, node: n, title: stepTitle(n, scope), items, source });
      if (items === null) {
        // Shown once, with `[*]`: the list is only known when the run gets here.
        ordinalsKnown = false;
        walk(n.steps, scope.childOfUnknown(n.as), `${stableId}[*].`, depth + 1, where);
      } else {
        items.forEach((item, i) => walk(n.steps, scope.child(n.as, item), `${stableId}[${i + 1}].`, depth + 1, `${where} (in ${stableId}[${i + 1}])`));
      }
    }
  };
  walk(pb.steps, new RunScope(vars), '', 0, '');
  return { entries, problems };
}
