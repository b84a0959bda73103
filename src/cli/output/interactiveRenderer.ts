// The interactive view of a run (a RunView): a listr2 task list of every step with
// its live progress and notes, for-each groups as subtasks, and every question asked
// during the run (a step's confirmation, a password first needed mid-run) drawn
// inside the list under the step that asks (an inquirer adapter, so the prompt does
// not fight the redraws: listr2 draws it and leaves it on screen until answered).
import { confirm } from '@inquirer/prompts';
import { Listr, ListrPromptAdapter, ListrTaskEventType, type ListrTask, type ListrTaskWrapper } from 'listr2';
import { stepLabel, type ExecNode, type RunView, type StepUi } from '../../playbook/runView.js';
import { hostPrompts, type Prompt, type PromptHost } from '../terminalPrompt.js';

/** Draws an @inquirer/prompts prompt inside a listr2 task. */
class InquirerAdapter extends ListrPromptAdapter {
  async run<T>(prompt: Prompt<T>, signal?: AbortSignal): Promise<T> {
    this.reportStarted();
    try {
      const answer = await prompt({ output: this.wrapper.stdout(ListrTaskEventType.PROMPT), ...(signal ? { signal } : {}) });
      this.reportCompleted();
      return answer;
    } catch (err) {
      this.reportFailed();
      throw err;
    }
  }
}

type Task = ListrTaskWrapper<unknown, never, never>;

export class InteractiveRenderer implements RunView, PromptHost {
  readonly interactive = true;
  /** the step running now: a question asked meanwhile is drawn under it */
  private current: Task | undefined;
  /** questions are asked one at a time (listr2 draws one prompt) */
  private asking: Promise<unknown> = Promise.resolve();

  constructor(private readonly write: (line: string) => void = (l) => process.stdout.write(`${l}\n`)) {}

  log(line: string): void {
    this.write(line);
  }

  ask<T>(prompt: Prompt<T>, signal?: AbortSignal): Promise<T> {
    const asked = this.asking.then(() => (this.current ? this.current.prompt(InquirerAdapter).run<T>(prompt, signal) : prompt(signal ? { signal } : {})));
    this.asking = asked.catch(() => undefined);
    return asked;
  }

  async run(nodes: ExecNode[]): Promise<void> {
    const unhost = hostPrompts(this);
    try {
      await this.list(nodes);
    } finally {
      unhost();
    }
  }

  private async list(nodes: ExecNode[]): Promise<void> {
    await new Listr(
      nodes.map((n) => this.task(n)),
      {
        concurrent: false,
        exitOnError: true,
        registerSignalListeners: false,
        renderer: 'default',
        fallbackRenderer: 'simple',
        rendererOptions: { collapseSubtasks: false, collapseSkips: false, showSkipMessage: true, showErrorMessage: true },
      },
    ).run();
  }

  private task(node: ExecNode): ListrTask {
    if (node.kind === 'for-each') {
      return {
        title: `${node.id}: ${node.title}`,
        task: async (_ctx, task) => {
          const { title, nodes } = await node.expand();
          task.title = `${node.id}: ${title}`;
          return task.newListr(
            nodes.map((n) => this.task(n)),
            { concurrent: false, exitOnError: true },
          );
        },
      };
    }
    return {
      title: stepLabel(node.id, node.title),
      rendererOptions: { persistentOutput: true, outputBar: 5 },
      task: async (_ctx, task) => {
        this.current = task;
        let label = stepLabel(node.id, node.title);
        const ui: StepUi = {
          setTitle: (t) => {
            label = stepLabel(node.id, t);
            task.title = label;
          },
          // listr2 keeps the last lines written (outputBar) and shows them after the step ends.
          progress: (text) => {
            task.output = text;
          },
          event: (kind, message) => {
            task.output = `${kind}: ${message}`;
          },
          ask: (question, signal) => this.ask((context) => confirm({ message: question, default: false }, context), signal),
          // A step done in an earlier attempt (a resumed run) is done, not a warning:
          // listr2 draws skipped tasks with ⚠, so it completes with ✔ and says so.
          reuseRecorded: (reason) => {
            task.title = `${label} (${reason}: skipped, its recorded outputs reused)`;
          },
        };
        try {
          await node.run(ui);
        } finally {
          this.current = undefined;
        }
      },
    };
  }
}
