// The questions asked on a terminal before a run starts (through SessionIo): each
// variable with prompt text or no default (offering the default, checking the answer
// against its type and validation), and why the run is made.
import { confirm, input, select } from '@inquirer/prompts';
import type { VariableDef } from '../playbook/schema.js';
import { REASON_QUESTION } from '../playbook/session.js';
import { checkVariableValue, promptText, type VariableAsker } from '../playbook/variables.js';
import { formatValue } from '../playbook/values.js';

export const askVariable: VariableAsker = async (def, current) => {
  const message = promptText(def);
  if (def.type === 'bool') return confirm({ message, default: current === undefined ? false : Boolean(current) });
  if (def.validation.choices) {
    return select({
      message,
      choices: def.validation.choices.map((c) => ({ name: formatValue(c, def.type), value: c })),
      ...(current !== undefined ? { default: current } : {}),
    });
  }
  if (def.type === 'list' && def.items === 'member') return askMembers(def, message, current as unknown[] | undefined);
  // An empty list is offered as no default at all: its text, "(none)", is no value to accept.
  const offered = current === undefined || (Array.isArray(current) && current.length === 0) ? undefined : formatValue(current, def.type, def.items);
  const answer = await input({
    message: def.type === 'list' && offered === undefined ? `${message} (empty for none)` : message,
    ...(offered !== undefined ? { default: offered } : {}),
    validate: (text) => {
      const c = checkAnswer(def, text);
      return c.ok ? true : c.error;
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

/** A list of members, one per question, until an empty answer. */
async function askMembers(def: VariableDef, message: string, current: unknown[] | undefined): Promise<unknown[]> {
  if (current !== undefined) {
    const keep = await confirm({ message: `${message}: ${formatValue(current, 'list', 'member')}. Use these?`, default: true });
    if (keep) return current;
  }
  const out: unknown[] = [];
  for (;;) {
    const text = await input({
      message: `${message} — member ${out.length + 1} as name=peerURL,clientURL[,dataDir] (empty to finish)`,
      validate: (t) => {
        if (t.trim() === '') {
          const c = checkVariableValue(def, out);
          return c.ok ? true : c.error;
        }
        const c = checkVariableValue({ ...def, type: 'member', validation: {} }, t);
        return c.ok ? true : c.error;
      },
    });
    if (text.trim() === '') return out;
    const c = checkVariableValue({ ...def, type: 'member', validation: {} }, text);
    if (c.ok) out.push(c.value);
  }
}

export async function askReason(): Promise<string> {
  return input({ message: REASON_QUESTION, validate: (t) => (t.trim() === '' ? 'a reason is required: it is the first thing a reviewer asks' : true) });
}
