// The toolkit's own errors, below every layer that raises them: bad input (the
// CLI exits 2) and a refusal by one of our safety checks (exit 3). Each message
// is one line naming what is wrong and what to do.

/** Bad input from the user (malformed ID, endpoint, duration, unreadable file, flag): exit 2. */
export class InputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InputError';
  }
}

/** A refusal by one of our safety checks (exit 3). */
export class RefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RefusedError';
  }
}
