// The stalls a Lifeboat member logged during a load point ("event loop stalled",
// src/server/stallWatchdog.ts), summed up: by cause, how many of them are named,
// and the longest one spent on our own CPU.

export interface StallRecord {
  /** member name */
  member: string;
  ms: number;
  cause: string;
  cpuMs: number;
}

/** A stall with under this share of its length in CPU time: the machine did not run us (or a blocking call). */
const OFF_CPU_SHARE = 0.5;

/** The stall records in a member's log lines. */
export function stallsInLog(member: string, lines: readonly string[]): StallRecord[] {
  const out: StallRecord[] = [];
  for (const line of lines) {
    if (!line.includes('"event loop stalled"')) continue;
    try {
      const r = JSON.parse(line) as { ms: number; cause: string; cpuMs: number };
      out.push({ member, ms: r.ms, cause: r.cause, cpuMs: r.cpuMs });
    } catch {
      // A line cut at the end of the log: not a record yet.
    }
  }
  return out;
}

export interface StallSummary {
  count: number;
  /** stalls by what they are blamed on: the watchdog's cause, or 'descheduled' for an 'other' one mostly off CPU */
  byCause: Record<string, number>;
  /** the share of stalls with a cause named (anything but 'other' on CPU), 0..1; 1 with no stall */
  attributed: number;
  longestMs: number;
  /** the longest stall with at least half its length on CPU: our own work */
  longestOnCpuMs: number;
}

export function summarizeStalls(stalls: StallRecord[]): StallSummary {
  const byCause: Record<string, number> = {};
  let named = 0;
  for (const s of stalls) {
    const cause = s.cause === 'other' && s.cpuMs < OFF_CPU_SHARE * s.ms ? 'descheduled' : s.cause;
    byCause[cause] = (byCause[cause] ?? 0) + 1;
    if (cause !== 'other') named++;
  }
  const onCpu = stalls.filter((s) => s.cpuMs >= OFF_CPU_SHARE * s.ms);
  return {
    count: stalls.length,
    byCause,
    attributed: stalls.length ? named / stalls.length : 1,
    longestMs: Math.max(0, ...stalls.map((s) => s.ms)),
    longestOnCpuMs: Math.max(0, ...onCpu.map((s) => s.ms)),
  };
}

export const formatStalls = (s: StallSummary): string =>
  s.count === 0
    ? 'no stall over 50 ms'
    : `${s.count} stalls over 50 ms (${Object.entries(s.byCause)
        .sort((a, b) => b[1] - a[1])
        .map(([c, n]) => `${c} ${n}`)
        .join(', ')}), ${Math.round(s.attributed * 100)}% attributed, longest ${s.longestMs.toFixed(0)} ms, longest on CPU ${s.longestOnCpuMs.toFixed(0)} ms`;
