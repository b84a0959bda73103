// A broken invariant stops the process loudly instead of corrupting data.
export class InvariantError extends Error {
  constructor(message: string) {
    super(`raft invariant violated: ${message}`);
    this.name = 'InvariantError';
  }
}

export function invariant(cond: unknown, message: string): asserts cond {
  if (!cond) throw new InvariantError(message);
}
