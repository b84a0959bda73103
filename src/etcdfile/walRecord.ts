// etcd's WAL framing (E34 wal/encoder.go, decoder.go, walpb/record.proto), read
// from segment files `<seq>-<index>.wal` (16 hex digits each) in name order:
//
//   frame   8-byte little-endian length word; when its top bit is set, bits 56..58
//           say how many zero bytes pad the record to 8-byte alignment. The low 56
//           bits are the record's length. A zero word ends the segment (the rest is
//           preallocated zeros).
//   record  walpb.Record{type=1 int64, crc=2 uint32, data=3 bytes}
//   types   1 metadata, 2 entry, 3 hard state, 4 crc, 5 snapshot mark
//   crc     CRC-32C over every record's data, continued from record to record and
//           across segments; a crc record (first in each segment) carries the value
//           so far and restarts the chain from it.
//
// A record that fails in the newest segment and has a zero-filled 512-byte sector
// is a torn write (etcd's isTornEntry: cut off at start); it and what follows are
// reported, never used. Any other failure is damage: EtcdWalError with the offset.

import fs from 'node:fs';
import path from 'node:path';
import { crc32c } from '../common/crc32c.js';
import { ProtoReader } from '../common/protobufWire.js';
import { EtcdWalError } from './walErrors.js';

export const WAL_RECORD = { metadata: 1, entry: 2, state: 3, crc: 4, snapshot: 5 } as const;

const FRAME_BYTES = 8;
const SECTOR = 512;
const LENGTH_MASK = 0x00ff_ffff_ffff_ffffn;
const ZERO_CHUNK = Buffer.alloc(64 * 1024);

export interface WalRecord {
  type: number;
  crc: number;
  /** A view into the segment's bytes. */
  data: Buffer;
  file: string;
  /** Byte offset of the record's length word. */
  offset: number;
}

export interface WalSegmentName {
  file: string;
  seq: number;
  index: number;
}

/** A tail of the newest segment that is not used: a torn write, or stray bytes after the records. */
export interface WalTail {
  file: string;
  offset: number;
  bytes: number;
  reason: string;
}

export interface WalScan {
  segments: Array<WalSegmentName & { size: number; records: number; end: number }>;
  records: WalRecord[];
  tail?: WalTail;
}

export function parseWalName(name: string): { seq: number; index: number } | undefined {
  const m = /^([0-9a-f]{16})-([0-9a-f]{16})\.wal$/.exec(name);
  if (!m) return undefined;
  return { seq: parseInt(m[1], 16), index: parseInt(m[2], 16) };
}

/** The segments of a WAL directory in name order; the sequence must not jump (etcd's isValidSeq). */
export function listWalSegments(dir: string): WalSegmentName[] {
  const out: WalSegmentName[] = [];
  for (const name of fs.readdirSync(dir).sort()) {
    const p = parseWalName(name);
    if (p) out.push({ file: path.join(dir, name), ...p });
  }
  for (let i = 1; i < out.length; i++) {
    if (out[i].seq !== out[i - 1].seq + 1) {
      throw new EtcdWalError(out[i].file, 0, `segment sequence jumps from ${out[i - 1].seq} to ${out[i].seq}: a segment is missing`);
    }
  }
  return out;
}

function isZero(b: Buffer): boolean {
  for (let off = 0; off < b.length; off += ZERO_CHUNK.length) {
    const chunk = b.subarray(off, Math.min(b.length, off + ZERO_CHUNK.length));
    if (!chunk.equals(ZERO_CHUNK.subarray(0, chunk.length))) return false;
  }
  return true;
}

/** etcd's isTornEntry: some 512-byte sector (aligned by file offset) of the record is all zeros. */
function hasZeroSector(buf: Buffer, from: number, to: number): boolean {
  let off = from;
  while (off < to) {
    const end = Math.min(to, (Math.floor(off / SECTOR) + 1) * SECTOR);
    if (isZero(buf.subarray(off, end))) return true;
    off = end;
  }
  return false;
}

function decodeRecord(data: Buffer): { type: number; crc: number; data: Buffer } {
  const r = new ProtoReader(data);
  const rec: { type: number; crc: number; data: Buffer } = { type: 0, crc: 0, data: Buffer.alloc(0) };
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1 && wire === 0) rec.type = Number(r.int64());
    else if (field === 2 && wire === 0) rec.crc = Number(r.uint64() & 0xffff_ffffn);
    else if (field === 3 && wire === 2) rec.data = r.bytes();
    else r.skip(wire);
  }
  return rec;
}

/**
 * Reads every record of the segments, checking the framing, the record types and
 * the CRC chain. The whole of each segment is read into memory (64 MB at most).
 */
export function scanWal(segmentFiles: WalSegmentName[]): WalScan {
  const scan: WalScan = { segments: [], records: [] };
  let crc = 0;
  segmentFiles.forEach((seg, i) => {
    const last = i === segmentFiles.length - 1;
    const buf = fs.readFileSync(seg.file);
    let off = 0;
    let count = 0;
    const damaged = (at: number, detail: string) => new EtcdWalError(seg.file, at, detail);
    /** Ends the newest segment at `at` (reported), or throws for an older one. */
    const stop = (at: number, detail: string, torn: boolean): void => {
      if (last && torn) scan.tail = { file: seg.file, offset: at, bytes: buf.length - at, reason: detail };
      else throw damaged(at, detail);
    };
    // Each iteration consumes at least one 8-byte frame: bounded by the file size.
    while (off < buf.length) {
      if (buf.length - off < FRAME_BYTES) {
        if (!isZero(buf.subarray(off))) stop(off, `${buf.length - off} bytes after the last record are too few for a length word`, true);
        break;
      }
      const word = buf.readBigInt64LE(off);
      if (word === 0n) {
        // The end of the records; the rest must be zeros (preallocated).
        if (!isZero(buf.subarray(off))) {
          stop(off, 'non-zero bytes after a zero length word (records lost after this point, or a zeroed length word)', true);
        }
        break;
      }
      const length = Number(BigInt.asUintN(64, word) & LENGTH_MASK);
      const pad = word < 0n ? Number((BigInt.asUintN(64, word) >> 56n) & 7n) : 0;
      const start = off + FRAME_BYTES;
      if (length > buf.length - start - pad) {
        stop(off, `record of ${length} bytes (+${pad} padding) runs past the end of the file (${buf.length} bytes)`, true);
        break;
      }
      const body = buf.subarray(start, start + length);
      const torn = hasZeroSector(buf, start, start + length);
      let rec: { type: number; crc: number; data: Buffer };
      try {
        rec = decodeRecord(body);
      } catch (err) {
        stop(off, `record does not decode (${(err as Error).message})`, torn);
        break;
      }
      if (rec.type < WAL_RECORD.metadata || rec.type > WAL_RECORD.snapshot) {
        stop(off, `bad record type ${rec.type}`, torn);
        break;
      }
      if (rec.type === WAL_RECORD.crc) {
        if (crc !== 0 && rec.crc !== crc) {
          stop(off, `crc record says ${rec.crc.toString(16)}, the chain so far gives ${crc.toString(16)}`, torn);
          break;
        }
        crc = rec.crc;
      } else {
        const next = crc32c(rec.data, crc) >>> 0;
        if (next !== rec.crc) {
          stop(off, `CRC mismatch: record says ${rec.crc.toString(16)}, its data gives ${next.toString(16)}`, torn);
          break;
        }
        crc = next;
      }
      if (count === 0 && rec.type !== WAL_RECORD.crc) throw damaged(off, `the segment starts with a record of type ${rec.type}, not a crc record`);
      scan.records.push({ type: rec.type, crc: rec.crc, data: rec.data, file: seg.file, offset: off });
      count++;
      off = start + length + pad;
    }
    scan.segments.push({ ...seg, size: buf.length, records: count, end: Math.min(off, buf.length) });
  });
  return scan;
}
