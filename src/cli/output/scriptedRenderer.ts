// The scripted view of a run: one plain, timestamped log line per thing that
// happens, for runbooks, CI logs and `tee`. It never asks anything.
import { stepLabel, type ExecNode, type RunView, type StepUi } from '../../playbook/runView.js';

export class ScriptedRenderer implements RunView {
  readonly interactive = false;

  constructor(
    private readonly write: (line: string) => void = (l) => process.stdout.write(`${l}\n`),
    private readonly now: () => Date = () => new Date(),
  ) {}

  log(line: string): void {
    this.write(line);
  }

  private line(text: string): void {
    this.write(`${this.now().toISOString().slice(11, 19)} ${text}`);
  }

  async run(nodes: ExecNode[]): Promise<void> {
    for (const node of nodes) {
      if (node.kind === 'for-each') {
        const { title, nodes: children } = await node.expand();
        this.line(`for-each ${node.id}: ${title}`);
        await this.run(children);
        continue;
      }
      let title = node.title;
      let skipped = false;
      let started = false;
      const start = Date.now();
      const quiet = new ProgressThrottle();
      const begin = () => {
        if (!started) this.line(`step ${stepLabel(node.id, title)}`);
        started = true;
      };
      const ui: StepUi = {
        setTitle: (t) => {
          title = t;
        },
        progress: (text) => {
          begin();
          if (quiet.due(text, this.now().getTime())) this.line(`  ${node.id}: ${text}`);
        },
        event: (kind, message) => {
          begin();
          this.line(`  ${node.id}: ${kind}: ${message}`);
        },
        ask: () => Promise.reject(new Error('a scripted run cannot ask questions')),
        reuseRecorded: (reason) => {
          skipped = true;
          this.line(`skip ${node.id}: ${reason}`);
        },
      };
      try {
        const run = node.run(ui);
        // The title is resolved synchronously at the start of run(); print it then.
        if (!skipped) begin();
        await run;
      } catch (err) {
        begin();
        this.line(`FAILED ${node.id} after ${took(Date.now() - start)}: ${(err as Error).message}`);
        throw err;
      }
      if (!skipped) this.line(`done ${node.id} (${took(Date.now() - start)})`);
    }
  }
}

function took(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${(ms / 1000).toFixed(1)}s`;
}

/**
 * A step's progress in a log: a line when what it says changes (the same words with
 * other numbers do not count), otherwise at most one every PROGRESS_EVERY_MS.
 */
export const PROGRESS_EVERY_MS = 5000;

export class ProgressThrottle {
  private shape: string | undefined;
  private at = -Infinity;

  due(text: string, now: number): boolean {
    const shape = text.replace(/[0-9]+(\.[0-9]+)?/g, '#');
    if (shape === this.shape && now - this.at < PROGRESS_EVERY_MS) return false;
    this.shape = shape;
    this.at = now;
    return true;
  }
}
