// What the event loop is running, written where the stall watchdog's thread can
// read it while the loop is stuck (stallWatchdog.ts): a heartbeat the loop bumps,
// and the code of the span it is in. Two atomic stores per span, so the marks
// stay in the member whether or not a watchdog reads them.

/** The spans marked, by code (index): what a stall is blamed on. */
export const SPANS = ['other', 'fsync', 'apply', 'snapshot', 'commit', 'raft'] as const;
export type Span = (typeof SPANS)[number];

const HEARTBEAT = 0;
const SPAN = 1;

export class SpanMarker {
  /** [heartbeat, span code] */
  readonly buffer = new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT);
  private readonly cells = new Int32Array(this.buffer);
  private longest: { span: Span; ms: number } = { span: 'other', ms: 0 };
  /** ms spent in the spans nested in the one running (its own time is the rest). */
  private nestedMs = 0;

  /** Runs `fn` marked as `span` (the span before it is marked again after). */
  during<T>(span: Span, fn: () => T): T {
    const before = Atomics.exchange(this.cells, SPAN, SPANS.indexOf(span));
    const start = performance.now();
    const outerNested = this.nestedMs;
    this.nestedMs = 0;
    try {
      return fn();
    } finally {
      Atomics.store(this.cells, SPAN, before);
      const ms = performance.now() - start;
      // A span is blamed for its own time: an fsync inside a Raft step is the fsync's.
      const own = ms - this.nestedMs;
      this.nestedMs = outerNested + ms;
      if (own > this.longest.ms) this.longest = { span, ms: own };
    }
  }

  /** The span with the longest own time since the last call (the loop's blame for a stall it finds late, while no worker watches). */
  takeLongest(): { span: Span; ms: number } {
    const l = this.longest;
    this.longest = { span: 'other', ms: 0 };
    return l;
  }

  beat(): void {
    Atomics.add(this.cells, HEARTBEAT, 1);
  }
}
