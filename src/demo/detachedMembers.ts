// Members a playbook starts run detached from the process that ran it. Whoever
// made their data dirs stops them through the pid in each dir's lock file.
import fs from 'node:fs';
import path from 'node:path';
import { lockPath } from '../storage/layout.js';

/** SIGKILL the member holding each data dir directly under `dir`; returns the pids signalled. */
export function killDetachedMembers(dir: string): number[] {
  const killed: number[] = [];
  for (const d of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    const lock = lockPath(path.join(dir, d));
    if (!fs.existsSync(lock)) continue;
    const pid = Number(fs.readFileSync(lock, 'utf8').trim().split(/\s+/)[0]);
    try {
      if (pid > 0 && pid !== process.pid) {
        process.kill(pid, 'SIGKILL');
        killed.push(pid);
      }
    } catch {
      // gone already
    }
  }
  return killed;
}
