// Members a playbook starts run detached from the process that ran it. Whoever
// made their data dirs stops them through the process holding each data dir
// (Lifeboat's lock file, etcd's WAL locks).
import fs from 'node:fs';
import path from 'node:path';
import { memberPid } from '../ops/runtime.js';

/** SIGKILL the member holding each data dir directly under `dir` (or with dryRun only find them); returns their pids. */
export function killDetachedMembers(dir: string, opts: { dryRun?: boolean } = {}): number[] {
  const killed: number[] = [];
  for (const d of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    const pid = memberPid(path.join(dir, d));
    try {
      if (pid !== undefined && pid !== process.pid) {
        if (!opts.dryRun) process.kill(pid, 'SIGKILL');
        killed.push(pid);
      }
    } catch {
      // gone already
    }
  }
  return killed;
}
