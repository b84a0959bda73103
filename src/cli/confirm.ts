// Asking before a dangerous request: on a terminal, a yes/no question that names
// what will happen; without one, a refusal (exit 3) naming the flag that confirms.
import { confirm } from '@inquirer/prompts';
import { RefusedError } from '../common/errors.js';

export interface DangerousStep {
  /** what will be done, as a verb phrase: "remove member 8e9e05c52164694d (infra1)" */
  action: string;
  /** why it is dangerous; empty means routine (no question asked) */
  reasons: string[];
  /** --yes was given */
  yes: boolean;
  /** the confirming flag's name, for the refusal message */
  flag?: string;
}

export function interactive(): boolean {
  return !!process.stdin.isTTY && !!process.stdout.isTTY;
}

/** Returns when the step may go ahead; throws RefusedError otherwise. */
export async function confirmDangerous(step: DangerousStep, isInteractive = interactive()): Promise<void> {
  if (step.reasons.length === 0 || step.yes) return;
  const flag = step.flag ?? '--yes';
  const why = step.reasons.join('; ');
  if (!isInteractive) {
    throw new RefusedError(`refusing to ${step.action}: ${why}; re-run with ${flag} to confirm`);
  }
  let ok = false;
  try {
    ok = await confirm({ message: `About to ${step.action}: ${why}. Go ahead?`, default: false });
  } catch (err) {
    if ((err as Error).name !== 'ExitPromptError' && (err as Error).name !== 'AbortPromptError') throw err;
  }
  if (!ok) throw new RefusedError(`did not ${step.action}: not confirmed; nothing changed`);
}
