// An in-memory disk for tests. It keeps two states of every file and directory:
// what the page cache holds (live) and what a power cut would leave (durable).
// fsync moves a file's writes to durable; fsyncDir does the same for a directory's
// creates, renames and unlinks. A crash throws away everything not yet durable,
// or, with a seeded random source, lets a random prefix of the pending operations
// through and may tear the next write (keeping a random prefix of its bytes) —
// what a journaling file system can leave behind after a power cut.
//
// Simplifications: directories are durable once made; renames stay within one directory.

import path from 'node:path';
import type { FileHandle, FileSystem, ProcessRef } from '../../src/storage/fileSystem.js';

/** Thrown by the operation at which a scheduled crash happens. */
export class SimulatedCrash extends Error {
  constructor() {
    super('simulated crash');
    this.name = 'SimulatedCrash';
  }
}

export interface CrashOptions {
  /** Seeded source in [0, 1). Without it every unsynced operation is lost. */
  random?: () => number;
}

class Bytes {
  private buf = Buffer.alloc(0);
  size = 0;

  write(pos: number, data: Uint8Array): void {
    const end = pos + data.byteLength;
    this.reserve(end);
    this.buf.set(data, pos);
    if (end > this.size) this.size = end;
  }

  truncate(size: number): void {
    if (size < this.size)
      this.buf.fill(0, size, this.size); // a later extension must read zeros
    else this.reserve(size);
    this.size = size;
  }

  view(): Buffer {
    return this.buf.subarray(0, this.size);
  }

  clone(): Bytes {
    const b = new Bytes();
    b.write(0, this.view());
    return b;
  }

  private reserve(n: number): void {
    if (n <= this.buf.length) return;
    const grown = Buffer.alloc(Math.max(n, this.buf.length * 2, 4096));
    this.buf.copy(grown, 0, 0, this.size);
    this.buf = grown;
  }
}

type FileOp = { kind: 'write'; pos: number; data: Buffer } | { kind: 'truncate'; size: number };
type DirOp = { kind: 'link'; name: string; ino: number } | { kind: 'unlink'; name: string } | { kind: 'rename'; from: string; to: string; ino: number };

interface Inode {
  live: Bytes;
  durable: Bytes;
  pending: FileOp[];
}

interface Dir {
  live: Map<string, number>;
  durable: Map<string, number>;
  pending: DirOp[];
}

class SimHandle implements FileHandle {
  constructor(
    readonly path: string,
    readonly ino: number,
    readonly incarnation: number,
  ) {}
}

function applyFileOp(b: Bytes, op: FileOp): void {
  if (op.kind === 'write') b.write(op.pos, op.data);
  else b.truncate(op.size);
}

function applyDirOp(m: Map<string, number>, op: DirOp): void {
  if (op.kind === 'link') m.set(op.name, op.ino);
  else if (op.kind === 'unlink') m.delete(op.name);
  else {
    m.delete(op.from);
    m.set(op.to, op.ino);
  }
}

function enoent(file: string): Error {
  return Object.assign(new Error(`ENOENT: no such file or directory, '${file}'`), { code: 'ENOENT' });
}

export class SimulatedDisk implements FileSystem {
  private readonly dirs = new Map<string, Dir>();
  private readonly inodes = new Map<number, Inode>();
  private nextIno = 1;
  private incarnation = 1;
  /** Mutating calls made so far (the clock that scheduleCrash counts in). */
  mutations = 0;
  private scheduled?: { at: number; options: CrashOptions };

  constructor() {
    this.dirs.set('/', { live: new Map(), durable: new Map(), pending: [] });
  }

  /** The `n`-th mutating call from now (1 = the next) crashes the disk and throws SimulatedCrash instead of running. */
  scheduleCrash(n: number, options: CrashOptions = {}): void {
    this.scheduled = { at: this.mutations + n, options };
  }

  cancelCrash(): void {
    this.scheduled = undefined;
  }

  /** Power cut now: the disk keeps only what was durable (plus what options.random lets through). */
  crash(options: CrashOptions = {}): void {
    this.scheduled = undefined;
    const rnd = options.random;
    for (const dir of this.dirs.values()) {
      const n = rnd ? Math.floor(rnd() * (dir.pending.length + 1)) : 0;
      for (const op of dir.pending.slice(0, n)) applyDirOp(dir.durable, op);
      dir.pending = [];
      dir.live = new Map(dir.durable);
    }
    for (const inode of this.inodes.values()) {
      if (rnd && inode.pending.length > 0) {
        const n = Math.floor(rnd() * (inode.pending.length + 1));
        for (const op of inode.pending.slice(0, n)) applyFileOp(inode.durable, op);
        const next = inode.pending[n];
        if (next?.kind === 'write' && rnd() < 0.5) {
          applyFileOp(inode.durable, { ...next, data: next.data.subarray(0, Math.floor(rnd() * next.data.length)) });
        }
      }
      inode.pending = [];
      inode.live = inode.durable.clone();
    }
    const reachable = new Set<number>();
    for (const dir of this.dirs.values()) for (const ino of dir.durable.values()) reachable.add(ino);
    for (const ino of [...this.inodes.keys()]) if (!reachable.has(ino)) this.inodes.delete(ino);
    this.incarnation++;
  }

  /** Damages a file in place, on disk and in the page cache alike (a media error, an operator's mistake). */
  damage(file: string, edit: (bytes: Buffer) => Buffer): void {
    const { dir, name } = this.locate(file);
    const ino = dir.live.get(name);
    if (ino === undefined) throw enoent(file);
    const inode = this.inode(ino);
    const edited = edit(Buffer.from(inode.live.view()));
    inode.durable = new Bytes();
    inode.durable.write(0, edited);
    inode.live = inode.durable.clone();
    inode.pending = [];
  }

  mkdirp(dir: string): void {
    this.step();
    for (let d = path.posix.resolve(dir); !this.dirs.has(d); d = path.posix.dirname(d)) {
      this.dirs.set(d, { live: new Map(), durable: new Map(), pending: [] });
    }
  }

  exists(file: string): boolean {
    const abs = path.posix.resolve(file);
    if (this.dirs.has(abs)) return true;
    const dir = this.dirs.get(path.posix.dirname(abs));
    return dir?.live.has(path.posix.basename(abs)) ?? false;
  }

  list(dir: string): string[] {
    const abs = path.posix.resolve(dir);
    const d = this.dirs.get(abs);
    if (!d) throw enoent(dir);
    const names = [...d.live.keys()];
    for (const sub of this.dirs.keys()) if (sub !== abs && path.posix.dirname(sub) === abs) names.push(path.posix.basename(sub));
    return names.sort();
  }

  readFile(file: string): Buffer {
    const { dir, name } = this.locate(file);
    const ino = dir.live.get(name);
    if (ino === undefined) throw enoent(file);
    return Buffer.from(this.inode(ino).live.view());
  }

  open(file: string): FileHandle {
    const { dir, name } = this.locate(file);
    const ino = dir.live.get(name);
    if (ino === undefined) throw enoent(file);
    return new SimHandle(file, ino, this.incarnation);
  }

  create(file: string): FileHandle {
    this.step();
    const { dir, name } = this.locate(file);
    if (dir.live.has(name)) throw Object.assign(new Error(`EEXIST: file already exists, '${file}'`), { code: 'EEXIST' });
    const ino = this.nextIno++;
    this.inodes.set(ino, { live: new Bytes(), durable: new Bytes(), pending: [] });
    dir.live.set(name, ino);
    dir.pending.push({ kind: 'link', name, ino });
    return new SimHandle(file, ino, this.incarnation);
  }

  size(fh: FileHandle): number {
    return this.handle(fh).live.size;
  }

  write(fh: FileHandle, data: Uint8Array, position: number): void {
    const inode = this.handle(fh);
    this.step();
    const op: FileOp = { kind: 'write', pos: position, data: Buffer.from(data) };
    applyFileOp(inode.live, op);
    inode.pending.push(op);
  }

  fsync(fh: FileHandle): void {
    const inode = this.handle(fh);
    this.step();
    for (const op of inode.pending) applyFileOp(inode.durable, op);
    inode.pending = [];
  }

  fsyncAsync(fh: FileHandle): Promise<void> {
    // The fsync runs now; a throw in the executor rejects the promise.
    return new Promise((resolve) => {
      this.fsync(fh);
      resolve();
    });
  }

  truncate(fh: FileHandle, size: number): void {
    const inode = this.handle(fh);
    this.step();
    const op: FileOp = { kind: 'truncate', size };
    applyFileOp(inode.live, op);
    inode.pending.push(op);
  }

  close(fh: FileHandle): void {
    // Closing never fails, not even a handle from before a crash (cleanup paths close those).
    if (!(fh instanceof SimHandle)) throw new TypeError(`not a simulated file handle: ${fh.path}`);
  }

  rename(from: string, to: string): void {
    this.step();
    const src = this.locate(from);
    const dst = this.locate(to);
    if (src.dir !== dst.dir) throw new Error(`simulated disk: rename across directories: ${from} -> ${to}`);
    const ino = src.dir.live.get(src.name);
    if (ino === undefined) throw enoent(from);
    const op: DirOp = { kind: 'rename', from: src.name, to: dst.name, ino };
    applyDirOp(src.dir.live, op);
    src.dir.pending.push(op);
  }

  unlink(file: string): void {
    this.step();
    const { dir, name } = this.locate(file);
    if (!dir.live.has(name)) throw enoent(file);
    const op: DirOp = { kind: 'unlink', name };
    applyDirOp(dir.live, op);
    dir.pending.push(op);
  }

  fsyncDir(dir: string): void {
    this.step();
    const d = this.dirs.get(path.posix.resolve(dir));
    if (!d) throw enoent(dir);
    for (const op of d.pending) applyDirOp(d.durable, op);
    d.pending = [];
  }

  createExclusive(file: string, data: Uint8Array): boolean {
    if (this.exists(file)) return false;
    const fh = this.create(file);
    this.write(fh, data, 0);
    return true;
  }

  self(): ProcessRef {
    return { pid: 1000 + this.incarnation, start: `sim-${this.incarnation}` };
  }

  isRunning(p: ProcessRef): boolean {
    const self = this.self();
    return p.pid === self.pid && p.start === self.start;
  }

  private step(): void {
    this.mutations++;
    if (this.scheduled && this.mutations >= this.scheduled.at) {
      this.crash(this.scheduled.options);
      throw new SimulatedCrash();
    }
  }

  private locate(file: string): { dir: Dir; name: string } {
    const abs = path.posix.resolve(file);
    const dir = this.dirs.get(path.posix.dirname(abs));
    if (!dir) throw enoent(file);
    return { dir, name: path.posix.basename(abs) };
  }

  private inode(ino: number): Inode {
    const inode = this.inodes.get(ino);
    if (!inode) throw new Error(`simulated disk: inode ${ino} is gone`);
    return inode;
  }

  private handle(fh: FileHandle): Inode {
    if (!(fh instanceof SimHandle)) throw new TypeError(`not a simulated file handle: ${fh.path}`);
    if (fh.incarnation !== this.incarnation) throw new Error(`simulated disk: handle for ${fh.path} is from before a crash`);
    return this.inode(fh.ino);
  }
}
