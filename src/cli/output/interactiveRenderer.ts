// The interactive view of a run (a RunView): a listr2 task list of every step with
// its live progress and notes, for-each groups as subtasks, and confirmations asked
// inside the list (an inquirer adapter, so the prompt does not fight the redraws).
import { confirm } from '@inquirer/prompts';
import { Listr, ListrPromptAdapter, ListrTaskEventType, type ListrTask } from 'listr2';
import { stepLabel, type ExecNode, type RunView, type StepUi } from '../../playbook/runView.js';

/** Draws an @inquirer/prompts confirm inside a listr2 task. */
class ConfirmAdapter extends ListrPromptAdapter {
  async run<T = boolean>(question: string, signal: AbortSignal): Promise<T> {
    this.reportStarted();
    try {
      const answer = await confirm({ message: question, default: false }, { output: this.wrapper.stdout(ListrTaskEventType.PROMPT), signal });
      this.reportCompleted();
      return answer as T;
    } catch (err) {
      this.reportFailed();
      throw err;
    }
  }
}

export class InteractiveRenderer implements RunView {
  readonly interactive = true;

  constructor(private readonly write: (line: string) => void = (l) => process.stdout.write(`${l}\n`)) {}

  log(line: string): void {
    this.write(line);
  }

  async run(nodes: ExecNode[]): Promise<void> {
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
          ask: (question, signal) => task.prompt(ConfirmAdapter).run<boolean>(question, signal),
          // A step done in an earlier attempt (a resumed run) is done, not a warning:
          // listr2 draws skipped tasks with ⚠, so it completes with ✔ and says so.
          reuseRecorded: (reason) => {
            task.title = `${label} (${reason}: skipped, its recorded outputs reused)`;
          },
        };
        await node.run(ui);
      },
    };
  }
}
