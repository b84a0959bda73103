// One load point between two scrapes of every member's /metrics and a look at the
// members' logs: what they went through meanwhile (bench cluster, bench puts).
import type { LoadResult } from './loadGenerator.js';
import { leaderChanges, loopDelay, scrapeAll, type LoopDelay } from './memberMetrics.js';
import { summarizeStalls, type StallRecord, type StallSummary } from './stalls.js';
import type { BenchCluster } from './systems.js';

/** What the members went through during one load point, from their /metrics and logs. */
export interface Observed {
  /** event-loop delay per member over the load point (Lifeboat) */
  loop: (LoopDelay | undefined)[];
  /** leader changes the members saw during it: the most any member counted */
  leaderChanges: number;
  stalls: StallSummary;
  stallRecords: StallRecord[];
}

function byMember(stalls: StallRecord[]): Map<string, StallRecord[]> {
  const out = new Map<string, StallRecord[]>();
  for (const s of stalls) out.set(s.member, [...(out.get(s.member) ?? []), s]);
  return out;
}

/** Runs one load point between two scrapes of every member (the first also starts the delay histogram over). */
export async function observed(sys: BenchCluster, load: () => Promise<LoadResult>): Promise<{ r: LoadResult; seen: Observed }> {
  const urls = sys.metricsUrls();
  const before = await scrapeAll(urls, sys.tls);
  // A member's log only grows: its stalls during the load are those past its count before.
  const logged = new Map([...byMember(sys.stalls())].map(([m, s]) => [m, s.length]));
  const r = await load();
  const after = await scrapeAll(urls, sys.tls);
  const stallRecords = [...byMember(sys.stalls())].flatMap(([m, s]) => s.slice(logged.get(m) ?? 0));
  const changes = after.map((a, i) => leaderChanges(a) - leaderChanges(before[i])).filter(Number.isFinite);
  return {
    r,
    seen: {
      loop: after.map(loopDelay),
      leaderChanges: changes.length ? Math.max(...changes) : NaN,
      stalls: summarizeStalls(stallRecords),
      stallRecords,
    },
  };
}

export const fmtLoop = (loop: (LoopDelay | undefined)[]) =>
  loop
    .map((d, i) => (d ? `m${i + 1} p50 ${d.p50Ms.toFixed(1)} p90 ${d.p90Ms.toFixed(1)} p99 ${d.p99Ms.toFixed(1)} max ${d.maxMs.toFixed(0)} ms` : `m${i + 1} —`))
    .join('; ');
