// The two steps the engine itself provides: `confirm` (ask the operator; no
// means the run stops, refused) and `note` (write a line into the run's
// timeline and onto the screen). The cluster steps live in steps/.
import { RefusedError } from '../common/errors.js';
import type { StepDefinition } from './stepTypes.js';

export const confirmStep: StepDefinition = {
  type: 'confirm',
  description: 'Ask the operator to confirm before going on; a "no" stops the run (refused, exit 3). Scripted runs need --yes.',
  params: {
    message: { type: 'string', required: true, description: 'the question, naming what the next steps change' },
  },
  describe: (p) => [`would ask: ${String(p.message)} (no terminal: needs --yes)`],
  async run(p, ctx) {
    const question = String(p.message);
    if (!(await ctx.confirm(question))) throw new RefusedError(`the operator answered no to "${question}"`);
    return { confirmed: true };
  },
};

export const noteStep: StepDefinition = {
  type: 'note',
  description: 'Record a note in the audit timeline and print it.',
  params: {
    message: { type: 'string', required: true, description: 'the note' },
  },
  describe: (p) => [`would note: ${String(p.message)}`],
  run(p, ctx) {
    ctx.event('note', String(p.message));
    return Promise.resolve({});
  },
};

export const BUILTIN_STEPS: Record<string, StepDefinition> = {
  confirm: confirmStep,
  note: noteStep,
};
