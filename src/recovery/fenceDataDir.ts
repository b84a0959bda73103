// Fencing an old member's data dir after a recovery: the member it belongs to must
// never serve again, even started by its old unit on its old host. Reversible,
// nothing deleted:
// - Lifeboat: the `superseded` marker (the member exits 78 at start, naming it);
// - etcd: member/ moved aside to member.fenced-<id>/ and an empty member/ beside an
//   empty proxy/ left in its place: etcd 3.4 exits 1 on that layout ("Both member
//   and proxy directories exist") and creates nothing. Never an empty dir alone,
//   which a unit with --initial-cluster-state new would bootstrap into a fresh
//   cluster under the old ID.
// A record of what was done (fence.json in the data dir) lets `datadir unfence`
// undo exactly that.
import fs from 'node:fs';
import path from 'node:path';
import { InputError, RefusedError } from '../common/errors.js';
import { formatId } from '../common/ids.js';
import { memberDir } from '../storage/layout.js';
import { DirLock } from '../storage/dirLock.js';
import { NodeFileSystem } from '../storage/fileSystem.js';
import { writeFileDurably } from '../storage/atomicFile.js';
import { readMarker, writeMarker } from '../storage/markers.js';
import { DataDirLockedError } from '../storage/errors.js';
import { runtimeOfDataDir } from '../ops/runtime.js';
import { etcdDataDirLock } from '../etcdfile/index.js';
import { readFenceRecord, recordPath, RECORD, type FenceRecord } from './fenceRecord.js';

export { fenceDescription, fencedDataDirProblem, readFenceRecord, type FenceRecord } from './fenceRecord.js';

export interface FenceOutcome extends FenceRecord {
  dataDir: string;
  alreadyFenced: boolean;
}

const nodeFs = new NodeFileSystem();

function writeDurably(file: string, text: string): void {
  writeFileDurably(nodeFs, file, Buffer.from(text));
}

/** The empty member/ beside an empty proxy/ that etcd refuses to start on. */
function leaveUnstartableLayout(dir: string): void {
  fs.mkdirSync(memberDir(dir), { recursive: true });
  fs.mkdirSync(path.join(dir, 'proxy'), { recursive: true });
  nodeFs.fsyncDir(dir);
}

/** Renders an old data dir unstartable, reversibly; a second call finds it fenced and changes nothing. */
export function fenceDataDir(dir: string, supersededBy: bigint): FenceOutcome {
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new InputError(`data dir ${dir} does not exist; check the path`);
  const by = formatId(supersededBy);
  const done = readFenceRecord(dir);
  if (done && (done.runtime === 'lifeboat' || fs.existsSync(path.join(dir, done.movedTo ?? '')))) {
    if (done.runtime === 'etcd') leaveUnstartableLayout(dir);
    return { ...done, dataDir: path.resolve(dir), alreadyFenced: true };
  }
  const runtime = done?.runtime ?? runtimeOfDataDir(dir);
  if (!runtime)
    throw new InputError(`${dir} is not a member's data dir (no member/snap/db for etcd, no member/meta or member/kv.db for Lifeboat); check the path`);
  const at = new Date().toISOString();
  if (runtime === 'lifeboat') {
    // The lock proves no member runs on it while the marker is written.
    let lock: DirLock;
    try {
      lock = DirLock.acquire(new NodeFileSystem(), dir, []);
    } catch (e) {
      if (e instanceof DataDirLockedError) throw new RefusedError(`${e.message}; a running member cannot be fenced`);
      throw e;
    }
    try {
      if (readMarker(dir, 'superseded') === undefined) writeMarker(dir, 'superseded', `${at} cluster superseded by ${by} (fenced by lifeboat datadir fence)\n`);
      const record: FenceRecord = { runtime, supersededBy: by, at };
      writeDurably(recordPath(dir), `${JSON.stringify(record, null, 2)}\n`);
      return { ...record, dataDir: path.resolve(dir), alreadyFenced: false };
    } finally {
      lock.release();
    }
  }
  const holder = etcdDataDirLock(dir);
  if (holder)
    throw new RefusedError(
      `data dir ${dir} is in use by a running etcd${holder.pid ? ` (pid ${holder.pid})` : ''}: ${holder.file} is locked; stop it first: a running member cannot be fenced`,
    );
  const movedTo = `member.fenced-${by}`;
  if (fs.existsSync(path.join(dir, movedTo))) throw new RefusedError(`${path.join(dir, movedTo)} already exists; move it away by hand before fencing again`);
  const record: FenceRecord = { runtime, supersededBy: by, at, movedTo };
  // The record first: a crash after any later step leaves a state unfence understands.
  writeDurably(recordPath(dir), `${JSON.stringify(record, null, 2)}\n`);
  fs.renameSync(memberDir(dir), path.join(dir, movedTo));
  leaveUnstartableLayout(dir);
  return { ...record, dataDir: path.resolve(dir), alreadyFenced: false };
}

/** Undoes fenceDataDir from its record. */
export function unfenceDataDir(dir: string): FenceRecord {
  const record = readFenceRecord(dir);
  if (!record) throw new InputError(`${dir} is not fenced (no ${RECORD}); nothing to undo`);
  if (record.runtime === 'lifeboat') {
    const marker = path.join(memberDir(dir), 'superseded');
    // Kept beside it, never deleted: the marker says when and by whom the cluster was replaced.
    if (fs.existsSync(marker)) fs.renameSync(marker, `${marker}.unfenced-${Date.now()}`);
  } else {
    const aside = path.join(dir, record.movedTo ?? '');
    if (!record.movedTo || !fs.existsSync(aside)) throw new InputError(`${dir}: the fenced member dir ${aside} is missing; nothing to move back`);
    for (const d of [memberDir(dir), path.join(dir, 'proxy')]) {
      if (fs.existsSync(d) && fs.readdirSync(d).length > 0)
        throw new RefusedError(`${d} is not empty: something ran on this data dir after it was fenced; look before unfencing`);
    }
    fs.rmSync(path.join(dir, 'proxy'), { recursive: true, force: true });
    fs.rmSync(memberDir(dir), { recursive: true, force: true });
    fs.renameSync(aside, memberDir(dir));
  }
  fs.rmSync(recordPath(dir));
  nodeFs.fsyncDir(dir);
  return record;
}
