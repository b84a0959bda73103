// A raft log segment file: a fixed header, then records (logRecord.ts), then zeros
// up to the preallocated size. A segment that was rolled over ends with a Seal
// record; only the newest segment is ever open for appends.
//
// Header (80 bytes):
//   magic "LBWAL001" 8 | memberId u64 | clusterId u64 | seq u64 |
//                   (the cluster ID is informational: --force-new-cluster keeps the log)
//   prevIndex u64 | prevTerm u64 |                  the last log entry before this segment
//   hardState term u64 | vote u64 | commit u64 |    the hard state when it was created
//   crc32c(bytes 0..72) u32 | reserved u32

import { crc32c } from '../common/crc32c.js';
import type { HardState } from '../raft/types.js';
import { StorageCorruptError } from './errors.js';
import { findIntactRecord, readRecord, RecordType, type LogRecord } from './logRecord.js';
import { formatId } from '../common/ids.js';
import { getId, getU64, putId, putU64 } from './u64.js';

export const SEGMENT_HEADER = 80;
const MAGIC = Buffer.from('LBWAL001');

export interface SegmentHeader {
  memberId: bigint;
  clusterId: bigint;
  seq: number;
  prevIndex: number;
  prevTerm: number;
  hardState: HardState;
}

export function encodeSegmentHeader(h: SegmentHeader): Buffer {
  const buf = Buffer.alloc(SEGMENT_HEADER);
  MAGIC.copy(buf, 0);
  putId(buf, 8, h.memberId);
  putId(buf, 16, h.clusterId);
  putU64(buf, 24, h.seq);
  putU64(buf, 32, h.prevIndex);
  putU64(buf, 40, h.prevTerm);
  putU64(buf, 48, h.hardState.term);
  putId(buf, 56, h.hardState.vote);
  putU64(buf, 64, h.hardState.commit);
  buf.writeUInt32LE(crc32c(buf.subarray(0, 72)), 72);
  return buf;
}

export interface ScannedRecord {
  offset: number;
  record: LogRecord;
}

export type SegmentEnd =
  /** Ends with its Seal record at `offset`. */
  | { kind: 'sealed'; offset: number }
  /** Records end at `offset`; only zeros (or the end of the file) follow. */
  | { kind: 'clean'; offset: number }
  /**
   * The record at `offset` is unusable; `intactAt` is the next intact record, if any.
   * `verified`: its frame and checksum are good (so it is not a torn write).
   */
  | { kind: 'bad'; offset: number; reason: string; verified: boolean; intactAt?: number };

export interface SegmentScan {
  header: SegmentHeader;
  records: ScannedRecord[];
  end: SegmentEnd;
}

export interface SegmentContext {
  dataDir: string;
  file: string;
  memberId: bigint;
  seq: number;
  /** false: entries are views of `buf` (a read-only opening, which keeps nothing for long); see readRecord */
  copyEntries?: boolean;
}

/** Reads a whole segment. Header damage or a file of another member throws; record damage is reported in `end`. */
export function scanSegment(buf: Buffer, ctx: SegmentContext): SegmentScan {
  const corrupt = (offset: number, detail: string) => new StorageCorruptError(ctx.dataDir, ctx.file, offset, detail);
  if (buf.length < SEGMENT_HEADER) throw corrupt(buf.length, `file is ${buf.length} bytes, shorter than a segment header`);
  if (!buf.subarray(0, 8).equals(MAGIC)) throw corrupt(0, 'not a raft log segment (bad magic)');
  if (buf.readUInt32LE(72) !== crc32c(buf.subarray(0, 72))) throw corrupt(0, 'segment header checksum mismatch');
  const header: SegmentHeader = {
    memberId: getId(buf, 8),
    clusterId: getId(buf, 16),
    seq: getU64(buf, 24),
    prevIndex: getU64(buf, 32),
    prevTerm: getU64(buf, 40),
    hardState: { term: getU64(buf, 48), vote: getId(buf, 56), commit: getU64(buf, 64) },
  };
  if (header.memberId !== ctx.memberId) {
    throw corrupt(8, `segment belongs to member ${formatId(header.memberId)}, not ${formatId(ctx.memberId)} (a file from another data dir?)`);
  }
  if (header.seq !== ctx.seq) throw corrupt(24, `segment header says sequence ${header.seq}, its name says ${ctx.seq}`);

  const records: ScannedRecord[] = [];
  let off = SEGMENT_HEADER;
  for (;;) {
    const r = readRecord(buf, off, ctx.copyEntries ?? true);
    if (r.kind === 'record') {
      records.push({ offset: off, record: r.record });
      if (r.record.type === RecordType.Seal) {
        if (r.record.seq !== header.seq)
          return { header, records, end: { kind: 'bad', offset: off, reason: `seal record for sequence ${r.record.seq}`, verified: true } };
        return { header, records, end: { kind: 'sealed', offset: off } };
      }
      off = r.next;
      continue;
    }
    const intactAt = findIntactRecord(buf, r.kind === 'end' ? off : off + 1);
    if (r.kind === 'end') {
      if (intactAt === undefined && isZeroFrom(buf, off)) return { header, records, end: { kind: 'clean', offset: off } };
      return { header, records, end: { kind: 'bad', offset: off, reason: 'unreadable bytes where the records end', verified: false, intactAt } };
    }
    return { header, records, end: { kind: 'bad', offset: off, reason: r.reason, verified: r.verified, intactAt } };
  }
}

function isZeroFrom(buf: Buffer, from: number): boolean {
  for (let i = from; i < buf.length; i++) if (buf[i] !== 0) return false;
  return true;
}

/** What the storage tracks of each retained segment. */
export interface SegmentInfo {
  seq: number;
  file: string;
  /** Highest entry (or snapshot marker) index written in it: it may go once the log is compacted past that. */
  maxIndex: number;
  /** Starts with a snapshot marker: every segment before it is obsolete. */
  hasSnapshot: boolean;
}
