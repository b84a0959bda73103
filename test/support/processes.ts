// Processes a test did not start itself but must stop: members a playbook run
// started (detached) under the test's temp dir, found by their command lines.
import fs from 'node:fs';

/** Pids of processes whose command line mentions `dir` (bounded by /proc's size). */
export function processesUnder(dir: string): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0');
      if (cmd.some((a) => a.startsWith(dir))) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** SIGTERM to every process under `dir`, SIGKILL to those left after `graceMs`; resolves when none is left (at most graceMs + 5 s). */
export async function stopProcessesUnder(dir: string, graceMs = 10_000): Promise<void> {
  const signal = (sig: NodeJS.Signals) => {
    for (const pid of processesUnder(dir)) {
      try {
        process.kill(pid, sig);
      } catch {
        // already gone
      }
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + graceMs + 5000;
  let killed = false;
  while (processesUnder(dir).length > 0 && Date.now() < deadline) {
    if (!killed && Date.now() > deadline - 5000) {
      signal('SIGKILL');
      killed = true;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
