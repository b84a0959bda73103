// The questions asked on a terminal before a run starts (through SessionIo): each
// variable with prompt text or no default (offering the default, checking the answer
// against its type and validation), and why the run is made.
import { confirm, input, password, select } from '@inquirer/prompts';
import type { VariableDef } from '../playbook/schema.js';
import { REASON_QUESTION } from '../playbook/session.js';
import { checkVariableValue, promptText, type VariableAsker } from '../playbook/variables.js';
import { formatValue } from '../playbook/values.js';

export const askVariable: VariableAsker = async (def, current, check) => {
  const message = promptText(def);
  // A secret is typed without echo, and nothing is offered: it has no default.
  if (def.type === 'secret') {
    const answer = await password({
      message,
      validate: async (text) => {
        const c = checkVariableValue(def, text);
        if (!c.ok) return c.error;
        if (text === '') return 'a secret cannot be empty';
        return (await check?.(c.value)) ?? true;
      },
    });
    return answer;
  }
  if (def.type === 'bool') return confirm({ message, default: current === undefined ? false : Boolean(current) });
  if (def.validation.choices) {
    return select({
      message,
      choices: def.validation.choices.map((c) => ({ name: formatValue(c, def.type), value: c })),
      ...(current !== undefined ? { default: current } : {}),
    });
  }
  if (def.type === 'list' && def.items === 'member') return askMembers(def, message, current as unknown[] | undefined, check);
  // An empty list is offered as no default at all: its text, "(none)", is no value to accept.
  const offered = current === undefined || (Array.isArray(current) && current.length === 0) ? undefined : formatValue(current, def.type, def.items);
  const answer = await input({
    message: def.type === 'list' && offered === undefined ? `${message} (empty for none)` : message,
    ...(offered !== undefined ? { default: offered } : {}),
    validate: async (text) => {
      const c = checkAnswer(def, text);
      if (!c.ok) return c.error;
      return (await check?.(c.value)) ?? true;
    },
  });
  const c = checkAnswer(def, answer);
  if (!c.ok) throw new Error(`${def.name}: ${c.error}`); // validate() already refused it
  return c.value;
};

/** A typed answer, checked: for a list, nothing (or "(none)", as lists print) is the empty list. */
export function checkAnswer(def: VariableDef, text: string): ReturnType<typeof checkVariableValue> {
  if (def.type === 'list' && (text.trim() === '' || text.trim() === '(none)')) return checkVariableValue(def, []);
  return checkVariableValue(def, text);
}

/**
 * A list of members: the offered ones kept, other ones entered one per question
 * (until an empty answer), or — an explicit answer, never the Enter key's — nobody.
 */
async function askMembers(
  def: VariableDef,
  message: string,
  current: unknown[] | undefined,
  check?: (value: unknown) => Promise<string | undefined>,
): Promise<unknown[]> {
  const offered = current ?? [];
  const member = { ...def, type: 'member' as const, validation: {} };
  for (let round = 0; round < 100; round++) {
    const nobody = { name: 'Re-add nobody: the new cluster keeps one member', value: 'nobody' };
    const enter = { name: offered.length > 0 ? 'Enter other members' : 'Enter the members, one at a time', value: 'enter' };
    const choices =
      offered.length > 0
        ? [{ name: `Re-add these ${offered.length}: ${formatValue(offered, 'list', 'member')}`, value: 'these' }, enter, nobody]
        : [enter, nobody];
    const how = await select({ message, choices, default: choices[0].value });
    if (how === 'these') {
      const bad = (await check?.(offered)) ?? (checkVariableValue(def, offered).ok ? undefined : 'out of bounds');
      if (!bad) return offered;
      process.stdout.write(`  ${bad}\n`);
      continue;
    }
    if (how === 'nobody') {
      const c = checkVariableValue(def, []);
      if (c.ok) return [];
      process.stdout.write(`  ${c.error}\n`);
      continue;
    }
    const out: unknown[] = [];
    for (let i = 0; i < 100; i++) {
      const text = await input({
        message: `${message} — member ${out.length + 1} as name=peerURL,clientURL[,dataDir] (empty to finish)`,
        validate: async (t) => {
          if (t.trim() === '') {
            if (out.length === 0) return true; // back to the choice
            const c = checkVariableValue(def, out);
            return c.ok ? true : c.error;
          }
          const c = checkVariableValue(member, t);
          if (!c.ok) return c.error;
          return (await check?.([c.value])) ?? true;
        },
      });
      if (text.trim() === '') break;
      const c = checkVariableValue(member, text);
      if (c.ok) out.push(c.value);
    }
    if (out.length > 0) return out;
  }
  throw new Error(`${def.name}: no answer after 100 rounds`);
}

export async function askReason(): Promise<string> {
  return input({ message: REASON_QUESTION, validate: (t) => (t.trim() === '' ? 'a reason is required: it is the first thing a reviewer asks' : true) });
}
