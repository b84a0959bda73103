// Repeated inspections of one unchanged data dir in one process reuse the first
// report: a recovery playbook inspects its source up to five times (inspect, the
// fence's lock check and its member list, restore, fence-old), and each inspection copies
// kv.db, checks its pages and hashes every revision.
//
// "Unchanged" is a fingerprint of every file under the dirs inspections read
// (device, inode, size, mtime, ctime; symlinks followed). The file system stamps
// ctime from a coarse clock, so a change within the same tick as an earlier one
// can leave all of that equal: a fingerprint is only trusted when every file's
// ctime is at least SETTLED_NS before it was taken, so that any later write moves
// a ctime. A dir that cannot be walked (a file renamed meanwhile, a directory we
// may not read) gives no fingerprint: the inspection then runs and reports as
// before. The caller still checks the lock every time: whether its holder runs
// can change without any file changing.
import fs from 'node:fs';
import path from 'node:path';

const SETTLED_NS = 2_000_000_000n;

/** The fingerprint of the files under `dirs`; undefined when one changed too recently, or a dir could not be read. */
export function dirFingerprint(dirs: readonly string[]): string | undefined {
  const settledBefore = BigInt(Date.now()) * 1_000_000n - SETTLED_NS;
  const parts: string[] = [];
  const seenDirs = new Set<string>();
  const visit = (file: string): boolean => {
    const st = fs.statSync(file, { bigint: true });
    if (st.ctimeNs > settledBefore) return false;
    parts.push(`${file}:${st.dev}:${st.ino}:${st.mode}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`);
    if (!st.isDirectory()) return true;
    // A symlink back up the tree is walked once.
    const id = `${st.dev}:${st.ino}`;
    if (seenDirs.has(id)) return true;
    seenDirs.add(id);
    return fs
      .readdirSync(file)
      .sort()
      .every((name) => visit(path.join(file, name)));
  };
  try {
    for (const dir of dirs) if (!visit(path.resolve(dir))) return undefined;
  } catch {
    return undefined;
  }
  return parts.join('\n');
}

/**
 * `inspect` once per unchanged state of `dirs`: a report is reused while the
 * fingerprint taken before and after it was made still holds. Every call runs
 * `check` first (the lock); reports are copied in and out, so no caller's edit
 * reaches another.
 */
export class InspectMemo<T> {
  private readonly reports = new Map<string, { fingerprint: string; report: T }>();

  async get(dirs: readonly string[], check: () => void, inspect: () => T | Promise<T>): Promise<T> {
    const key = dirs.map((d) => path.resolve(d)).join('\0');
    const before = dirFingerprint(dirs);
    const known = this.reports.get(key);
    if (before !== undefined && known?.fingerprint === before) {
      check();
      return structuredClone(known.report);
    }
    const report = await inspect();
    if (before !== undefined && dirFingerprint(dirs) === before) this.reports.set(key, { fingerprint: before, report: structuredClone(report) });
    else this.reports.delete(key);
    return report;
  }
}
