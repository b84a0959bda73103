// Variables of type secret (passwords, tokens): where else their values come
// from (the environment), and which variables are never shown.
import { looksSecret } from '../audit/redact.js';
import type { Playbook, VariableDef } from './schema.js';

/** The environment variable a secret variable is read from: LIFEBOAT_SECRET_<NAME>, `-` as `_`. */
export function secretEnvName(name: string): string {
  return `LIFEBOAT_SECRET_${name.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

/** Whether a variable's value is left out of what is printed: a secret, or a name that looks like one (a string called password). */
export function hiddenVariable(def: Pick<VariableDef, 'name' | 'type'>): boolean {
  return def.type === 'secret' || looksSecret(def.name);
}

/** The values of `pb`'s secret variables, for the audit log and the output to replace. */
export function secretValues(pb: Playbook, values: Record<string, unknown>): string[] {
  return pb.variables.filter((d) => d.type === 'secret' && typeof values[d.name] === 'string' && values[d.name] !== '').map((d) => values[d.name] as string);
}
