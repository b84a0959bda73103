// What the event loop is running, written where the stall watchdog's thread can
// read it while the loop is stuck (stallWatchdog.ts): a heartbeat the loop bumps,
// and the code of the span it is in. Two atomic stores per span, so the marks
// stay in the member whether or not a watchdog reads them.

/** The spans marked, by code (index): what a stall is blamed on. */
export const SPANS = ['other', 'fsync', 'apply', 'snapshot'] as const;
export type Span = (typeof SPANS)[number];

const HEARTBEAT = 0;
const SPAN = 1;

export class SpanMarker {
  /** [heartbeat, span code] */
  readonly buffer = new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);
  private readonly cells = new Int32Array(this.buffer);

  /** Runs `fn` marked as `span` (the span before it is marked again after). */
  during<T>(span: Span, fn: () => T): T {
    const before = Atomics.exchange(this.cells, SPAN, SPANS.indexOf(span));
    try {
      return fn();
    } finally {
      Atomics.store(this.cells, SPAN, before);
    }
  }

  beat(): void {
    Atomics.add(this.cells, HEARTBEAT, 1);
  }
}
