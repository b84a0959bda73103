// A monotonic clock in milliseconds for deadlines and round trips. Not
// `performance.now()`: the first touch of that global loads perf_hooks and its
// timing modules, about 0.3 MiB of a member that needs none of them.

/** Milliseconds from an arbitrary start; never goes back. */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
