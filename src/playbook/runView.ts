// What the engine hands a renderer: the run as a list of steps and for-each
// groups (expanded when the run reaches them), each step run through a small
// UI handle. The scripted renderer prints log lines; the interactive one is a
// listr2 task list with prompts.

export interface StepUi {
  /** the step's title once its references are resolved */
  setTitle(title: string): void;
  /** a progress line (the latest is shown live on a terminal) */
  progress(text: string): void;
  /** a timeline event worth showing: a note, a warning, an override */
  event(kind: string, message: string): void;
  /** a yes/no question on the terminal; only interactive views can ask */
  ask(question: string, signal: AbortSignal): Promise<boolean>;
  /** the step is not run: it completed in an earlier attempt, its recorded outputs are reused */
  reuseRecorded(reason: string): void;
}

export interface ExecStep {
  kind: 'step';
  /** the stable step id, e.g. readd[2].add-learner */
  id: string;
  title: string;
  run(ui: StepUi): Promise<void>;
}

export interface ExecForEach {
  kind: 'for-each';
  id: string;
  title: string;
  /** resolves the list (it may come from an earlier step) into one group of steps per item */
  expand(): Promise<{ title: string; nodes: ExecNode[] }>;
}

export type ExecNode = ExecStep | ExecForEach;

export interface RunView {
  /** whether ask() works (a terminal) */
  readonly interactive: boolean;
  /** a line outside the step list: the header, the summary */
  log(line: string): void;
  /** runs the nodes in order; rejects with the first step's error */
  run(nodes: ExecNode[]): Promise<void>;
}

/** `id: title`, or just the id when the step has no title of its own (its title is its type, and its id too). */
export function stepLabel(id: string, title: string): string {
  return title === id || id.endsWith(`.${title}`) ? id : `${id}: ${title}`;
}
