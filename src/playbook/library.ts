// The step library a run uses: the engine's own steps (confirm, note), the
// cluster steps of steps/index.ts, and any added through addStepTypes (the tests'
// fake steps: their entry point adds them before the CLI runs). No environment
// variable or file adds a type: a release run uses the built-in types only.
import { BUILTIN_STEPS } from './builtinSteps.js';
import { STEP_LIBRARY } from './steps/index.js';
import type { StepLibrary } from './validate.js';

export interface LoadedLibrary {
  library: StepLibrary;
  /** the step types added through addStepTypes, when any were (a run records a warning naming them) */
  added?: string[];
}

const added: StepLibrary = {};

/** Adds step types to every later run's library; a type that already exists (built-in or added) is refused, never replaced. */
export function addStepTypes(types: StepLibrary): void {
  for (const type of Object.keys(types)) {
    if (type in BUILTIN_STEPS || type in STEP_LIBRARY || type in added)
      throw new Error(`step type ${type} already exists; added step types may only add types`);
  }
  Object.assign(added, types);
}

/** `{...BUILTIN_STEPS, ...STEP_LIBRARY}`, plus the types addStepTypes added. */
export function loadStepLibrary(): LoadedLibrary {
  const library: StepLibrary = { ...BUILTIN_STEPS, ...STEP_LIBRARY, ...added };
  const types = Object.keys(added);
  return types.length > 0 ? { library, added: types } : { library };
}
