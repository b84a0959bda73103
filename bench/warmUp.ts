// Every system gets the same warm-up before its first measured load: 16 clients of
// puts for WARMUP_SECONDS. A Lifeboat member's put path runs in V8's interpreter
// and baseline tier until each function has run some thousands of times: at one
// client (about 250 puts/s here) that took the whole 8-10 s round after a 1 s
// warm-up, which measured the JIT's tier-up rather than the member. A member that
// has served for a minute is past it; so is etcd, which gets the same load.
import { runLoad, type LoadSpec } from './loadGenerator.js';

export const WARMUP_SECONDS = 15;

/** 16 clients of `spec.op` for `seconds` (none at 0), before the first measured load. */
export async function warmUp(spec: Omit<LoadSpec, 'clients' | 'durationMs'>, seconds: number): Promise<void> {
  if (seconds > 0) await runLoad({ ...spec, clients: 16, durationMs: seconds * 1000 });
}
