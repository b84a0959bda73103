// A chunked producer (a snapshot read from its file) and a consumer that waits
// for its socket to drain after each write, overlapped: the next chunk is asked
// for as soon as one is handed out, so its read and hashing run while the
// consumer waits, not after (a learner's snapshot was sent about half idle).

/**
 * `source`'s items in order, each next one asked for as soon as one is handed
 * out: the producer runs at most one item ahead. Leaving early ends `source`
 * (once its step under way is over).
 */
export async function* readAhead<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
  const it = source[Symbol.asyncIterator]();
  // A step that fails while the consumer waits on its socket is nobody's yet: marked
  // handled at once, or Node ends the process on an unhandled rejection. Its error
  // still reaches the consumer through the await below.
  const ask = () => {
    const p = it.next();
    p.catch(() => undefined);
    return p;
  };
  let next: Promise<IteratorResult<T>> | undefined = ask();
  try {
    for (;;) {
      const r = await next;
      next = undefined;
      if (r.done) return;
      next = ask();
      yield r.value;
    }
  } finally {
    // Left early (or the step failed): what the step under way gives is not wanted.
    if (next) await it.return?.(undefined)?.catch(() => undefined);
  }
}
