// Time a step spent waiting for the operator to answer its questions, kept apart
// from the step's own time: each prompt asked during a step records how long its
// answer took (data.waitedMs); a step's wait is their sum, its own time the rest.
import type { EventRecord } from './types.js';

/** ms of waiting for the operator, by the step's start seq (only steps that asked). */
export function operatorWaits(events: Iterable<EventRecord>): Map<number, number> {
  const out = new Map<number, number>();
  for (const e of events) {
    if (e.kind !== 'prompt' || e.stepSeq === null) continue;
    const waited = (e.data as { waitedMs?: unknown } | null)?.waitedMs;
    if (typeof waited === 'number' && waited > 0) out.set(e.stepSeq, (out.get(e.stepSeq) ?? 0) + waited);
  }
  return out;
}

/** A step's own time: its duration less its wait (never below 0). */
export function ownTime(durationMs: number, waitMs: number): number {
  return Math.max(0, durationMs - waitMs);
}
