// Questions asked while a run's progress is drawn. The renderer drawing it hosts
// them: it draws the question under the current step and stops redrawing over it
// until it is answered, so no prompt (a step's confirmation, a password first needed
// mid-run) is hidden behind the progress or typed into a screen that hides it.

/** What an @inquirer/prompts prompt takes as its context: where to draw, and what cancels it. */
export interface PromptContext {
  output?: NodeJS.WritableStream;
  signal?: AbortSignal;
}

export type Prompt<T> = (context: PromptContext) => Promise<T>;

export interface PromptHost {
  ask<T>(prompt: Prompt<T>): Promise<T>;
}

let host: PromptHost | undefined;

/** `h` hosts every question until the returned function is called (the run's end). */
export function hostPrompts(h: PromptHost): () => void {
  host = h;
  return () => {
    if (host === h) host = undefined;
  };
}

/** Asks `prompt` on the terminal: through the run's renderer while one draws, else directly. */
export function askOnTerminal<T>(prompt: Prompt<T>): Promise<T> {
  return host ? host.ask(prompt) : prompt({});
}
