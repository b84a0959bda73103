// Every byte of ours that reaches a disk goes through this interface, so tests can
// swap in a simulated disk that forgets what was never fsynced (test/support/simulatedDisk.ts).

import fs from 'node:fs';
import path from 'node:path';
import { failFsyncAt } from '../common/failpoint.js';

export interface FileHandle {
  readonly path: string;
}

/** A process as the lock file records it: pid plus a start token that tells a reused pid apart. */
export interface ProcessRef {
  pid: number;
  start: string;
}

export interface FileSystem {
  /** Creates the directory and missing parents; each new directory is made durable in its parent. */
  mkdirp(dir: string): void;
  exists(file: string): boolean;
  /** Names in the directory, sorted. */
  list(dir: string): string[];
  readFile(file: string): Buffer;
  /** Opens an existing file for reading and writing. */
  open(file: string): FileHandle;
  /** Creates a new empty file, failing if it exists; its name is durable only after fsyncDir. */
  create(file: string): FileHandle;
  size(fh: FileHandle): number;
  /** Writes all of data at position (extending the file if needed). */
  write(fh: FileHandle, data: Uint8Array, position: number): void;
  /** Makes the file's data and size durable (fdatasync). */
  fsync(fh: FileHandle): void;
  /** fsync off the event loop (libuv's thread pool); no other call may touch `fh` until it settles. */
  fsyncAsync(fh: FileHandle): Promise<void>;
  truncate(fh: FileHandle, size: number): void;
  close(fh: FileHandle): void;
  /** Atomically replaces `to`; durable only after fsyncDir. */
  rename(from: string, to: string): void;
  unlink(file: string): void;
  /** Makes creates, renames and unlinks in the directory durable. */
  fsyncDir(dir: string): void;
  /** Atomically creates the file with its content; false if it already exists. */
  createExclusive(file: string, data: Uint8Array): boolean;
  /** This process, for lock files. */
  self(): ProcessRef;
  /** Whether the recorded process is still running (false for a dead or reused pid). */
  isRunning(p: ProcessRef): boolean;
}

class NodeFileHandle implements FileHandle {
  constructor(
    readonly path: string,
    readonly fd: number,
  ) {}
}

function fdOf(fh: FileHandle): number {
  if (!(fh instanceof NodeFileHandle)) throw new TypeError(`not a node file handle: ${fh.path}`);
  return fh.fd;
}

/** Linux only: the process's start time in clock ticks (field 22 of /proc/<pid>/stat) and its state. */
function procStat(pid: number): { start: string; state: string } | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0] ?? '', start: fields[19] ?? '' };
  } catch {
    return undefined;
  }
}

/** Failpoint `fsync-eio`: the disk reports an I/O error on every fsync. */
function failingFsync(fh: FileHandle): void {
  if (__LIFEBOAT_FAULTS__) failFsyncAt('fsync-eio', fh.path);
}

/** The real disk, with synchronous node:fs calls. */
export class NodeFileSystem implements FileSystem {
  mkdirp(dir: string): void {
    const missing: string[] = [];
    for (let d = path.resolve(dir); !fs.existsSync(d); d = path.dirname(d)) missing.unshift(d);
    for (const d of missing) {
      fs.mkdirSync(d);
      this.fsyncDir(path.dirname(d));
    }
  }

  exists(file: string): boolean {
    return fs.existsSync(file);
  }

  list(dir: string): string[] {
    return fs.readdirSync(dir).sort();
  }

  readFile(file: string): Buffer {
    return fs.readFileSync(file);
  }

  open(file: string): FileHandle {
    return new NodeFileHandle(file, fs.openSync(file, 'r+'));
  }

  create(file: string): FileHandle {
    return new NodeFileHandle(file, fs.openSync(file, 'wx+'));
  }

  size(fh: FileHandle): number {
    return fs.fstatSync(fdOf(fh)).size;
  }

  write(fh: FileHandle, data: Uint8Array, position: number): void {
    const fd = fdOf(fh);
    for (let done = 0; done < data.byteLength;) {
      done += fs.writeSync(fd, data, done, data.byteLength - done, position + done);
    }
  }

  fsync(fh: FileHandle): void {
    failingFsync(fh);
    fs.fdatasyncSync(fdOf(fh));
  }

  fsyncAsync(fh: FileHandle): Promise<void> {
    const fd = fdOf(fh);
    return new Promise((resolve, reject) => {
      failingFsync(fh); // a throw here rejects the promise (the executor's contract)
      fs.fdatasync(fd, (err) => (err ? reject(err) : resolve()));
    });
  }

  truncate(fh: FileHandle, size: number): void {
    fs.ftruncateSync(fdOf(fh), size);
  }

  close(fh: FileHandle): void {
    fs.closeSync(fdOf(fh));
  }

  rename(from: string, to: string): void {
    fs.renameSync(from, to);
  }

  unlink(file: string): void {
    fs.unlinkSync(file);
  }

  fsyncDir(dir: string): void {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  }

  createExclusive(file: string, data: Uint8Array): boolean {
    // Write a private temp file and hard-link it into place: link() fails if the
    // name exists (like O_EXCL), and a reader never sees the file without its content.
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, data);
    try {
      fs.linkSync(tmp, file);
      return true;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return false;
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'ENOSYS') throw err;
      // No hard links on this file system: plain O_EXCL, content written just after.
      return this.createExclusivePlain(file, data);
    } finally {
      fs.unlinkSync(tmp);
    }
  }

  private createExclusivePlain(file: string, data: Uint8Array): boolean {
    let fd: number;
    try {
      fd = fs.openSync(file, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
      throw err;
    }
    try {
      fs.writeSync(fd, data);
    } finally {
      fs.closeSync(fd);
    }
    return true;
  }

  self(): ProcessRef {
    return { pid: process.pid, start: procStat(process.pid)?.start ?? '' };
  }

  isRunning(p: ProcessRef): boolean {
    try {
      process.kill(p.pid, 0);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false; // ESRCH: no such process
    }
    const stat = procStat(p.pid);
    if (stat === undefined) return true; // no /proc: trust kill(0)
    if (stat.state === 'Z' || stat.state === 'X') return false; // exited, not yet reaped
    return p.start === '' || stat.start === p.start;
  }
}
