// Repeated inspections of one unchanged data dir in one process reuse the first
// report: a recovery playbook inspects its source up to five times (inspect, the
// fence's lock check and its member list, restore, fence-old), and each inspection copies
// kv.db, checks its pages and hashes every revision.
//
// "Unchanged" is a fingerprint of every file under the dirs inspections read
// (device, inode, size, mtime, ctime; symlinks followed). The file system stamps
// ctime from a coarse clock, so a change within the same tick as an earlier one
// can leave all of that equal: a fingerprint is only trusted when every file's
// ctime is older than that clock's step, so that any later write moves a ctime.
// The step is a kernel tick (at most 10 ms) where the file system keeps
// sub-second times, and a whole second (2 s for FAT) where every time is whole. A dir that cannot be walked (a file renamed meanwhile, a directory we
// may not read) gives no fingerprint: the inspection then runs and reports as
// before. The caller still checks the lock every time: whether its holder runs
// can change without any file changing.
import fs from 'node:fs';
import path from 'node:path';

/** How old every ctime must be: on a file system with whole-second times, and on one with finer ones. */
const SETTLED_NS = { wholeSeconds: 2_000_000_000n, fine: 100_000_000n };
const SECOND_NS = 1_000_000_000n;

/**
 * The fingerprint of the files under `dirs`, but `ignore` (absolute paths: a lock
 * file, which the caller checks apart); undefined when one changed too recently,
 * or a dir could not be read. A directory counts by its entries, not its own
 * times: adding or removing an ignored file (taking and releasing the lock)
 * changes the directory's, and any other entry added or removed shows in the list.
 */
export function dirFingerprint(dirs: readonly string[], ignore: readonly string[] = []): string | undefined {
  const ignored = new Set(ignore.map((f) => path.resolve(f)));
  const parts: string[] = [];
  const seenDirs = new Set<string>();
  // Per file system (a --wal-dir may be on another): its newest ctime, and whether every ctime on it is a whole second.
  const devices = new Map<bigint, { newest: bigint; wholeSeconds: boolean }>();
  const visit = (file: string): void => {
    if (ignored.has(file)) return;
    const st = fs.statSync(file, { bigint: true });
    if (!st.isDirectory()) {
      const d = devices.get(st.dev) ?? { newest: 0n, wholeSeconds: true };
      devices.set(st.dev, { newest: st.ctimeNs > d.newest ? st.ctimeNs : d.newest, wholeSeconds: d.wholeSeconds && st.ctimeNs % SECOND_NS === 0n });
      parts.push(`${file}:${st.dev}:${st.ino}:${st.mode}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`);
      return;
    }
    parts.push(`${file}:${st.dev}:${st.ino}:${st.mode}`);
    // A symlink back up the tree is walked once.
    const id = `${st.dev}:${st.ino}`;
    if (seenDirs.has(id)) return;
    seenDirs.add(id);
    for (const name of fs.readdirSync(file).sort()) visit(path.join(file, name));
  };
  try {
    for (const dir of dirs) visit(path.resolve(dir));
  } catch {
    return undefined;
  }
  const now = BigInt(Date.now()) * 1_000_000n;
  for (const d of devices.values()) if (d.newest > now - (d.wholeSeconds ? SETTLED_NS.wholeSeconds : SETTLED_NS.fine)) return undefined;
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

  /** `ignore`: files left out of the fingerprint (dirFingerprint), such as the lock `check` looks at. */
  async get(dirs: readonly string[], check: () => void, inspect: () => T | Promise<T>, ignore: readonly string[] = []): Promise<T> {
    const key = dirs.map((d) => path.resolve(d)).join('\0');
    const before = dirFingerprint(dirs, ignore);
    const known = this.reports.get(key);
    if (before !== undefined && known?.fingerprint === before) {
      check();
      return structuredClone(known.report);
    }
    const report = await inspect();
    if (before !== undefined && dirFingerprint(dirs, ignore) === before) this.reports.set(key, { fingerprint: before, report: structuredClone(report) });
    else this.reports.delete(key);
    return report;
  }
}
