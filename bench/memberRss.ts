// Resident memory and CPU time of member processes, from /proc (Linux).
import { readFileSync } from 'node:fs';

/** A memory line of /proc/<pid>/status (VmRSS, VmHWM...) in MiB; 0 once the process is gone. */
export function statusMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : 0;
  } catch {
    return 0; // gone
  }
}

export const rssMiB = (pid: number): number => statusMiB(pid, 'VmRSS');

/** utime + stime of the whole process (every thread, workers included) in seconds, from /proc/<pid>/stat. */
export function cpuSeconds(pid: number, ticksPerSecond = 100): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name may hold spaces: fields are counted after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond;
}

/** utime + stime of all `pids` together, in seconds. */
export const cpuTotal = (pids: number[]): number => pids.reduce((a, p) => a + cpuSeconds(p), 0);

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
