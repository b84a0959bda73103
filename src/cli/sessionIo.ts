// The terminal side of a playbook session (SessionIo): the run's view (a listr2
// task list, or log lines on stdout — stderr with -w json), the questions asked
// before a run, and Ctrl-C (the first stops after the current step, a second exits 1).
import type { SessionIo } from '../playbook/session.js';
import { EXIT } from './exitCodes.js';
import { InteractiveRenderer } from './output/interactiveRenderer.js';
import { ScriptedRenderer } from './output/scriptedRenderer.js';
import { askReason, askVariable } from './prompts.js';

/** The process's terminal; with `json`, log lines go to stderr (stdout carries the JSON result). */
export function terminalSessionIo(opts: { json?: boolean } = {}): SessionIo {
  const write = opts.json ? (l: string) => process.stderr.write(`${l}\n`) : (l: string) => process.stdout.write(`${l}\n`);
  return {
    interactive: !!process.stdin.isTTY && !!process.stdout.isTTY,
    view: (interactive) => (interactive ? new InteractiveRenderer(write) : new ScriptedRenderer(write)),
    askVariable,
    askReason,
    withInterrupt,
  };
}

/** Ctrl-C during a run: abort its signal (the current step sees it); a second one exits at once. */
async function withInterrupt<T>(fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const onInt = () => {
    if (controller.signal.aborted) {
      process.stderr.write('Interrupted again: exiting now; the run stays resumable.\n');
      process.exit(EXIT.FAILURE);
    }
    process.stderr.write('Interrupting: the run stops after the current step (Ctrl-C again to exit now).\n');
    controller.abort();
  };
  process.on('SIGINT', onInt);
  try {
    return await fn(controller.signal);
  } finally {
    process.off('SIGINT', onInt);
  }
}
