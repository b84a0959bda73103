// How the playbook engine says no: every problem in a file at once, each as one
// line naming file:line:col and the field; and the ways a run can stop.
import { InputError, RefusedError } from '../common/errors.js';
import type { Origin } from './schema.js';

export interface Problem {
  file: string;
  line: number;
  col: number;
  /** the field path, e.g. `steps[2].with.url` */
  field: string;
  message: string;
}

export function formatProblem(p: Problem): string {
  return `${p.file}:${p.line}:${p.col}: ${p.field}: ${p.message}`;
}

/** Collects problems while a file (or a set of values) is checked. */
export class Problems {
  readonly list: Problem[] = [];
  constructor(readonly file: string) {}

  add(origin: Pick<Origin, 'line' | 'col' | 'field'>, message: string): void {
    this.list.push({ file: this.file, line: origin.line, col: origin.col, field: origin.field, message });
  }

  get empty(): boolean {
    return this.list.length === 0;
  }

  /** Throws PlaybookInvalidError if anything was found (in file order). */
  throwIfAny(): void {
    if (!this.empty) throw new PlaybookInvalidError([...this.list].sort((a, b) => a.line - b.line || a.col - b.col));
  }
}

/**
 * The playbook (or the variables given for it) is wrong: nothing was run. Exit 2.
 * `message` is the first problem (and a count); `lines()` has one line per problem.
 */
export class PlaybookInvalidError extends InputError {
  constructor(readonly problems: Problem[]) {
    const first = formatProblem(problems[0]);
    super(problems.length === 1 ? first : `${first} (and ${problems.length - 1} more problem${problems.length > 2 ? 's' : ''})`);
    this.name = 'PlaybookInvalidError';
  }

  lines(): string[] {
    return this.problems.map(formatProblem);
  }
}

/** A step asked for a confirmation nobody can give (no terminal, no --yes), or the operator said no. Exit 3. */
export class NotConfirmedError extends RefusedError {
  constructor(
    message: string,
    readonly stepId: string,
  ) {
    super(message);
    this.name = 'NotConfirmedError';
  }
}

/** The run was interrupted (Ctrl-C): resumable. */
export class RunInterruptedError extends Error {
  constructor(message = 'interrupted by the operator') {
    super(message);
    this.name = 'RunInterruptedError';
  }
}
