// The run checked as a whole before its first step: each step type's preflight
// (stepTypes.ts) gets the parameters the plan knows — a member's certificate is
// checked against its URLs when the run is validated, not when the run reaches
// that member, after the cluster was already rebuilt.
import { referencesIn } from './interpolate.js';
import type { RunPlan } from './plan.js';
import type { StepDefinition } from './stepTypes.js';
import type { StepLibrary } from './validate.js';
import { convertValue } from './values.js';

/** The first problem a step's preflight finds in `plan`, in run order; undefined when there is none. */
export function preflightProblem(plan: RunPlan, library: StepLibrary): string | undefined {
  for (const e of plan.entries) {
    if (e.kind !== 'step') continue;
    const def = library[e.node.type];
    if (!def?.preflight) continue;
    const problem = def.preflight(e.params ?? knownParams(e.partialParams ?? {}, e.node.with, e.runTimeRefs, def.params));
    if (problem) return problem;
  }
  return undefined;
}

/** The parameters that wait for no step's output, converted to their types, defaults filled in. */
function knownParams(
  partial: Record<string, unknown>,
  written: Record<string, { value: unknown }>,
  runTimeRefs: string[],
  specs: StepDefinition['params'],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(specs)) {
    if (name in written) {
      const waits = referencesIn(written[name].value, () => {}).some((r) => runTimeRefs.includes(r.text));
      if (waits || partial[name] === undefined) continue;
      const c = convertValue(partial[name], spec.type);
      if (c.ok) out[name] = c.value;
    } else if (spec.default !== undefined) {
      const c = convertValue(spec.default, spec.type);
      if (c.ok) out[name] = c.value;
    }
  }
  return out;
}
