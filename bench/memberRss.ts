// Resident memory of member processes, from /proc (Linux), in MiB.
import { readFileSync } from 'node:fs';

export function rssMiB(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0; // gone
  }
}

/** The largest RSS among `pids` now. */
export const maxRss = (pids: number[]): number => Math.max(0, ...pids.map(rssMiB));

/** Samples the largest member RSS every `everyMs` until stopped; returns the peak. */
export function sampleRss(pids: number[], everyMs = 250): { stop(): number } {
  let peak = maxRss(pids);
  const timer = setInterval(() => (peak = Math.max(peak, maxRss(pids))), everyMs);
  return {
    stop() {
      clearInterval(timer);
      return Math.max(peak, maxRss(pids));
    },
  };
}
