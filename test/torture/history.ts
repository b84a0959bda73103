// The torture suite's history: one Operation per client call on a register key, with its
// invoke/complete times (monotonic ms) and what the client learned ('ok', 'fail' = surely not
// applied, 'unknown' = may or may not have applied). HistoryRecorder records them from async calls.

export type OpKind = 'read' | 'write' | 'cas';
export type OpResult = 'ok' | 'fail' | 'unknown';

export interface Operation {
  /** Unique within a history. */
  id: number;
  /** Who issued it (a client's sequence of calls does not overlap). */
  client: string;
  kind: OpKind;
  key: string;
  /** write: the value written (undefined = delete); cas: the new value. */
  value?: string;
  /** cas only: the expected old value; undefined = the key is absent. */
  expect?: string;
  /** When the call was issued (ms, monotonic). */
  invoke: number;
  /** When the answer arrived; ignored (treated as +infinity) when result is 'unknown'. */
  complete?: number;
  /**
   * 'ok': it happened (read: `output` is what it saw; cas: the compare held and the value was set).
   * 'fail': it surely did not change anything (cas: the compare did not hold).
   * 'unknown': it may or may not have taken effect, at any time after invoke (timeout, lost connection).
   */
  result: OpResult;
  /** read only: the value seen; null = absent. */
  output?: string | null;
}

/** What a call asks for. */
export type Call =
  { kind: 'read'; key: string } | { kind: 'write'; key: string; value?: string } | { kind: 'cas'; key: string; expect?: string; value?: string };

/** What the call's caller learned. */
export interface Outcome {
  result: OpResult;
  output?: string | null;
}

/** Records the outcome of an invoked call; the first call wins, later ones are ignored (returns false). */
export type Completion = (outcome: Outcome) => boolean;

/** Collects operations as a workload runs. Operations never completed are reported as 'unknown'. */
export class HistoryRecorder {
  private readonly ops: Operation[] = [];
  private readonly done = new Set<number>();

  constructor(private readonly clock: () => number = () => performance.now()) {}

  /** Notes the call as invoked now; call the returned function when its outcome is known. */
  invoke(client: string, call: Call): Completion {
    const op: Operation = { id: this.ops.length, client, ...call, invoke: this.clock(), result: 'unknown' };
    this.ops.push(op);
    return (outcome) => {
      if (this.done.has(op.id)) return false;
      this.done.add(op.id);
      op.result = outcome.result;
      if (outcome.result !== 'unknown') op.complete = this.clock();
      if (outcome.output !== undefined && call.kind === 'read') op.output = outcome.output;
      return true;
    };
  }

  /**
   * Invokes `fn`, records what `interpret` makes of its value, or of its error what `onError`
   * decides ('unknown' unless told otherwise: an error rarely proves nothing happened), and
   * returns fn's value (undefined after an error, which is swallowed).
   */
  async run<T>(
    client: string,
    call: Call,
    fn: () => Promise<T>,
    interpret: (value: T) => Outcome,
    onError: (err: unknown) => 'fail' | 'unknown' = () => 'unknown',
  ): Promise<T | undefined> {
    const complete = this.invoke(client, call);
    let value: T;
    try {
      value = await fn();
    } catch (err) {
      complete({ result: onError(err) });
      return undefined;
    }
    complete(interpret(value));
    return value;
  }

  /** A copy of the history so far, in invoke order; calls still in flight appear as 'unknown'. */
  history(): Operation[] {
    return this.ops.map((op) => ({ ...op }));
  }
}
