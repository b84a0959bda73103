// Opening a data dir: identity checks, the newest snapshot, and a replay of the
// raft log segments in sequence order, telling a torn tail of the newest segment
// (cut off with a warning: it was never acknowledged) from damage anywhere else
// (StorageCorruptError naming the file and offset).

import path from 'node:path';
import type { HardState, SnapshotMeta } from '../raft/types.js';
import { MemberMismatchError, StorageCorruptError, StorageError } from './errors.js';
import type { FileSystem } from './fileSystem.js';
import { memberDir, metaPath, parseSegmentName, snapDir, TEMP_SUFFIX, walDir } from './layout.js';
import { endOfNonZero, RecordType } from './logRecord.js';
import { readMemberMeta, writeMemberMeta, type MemberMeta } from './memberMeta.js';
import { MemLog } from './memLog.js';
import type { OpenOptions } from './openOptions.js';
import { scanSegment, type SegmentInfo } from './segment.js';
import { listSnapshots, readSnapshotFile } from './snapshotFile.js';
import type { StorageWarning } from './warning.js';

const EMPTY_SNAPSHOT: SnapshotMeta = { index: 0, term: 0, conf: { voters: [], learners: [] } };
const sameHardState = (a: HardState, b: HardState) => a.term === b.term && a.vote === b.vote && a.commit === b.commit;

function removeTempFiles(fs: FileSystem, dir: string, warnings: StorageWarning[], only?: string): void {
  for (const name of fs.list(dir)) {
    if (!name.endsWith(TEMP_SUFFIX) || (only !== undefined && name !== only)) continue;
    fs.unlink(path.join(dir, name));
    warnings.push({ msg: 'removed a leftover temp file (a write interrupted by a crash)', file: path.join(dir, name) });
  }
}

function checkIdentity(dataDir: string, meta: MemberMeta, opts: OpenOptions): void {
  const expect = opts.expectMemberId ?? opts.identity?.memberId;
  if (expect !== undefined && expect !== meta.memberId) throw new MemberMismatchError(dataDir, 'member', meta.memberId, expect);
  if (opts.identity && opts.identity.clusterId !== meta.clusterId) {
    throw new MemberMismatchError(dataDir, 'cluster', meta.clusterId, opts.identity.clusterId);
  }
}

export interface Recovered {
  member: MemberMeta;
  log: MemLog;
  hardState: HardState;
  snapshot: SnapshotMeta;
  segments: SegmentInfo[];
  /** The newest segment, if appends continue in it. */
  tail?: { info: SegmentInfo; writeOff: number; zeroUpTo: number };
}

export function recoverDataDir(dataDir: string, fs: FileSystem, opts: OpenOptions, warnings: StorageWarning[]): Recovered {
  const names = fs.exists(walDir(dataDir)) ? fs.list(walDir(dataDir)) : [];
  const segNames = names.flatMap((name) => {
    const parsed = parseSegmentName(name);
    return parsed ? [{ name, file: path.join(walDir(dataDir), name), ...parsed }] : [];
  });
  segNames.sort((a, b) => a.seq - b.seq);
  const snapFiles = fs.exists(snapDir(dataDir)) ? listSnapshots(fs, dataDir) : [];

  let member = readMemberMeta(fs, dataDir);
  if (!member) {
    if (segNames.length > 0 || snapFiles.length > 0) {
      throw new StorageCorruptError(dataDir, metaPath(dataDir), 0, 'member meta file is missing but raft log or snapshot files exist');
    }
    if (!opts.identity || opts.readOnly) throw new StorageError(`data dir ${dataDir} holds no member (${metaPath(dataDir)} not found)`);
    writeMemberMeta(fs, dataDir, opts.identity);
    member = opts.identity;
  }
  checkIdentity(dataDir, member, opts);
  if (!opts.readOnly) {
    fs.mkdirp(walDir(dataDir));
    fs.mkdirp(snapDir(dataDir));
    // In member/ only our own: another process's lock file may be on its way in.
    removeTempFiles(fs, memberDir(dataDir), warnings, path.basename(metaPath(dataDir)) + TEMP_SUFFIX);
    removeTempFiles(fs, walDir(dataDir), warnings);
    removeTempFiles(fs, snapDir(dataDir), warnings);
  }

  // The newest snapshot (verified in full); older ones are kept for operators only.
  let snap = EMPTY_SNAPSHOT;
  const newestSnap = snapFiles.at(-1);
  if (newestSnap) snap = readSnapshotFile(fs, dataDir, newestSnap, member.memberId).meta;

  let log: MemLog | undefined;
  let hs: HardState = { term: 0, vote: 0n, commit: 0 };
  let hsAt = { file: '', offset: 0 };
  const segments: SegmentInfo[] = [];
  let tail: Recovered['tail'];

  segNames.forEach((seg, i) => {
    const corrupt = (offset: number, detail: string) => new StorageCorruptError(dataDir, seg.file, offset, detail);
    const prevSeq = segNames[i - 1]?.seq;
    if (prevSeq === seg.seq) throw corrupt(24, `two segments have sequence ${seg.seq} (a file from another data dir?)`);
    if (prevSeq !== undefined && seg.seq !== prevSeq + 1) throw corrupt(24, `segment sequence jumps from ${prevSeq} to ${seg.seq}: a segment is missing`);
    const newest = i === segNames.length - 1;
    const buf = fs.readFile(seg.file);
    const scan = scanSegment(buf, { dataDir, file: seg.file, memberId: member.memberId, seq: seg.seq, copyEntries: !opts.readOnly });
    const h = scan.header;
    if (h.prevIndex + 1 !== seg.firstIndex) throw corrupt(32, `segment header says it starts at entry ${h.prevIndex + 1}, its name says ${seg.firstIndex}`);
    if (!log) {
      log = new MemLog(h.prevIndex, h.prevTerm);
      hs = h.hardState;
      hsAt = { file: seg.file, offset: 48 };
    } else {
      if (h.prevIndex !== log.lastIndex() || h.prevTerm !== log.lastTerm()) {
        throw corrupt(
          32,
          `segment follows entry ${h.prevIndex} term ${h.prevTerm}, but the segments before it end at entry ${log.lastIndex()} term ${log.lastTerm()}`,
        );
      }
      if (!sameHardState(h.hardState, hs)) throw corrupt(48, 'segment header hard state differs from the last one before it');
    }
    const info: SegmentInfo = { seq: seg.seq, file: seg.file, maxIndex: 0, hasSnapshot: false };
    for (const { offset, record } of scan.records) {
      switch (record.type) {
        case RecordType.Entry: {
          const e = record.entry;
          if (e.index !== log.lastIndex() + 1) throw corrupt(offset, `entry ${e.index} does not continue the log, which ends at ${log.lastIndex()}`);
          log.put(e);
          info.maxIndex = Math.max(info.maxIndex, e.index);
          break;
        }
        case RecordType.HardState:
          hs = record.hardState;
          hsAt = { file: seg.file, offset };
          break;
        case RecordType.Snapshot:
          log.reset(record.index, record.term);
          info.maxIndex = Math.max(info.maxIndex, record.index);
          info.hasSnapshot = true;
          break;
        case RecordType.Truncate:
          if (record.index < log.baseIndex) {
            // Back past where this replay started: the entries before lie in compacted segments.
            log.reset(record.index, record.term);
          } else if (log.term(record.index) !== record.term) {
            throw corrupt(offset, `truncation to entry ${record.index} term ${record.term} disagrees with the log (term ${log.term(record.index) ?? 'none'})`);
          } else {
            log.truncate(record.index);
          }
          break;
        case RecordType.Seal:
          break;
      }
    }
    segments.push(info);
    const end = scan.end;
    if (end.kind === 'sealed') return;
    if (end.kind === 'clean') {
      if (!newest) throw corrupt(end.offset, 'segment ends without its seal record (truncated?)');
      tail = { info, writeOff: end.offset, zeroUpTo: end.offset };
      return;
    }
    if (newest && !end.verified && end.intactAt === undefined) {
      const zeroUpTo = endOfNonZero(buf);
      const msg = opts.readOnly
        ? 'left out a torn record at the end of the raft log (it was never acknowledged)'
        : 'cut off a torn record at the end of the raft log (it was never acknowledged)';
      warnings.push({ msg, file: seg.file, offset: end.offset, bytes: zeroUpTo - end.offset, reason: end.reason });
      tail = { info, writeOff: end.offset, zeroUpTo };
      return;
    }
    throw corrupt(end.offset, end.intactAt === undefined ? end.reason : `${end.reason}, and intact records follow at offset ${end.intactAt}`);
  });

  const replayed: MemLog = log ?? new MemLog(0, 0);
  if (replayed.baseIndex > snap.index) {
    const at = segNames[0]?.file ?? walDir(dataDir);
    throw new StorageCorruptError(
      dataDir,
      at,
      32,
      `the raft log starts after entry ${replayed.baseIndex} but the newest snapshot is at ${snap.index}: entries are missing`,
    );
  }
  const last = replayed.term(snap.index) === snap.term ? replayed.lastIndex() : snap.index;
  if (hs.commit > last) {
    throw new StorageCorruptError(dataDir, hsAt.file, hsAt.offset, `hard state commits entry ${hs.commit} but the log ends at ${last}: entries are missing`);
  }
  const hardState = hs;
  return { member, log: replayed, hardState, snapshot: snap, segments, tail };
}
