// Repeated inspections of one unchanged data dir in one process reuse the first
// report: a recovery playbook inspects its source up to five times (inspect, the
// fence's lock check and its member list, restore, fence-old), and each inspection copies
// kv.db, checks its pages and hashes every revision.
//
// "Unchanged" is a fingerprint of every file under the dirs inspections read
// (device, inode, size, mtime, ctime; symlinks followed). The file system stamps
// ctime from a coarse clock, so a change within the same tick as an earlier one
// can leave all of that equal: a fingerprint is only trusted when every file's
// ctime is older than that clock's step (SETTLED_NS), so that any later write
// moves a ctime. A dir that cannot be walked (a file renamed meanwhile, a
// directory we may not read) gives no fingerprint: the inspection then runs and
// reports as before. The lock is checked every time: whether its holder runs can
// change without any file changing.
import fs from 'node:fs';
import path from 'node:path';

/**
 * How old every ctime must be: a tenth of a second on a local file system that
 * keeps sub-second times (its clock steps a kernel tick, at most 10 ms), 3 s on
 * any other (whole seconds, FAT's 2 s steps, or a network file system stamped by
 * another machine's clock).
 */
const SETTLED_NS = { fine: 100_000_000n, other: 3_000_000_000n };
const SECOND_NS = 1_000_000_000n;
/** statfs types of the local file systems with sub-second times that the short margin is trusted on: ext2/3/4, XFS, Btrfs, tmpfs. */
const FINE_LOCAL_FS = new Set([0xef53, 0x58465342, 0x9123683e, 0x01021994]);

function fineLocal(file: string): boolean {
  try {
    return FINE_LOCAL_FS.has(fs.statfsSync(file).type);
  } catch {
    return false;
  }
}

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
  // Per file system (a --wal-dir may be on another): a file on it, its newest ctime, and whether every ctime on it is a whole second.
  const devices = new Map<bigint, { file: string; newest: bigint; wholeSeconds: boolean }>();
  const visit = (file: string): void => {
    if (ignored.has(file)) return;
    const st = fs.statSync(file, { bigint: true });
    if (!st.isDirectory()) {
      const d = devices.get(st.dev) ?? { file, newest: 0n, wholeSeconds: true };
      devices.set(st.dev, {
        file: d.file,
        newest: st.ctimeNs > d.newest ? st.ctimeNs : d.newest,
        wholeSeconds: d.wholeSeconds && st.ctimeNs % SECOND_NS === 0n,
      });
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
  for (const d of devices.values()) {
    const margin = !d.wholeSeconds && fineLocal(d.file) ? SETTLED_NS.fine : SETTLED_NS.other;
    if (d.newest > now - margin) return undefined;
  }
  return parts.join('\n');
}

/**
 * `inspect` once per unchanged state of `dirs`: a report is reused while the
 * fingerprint taken before and after it was made still holds, and `check` (the
 * lock) runs before it is (an inspection checks the lock itself). Reports are
 * copied in and out, so no caller's edit reaches another.
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
