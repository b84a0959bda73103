// The step library a run uses: the engine's own steps (confirm, note), the
// cluster steps of steps/index.ts, and — for tests only — step types from the
// module named by LIFEBOAT_TEST_STEPS (which may add types, never replace one).
// This is the one place LIFEBOAT_TEST_STEPS is read (listed in common/failpoint.ts).
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { BUILTIN_STEPS } from './builtinSteps.js';
import { STEP_LIBRARY } from './steps/index.js';
import type { StepLibrary } from './validate.js';

/** The environment variable that names a module exporting extra step types (`STEP_LIBRARY` or `TEST_STEPS`): tests only. */
export const TEST_STEPS_ENV = 'LIFEBOAT_TEST_STEPS';

export interface LoadedLibrary {
  library: StepLibrary;
  /** step types added from LIFEBOAT_TEST_STEPS, and the module, when it is set */
  testSteps?: { module: string; types: string[] };
}

/** `{...BUILTIN_STEPS, ...STEP_LIBRARY}`, plus LIFEBOAT_TEST_STEPS when set. */
export async function loadStepLibrary(env: NodeJS.ProcessEnv = process.env): Promise<LoadedLibrary> {
  const library: StepLibrary = { ...BUILTIN_STEPS, ...STEP_LIBRARY };
  const extra = env[TEST_STEPS_ENV];
  if (!extra) return { library };
  const module = path.resolve(extra);
  const mod = (await import(pathToFileURL(module).href)) as { TEST_STEPS?: StepLibrary; STEP_LIBRARY?: StepLibrary };
  const steps = mod.TEST_STEPS ?? mod.STEP_LIBRARY;
  if (!steps) throw new Error(`${TEST_STEPS_ENV}=${extra}: the module exports no TEST_STEPS`);
  for (const [type, def] of Object.entries(steps)) {
    if (type in library) throw new Error(`${TEST_STEPS_ENV}=${extra}: step type ${type} already exists; test steps may only add types`);
    library[type] = def;
  }
  return { library, testSteps: { module, types: Object.keys(steps) } };
}
