// Moving a stopped member to another machine: its data dir packed into a
// .tar.gz with a manifest of sha256 checksums, and unpacked only after every
// checksum matches (extracted into DIR.part, verified, then renamed).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import * as tar from 'tar';
import { RefusedError, InputError } from '../common/errors.js';
import { DataDirLockedError } from '../storage/errors.js';
import { RaftStorage } from '../storage/raftStorage.js';
import { etcdDataDirLock } from '../etcdfile/index.js';
import { runtimeOfDataDir } from '../ops/runtime.js';
import { fencedDataDirProblem } from './fenceRecord.js';

export const MANIFEST = 'lifeboat-manifest.json';

interface Manifest {
  format: 'lifeboat-datadir/1';
  createdAt: string;
  files: Array<{ path: string; size: number; sha256: string }>;
}

/** Files of member/ worth moving: not the lock, temp files or SQLite's shared-memory index. */
function listFiles(dataDir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(dataDir, rel), { withFileTypes: true })) {
      const r = path.join(rel, entry.name);
      if (entry.isDirectory()) walk(r);
      else if (entry.isFile() && !/(^|\/)lock$|\.tmp$|-shm$/.test(r)) out.push(r);
    }
  };
  walk('member');
  return out.sort();
}

/** Every regular file under dir, relative to it. */
function allFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel === '' ? entry.name : path.join(rel, entry.name);
      if (entry.isDirectory()) walk(r);
      else out.push(r);
    }
  };
  walk('');
  return out.sort();
}

function sha256File(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

function fsyncPath(p: string): void {
  const fd = fs.openSync(p, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

export interface PackResult {
  archive: string;
  files: number;
  bytes: number;
  sha256: string;
}

/** Packs a stopped member's data dir. A running member (its lock held) is refused. */
export async function packDataDir(dataDir: string, out: string): Promise<PackResult> {
  const fenced = runtimeOfDataDir(dataDir) === undefined ? fencedDataDirProblem(dataDir) : undefined;
  if (fenced) throw new RefusedError(fenced);
  if (!fs.existsSync(path.join(dataDir, 'member'))) throw new InputError(`${dataDir} holds no member data (no member/ directory); check the path`);
  // Holding the lock while packing also proves a Lifeboat member is stopped; an etcd
  // member's own locks (on its WAL) show whether it runs.
  let storage: RaftStorage | undefined;
  if (runtimeOfDataDir(dataDir) === 'etcd') {
    const holder = etcdDataDirLock(dataDir);
    if (holder) throw new RefusedError(`data dir ${dataDir} is in use by a running etcd${holder.pid ? ` (pid ${holder.pid})` : ''}; stop it before packing it`);
  } else {
    try {
      storage = RaftStorage.open(dataDir, { readOnly: true }).storage;
    } catch (e) {
      if (e instanceof DataDirLockedError) throw new RefusedError(`${e.message} before packing it`);
      throw e;
    }
  }
  const part = `${out}.part`;
  try {
    const files = listFiles(dataDir);
    const manifest: Manifest = {
      format: 'lifeboat-datadir/1',
      createdAt: new Date().toISOString(),
      files: files.map((f) => ({ path: f, size: fs.statSync(path.join(dataDir, f)).size, sha256: sha256File(path.join(dataDir, f)) })),
    };
    fs.writeFileSync(path.join(dataDir, MANIFEST), JSON.stringify(manifest, null, 2));
    try {
      await tar.create({ gzip: true, file: part, cwd: dataDir, portable: true }, [MANIFEST, ...files]);
    } finally {
      fs.rmSync(path.join(dataDir, MANIFEST), { force: true });
    }
    fsyncPath(part);
    fs.renameSync(part, out);
    fsyncPath(path.dirname(path.resolve(out)));
    const bytes = manifest.files.reduce((n, f) => n + f.size, 0);
    return { archive: path.resolve(out), files: files.length, bytes, sha256: sha256File(out) };
  } catch (e) {
    fs.rmSync(part, { force: true });
    throw e;
  } finally {
    storage?.close();
  }
}

export interface UnpackResult {
  dataDir: string;
  files: number;
  bytes: number;
  /** the data dir already held exactly this archive's files (an unpack done before) */
  alreadyUnpacked: boolean;
  /** entries of the archive its manifest does not list, left out of the data dir (each with why) */
  ignored: Array<{ path: string; why: string }>;
}

/** The archive's manifest, read without extracting the rest. */
async function readManifest(archive: string): Promise<Manifest | undefined> {
  let text = '';
  try {
    await tar.list({
      file: archive,
      filter: (p) => p === MANIFEST,
      onReadEntry: (entry) => entry.on('data', (d: Buffer) => (text += d.toString('utf8'))),
    });
    return text ? (JSON.parse(text) as Manifest) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * True when dataDir holds exactly the files the archive's manifest lists, each
 * with its size and sha256: an unpack of this archive that completed before
 * (a resumed run). Anything else in a non-empty dir is not ours to replace.
 */
async function holdsUnpacked(archive: string, dataDir: string): Promise<Manifest | undefined> {
  if (!fs.existsSync(path.join(dataDir, 'member'))) return undefined;
  const manifest = await readManifest(archive);
  if (!manifest) return undefined;
  const extra = fs.readdirSync(dataDir).filter((e) => e !== 'member');
  const files = listFiles(dataDir);
  if (extra.length > 0 || files.length !== manifest.files.length) return undefined;
  const same = manifest.files.every((f) => {
    const p = path.join(dataDir, f.path);
    return fs.existsSync(p) && fs.statSync(p).size === f.size && sha256File(p) === f.sha256;
  });
  return same ? manifest : undefined;
}

/** Unpacks into a new data dir, verifying every file against the manifest first. */
export async function unpackDataDir(archive: string, dataDir: string): Promise<UnpackResult> {
  if (!fs.existsSync(archive)) throw new InputError(`archive ${archive} does not exist; check the path`);
  if (fs.existsSync(dataDir) && fs.readdirSync(dataDir).length > 0) {
    const done = await holdsUnpacked(archive, dataDir);
    if (done)
      return {
        dataDir: path.resolve(dataDir),
        files: done.files.length,
        bytes: done.files.reduce((n, f) => n + f.size, 0),
        alreadyUnpacked: true,
        ignored: [],
      };
    throw new RefusedError(
      `data dir ${dataDir} is not empty and does not hold exactly what ${archive} holds; unpack into a new directory (or move ${dataDir} aside first)`,
    );
  }
  const target = path.resolve(dataDir);
  const part = `${target}.part`;
  fs.rmSync(part, { recursive: true, force: true });
  fs.mkdirSync(part, { recursive: true });
  const ignored: UnpackResult['ignored'] = [];
  try {
    try {
      // Only plain files and directories, only below the target: no links, no '..'.
      await tar.extract({
        file: archive,
        cwd: part,
        strict: true,
        filter: (p, entry) => {
          const type = (entry as { type?: string }).type ?? 'entry';
          const outside = p.split('/').includes('..') || path.isAbsolute(p);
          if (outside) ignored.push({ path: p, why: 'a path outside the data dir' });
          else if (type !== 'File' && type !== 'Directory') ignored.push({ path: p, why: `a ${type}, not a plain file` });
          return !outside && (type === 'File' || type === 'Directory');
        },
      });
    } catch (e) {
      throw new Error(
        `archive ${archive} is not a readable .tar.gz (${(e as Error).message.split('\n')[0]}); copy it again and compare its sha256 with the one 'datadir pack' printed, or pack the data dir again`,
      );
    }
    const manifestPath = path.join(part, MANIFEST);
    if (!fs.existsSync(manifestPath))
      throw new Error(
        `archive ${archive} has no ${MANIFEST}; it was not made by 'lifeboat datadir pack': make one with 'lifeboat datadir pack DIR --out F.tar.gz'`,
      );
    const manifest = JSON.parse(fs.readFileSync(manifestPath, 'utf8')) as Manifest;
    let bytes = 0;
    for (const f of manifest.files) {
      const p = path.join(part, f.path);
      if (!fs.existsSync(p)) throw new Error(`archive ${archive} is missing ${f.path} listed in its manifest; it is damaged, pack it again`);
      const sum = sha256File(p);
      if (sum !== f.sha256)
        throw new Error(
          `archive ${archive}: ${f.path} has sha256 ${sum.slice(0, 16)}…, the manifest says ${f.sha256.slice(0, 16)}…; it is damaged or was altered, pack it again`,
        );
      bytes += f.size;
      fsyncPath(p);
    }
    const listed = new Set(manifest.files.map((f) => f.path));
    const data = listFiles(part);
    for (const f of data) {
      if (!listed.has(f)) throw new Error(`archive ${archive} holds ${f}, which its manifest does not list; it was altered, pack the data dir again`);
    }
    fs.rmSync(manifestPath);
    // Anything else the archive held (outside member/, or a lock, temp or -shm file
    // that pack never takes) is not unpacked, and the caller is told which.
    for (const f of allFiles(part)) {
      if (listed.has(f) || data.includes(f)) continue;
      ignored.push({ path: f, why: 'not in the manifest' });
      fs.rmSync(path.join(part, f));
    }
    for (const e of fs.readdirSync(part)) if (e !== 'member') fs.rmSync(path.join(part, e), { recursive: true, force: true });
    if (fs.existsSync(target)) fs.rmdirSync(target);
    fs.renameSync(part, target);
    fsyncPath(path.dirname(target));
    return { dataDir: target, files: manifest.files.length, bytes, alreadyUnpacked: false, ignored };
  } catch (e) {
    fs.rmSync(part, { recursive: true, force: true });
    throw e;
  }
}
