// member/lock keeps two processes from opening one data dir. Node has no flock,
// so the lock is a file created exclusively (O_EXCL semantics) holding
// "<pid> <start>\n": the holder's pid and its start time (from /proc, so a pid
// reused after a reboot is not mistaken for the holder).
//
// A lock whose process is gone (crash, SIGKILL, power cut) is stale: it is moved
// aside under a private name, checked to be the very file judged stale, and
// removed; then the lock is taken again. Two processes breaking the same stale lock
// at the same instant are sorted out by that check; what remains is a window of
// microseconds in which a third opener could also succeed.

import { DataDirLockedError, StorageError } from './errors.js';
import type { FileSystem, ProcessRef } from './fileSystem.js';
import { lockPath } from './layout.js';
import type { StorageWarning } from './warning.js';

const ATTEMPTS = 5;

function encode(p: ProcessRef): Buffer {
  return Buffer.from(`${p.pid} ${p.start}\n`);
}

function decode(buf: Buffer): ProcessRef | undefined {
  const m = /^(\d+) (\S*)\n$/.exec(buf.toString('latin1'));
  return m ? { pid: Number(m[1]), start: m[2] } : undefined;
}

function readIfExists(fs: FileSystem, file: string): Buffer | undefined {
  try {
    return fs.readFile(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

export class DirLock {
  private constructor(
    private readonly fs: FileSystem,
    private readonly file: string,
    private readonly content: Buffer,
  ) {}

  /** Takes the lock of the data dir (whose member/ directory must exist) or throws DataDirLockedError. */
  static acquire(fs: FileSystem, dataDir: string, warnings: StorageWarning[]): DirLock {
    return DirLock.acquireFile(fs, lockPath(dataDir), (pid) => new DataDirLockedError(dataDir, pid), warnings);
  }

  /** Takes the lock file `file` (the same protocol, for other state) or throws what `locked` makes of the holder. */
  static acquireFile(fs: FileSystem, file: string, locked: (pid: number) => Error, warnings: StorageWarning[]): DirLock {
    const self = fs.self();
    const content = encode(self);
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      if (fs.createExclusive(file, content)) return new DirLock(fs, file, content);
      const seen = readIfExists(fs, file);
      if (seen === undefined) continue; // released meanwhile
      const holder = decode(seen);
      if (holder && fs.isRunning(holder)) throw locked(holder.pid);
      // Stale. (Unreadable too: the lock is written whole, so only a power cut before
      // its content reached the disk leaves it empty.)
      const aside = `${file}.stale-${self.pid}`;
      try {
        fs.rename(file, aside);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      const moved = fs.readFile(aside);
      if (!moved.equals(seen)) fs.createExclusive(file, moved); // we took a fresh lock: put it back
      fs.unlink(aside);
      if (moved.equals(seen)) {
        warnings.push(holder ? { msg: 'removed stale data dir lock', file, pid: holder.pid } : { msg: 'removed unreadable data dir lock', file });
      }
    }
    throw new StorageError(`could not take the lock ${file}: it kept changing; is another process starting?`);
  }

  /** Removes the lock file if it is still ours. */
  release(): void {
    const seen = readIfExists(this.fs, this.file);
    if (seen?.equals(this.content)) this.fs.unlink(this.file);
  }
}
