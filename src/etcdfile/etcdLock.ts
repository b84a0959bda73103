// Is an etcd member running on these files? etcd locks every WAL segment it has
// open (fcntl OFD write locks; flock where those are missing) and bbolt flocks
// member/snap/db. Node cannot take a lock without opening the file for writing,
// so the kernel's table of held locks, /proc/locks, is read instead: nothing is
// created, opened or changed.
//
// A line: `1: OFDLCK ADVISORY  WRITE -1 fe:00:2147838 0 EOF` (id, kind, mode,
// access, pid — -1 for an OFD lock —, major:minor:inode in hex:hex:decimal, range).
// Lines with `->` are waiters, not holders.

import fs from 'node:fs';
import path from 'node:path';

export interface LockHolder {
  file: string;
  /** The holding process, when it can be told (an OFD lock names none; then /proc/<pid>/fd is searched). */
  pid?: number;
}

const MAX_PROCS = 100_000;

function devKey(dev: number, ino: number): string {
  // Linux's dev_t: major in bits 8..19 and 32..43, minor in bits 0..7 and 20..31.
  const major = (Math.floor(dev / 256) % 4096) | (Math.floor(dev / 2 ** 32) & ~0xfff);
  const minor = (dev % 256) | (Math.floor(dev / 4096) & ~0xff);
  return `${major}:${minor}:${ino}`;
}

function readLockTable(): Array<{ key: string; pid: number }> {
  let text: string;
  try {
    text = fs.readFileSync('/proc/locks', 'utf8');
  } catch {
    return [];
  }
  const out: Array<{ key: string; pid: number }> = [];
  for (const line of text.split('\n')) {
    const m = /^\d+:\s+(\S+)\s+\S+\s+\S+\s+(-?\d+)\s+([0-9a-f]+):([0-9a-f]+):(\d+)\s/.exec(line);
    if (!m) continue; // a waiter (`->`) or something unexpected
    out.push({ key: `${parseInt(m[3], 16)}:${parseInt(m[4], 16)}:${m[5]}`, pid: Number(m[2]) });
  }
  return out;
}

/** A process with `file` open, from /proc/<pid>/fd (bounded). */
function processWithOpen(file: string): number | undefined {
  let real: string;
  try {
    real = fs.realpathSync(file);
  } catch {
    return undefined;
  }
  let pids: string[];
  try {
    pids = fs.readdirSync('/proc').filter((n) => /^\d+$/.test(n));
  } catch {
    return undefined;
  }
  for (const pid of pids.slice(0, MAX_PROCS)) {
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (fs.readlinkSync(path.join(`/proc/${pid}/fd`, fd)) === real) return Number(pid);
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

/** The first of `files` some process holds a lock on, or undefined. */
export function lockHolder(files: readonly string[]): LockHolder | undefined {
  const table = readLockTable();
  if (table.length === 0) return undefined;
  for (const file of files) {
    let st: fs.Stats;
    try {
      st = fs.statSync(file);
    } catch {
      continue;
    }
    const held = table.find((l) => l.key === devKey(st.dev, st.ino));
    if (!held) continue;
    const pid = held.pid > 0 ? held.pid : processWithOpen(file);
    return pid === undefined ? { file } : { file, pid };
  }
  return undefined;
}
