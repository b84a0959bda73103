// Members a playbook starts run detached from the process that ran it. Whoever
// made their data dirs stops them through the process holding each data dir
// (Lifeboat's lock file, etcd's WAL locks).
import fs from 'node:fs';
import path from 'node:path';
import { memberPid } from '../../src/ops/runtime.js';

/** The pids of the members holding the data dirs directly under `dir`. */
export function detachedMemberPids(dir: string): number[] {
  const pids: number[] = [];
  for (const d of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    const pid = memberPid(path.join(dir, d));
    if (pid !== undefined && pid !== process.pid) pids.push(pid);
  }
  return pids;
}

/** SIGKILL the member holding each data dir directly under `dir`; returns the pids signalled. */
export function killDetachedMembers(dir: string): number[] {
  const pids = detachedMemberPids(dir);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
  return pids;
}
