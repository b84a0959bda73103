// Test-side WAL writing, to make fixtures from a real etcd member's WAL: records
// are re-framed (8-byte length word, padding to 8 bytes) and their CRC-32C chain
// recomputed, written as etcd writes them, so a reader sees a WAL etcd could have
// left. The records come from the reader under test (scanWal); the framing here is
// written independently of it.
import fs from 'node:fs';
import { crc32c } from '../../src/common/crc32c.js';
import { decodeEntry } from '../../src/etcdfile/raftpbCodec.js';
import { listWalSegments, scanWal, WAL_RECORD, type WalRecord } from '../../src/etcdfile/walRecord.js';

function varint(n: number | bigint): number[] {
  let v = BigInt(n);
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}

/** walpb.Record{type, crc, data} framed: length word (padding in the top byte), record, zero padding. */
export function frameRecord(type: number, crc: number, data: Buffer): Buffer {
  const body = Buffer.from([0x08, ...varint(type), 0x10, ...varint(crc >>> 0), ...(data.length > 0 ? [0x1a, ...varint(data.length)] : [])]);
  const rec = Buffer.concat([body, data]);
  const pad = (8 - (rec.length % 8)) % 8;
  const word = Buffer.alloc(8);
  let len = BigInt(rec.length);
  if (pad > 0) len |= BigInt(0x80 | pad) << 56n;
  word.writeBigUInt64LE(len);
  return Buffer.concat([word, rec, Buffer.alloc(pad)]);
}

/** The records of a one-segment WAL directory. */
export function readRecords(walDir: string): { file: string; size: number; records: WalRecord[] } {
  const segments = listWalSegments(walDir);
  if (segments.length !== 1) throw new Error(`fixture expects one WAL segment, found ${segments.length}`);
  const scan = scanWal(segments);
  return { file: segments[0].file, size: scan.segments[0].size, records: scan.records };
}

/** Rewrites the segment with `records` (new CRC chain from 0), zero-filled to its old size. */
export function writeSegment(file: string, size: number, records: readonly WalRecord[]): void {
  let crc = 0;
  const parts: Buffer[] = [];
  for (const r of records) {
    if (r.type === WAL_RECORD.crc) parts.push(frameRecord(r.type, crc, Buffer.alloc(0)));
    else {
      crc = crc32c(r.data, crc) >>> 0;
      parts.push(frameRecord(r.type, crc, r.data));
    }
  }
  const bytes = Buffer.concat(parts);
  fs.writeFileSync(file, Buffer.concat([bytes, Buffer.alloc(Math.max(0, size - bytes.length))]));
}

/**
 * A cleanly stopped member's WAL with its trailing hard state records cut off: the
 * last `n` entries stay, every hard state after the one that committed the entry
 * before them is dropped. Returns the index range left past the commit.
 */
export function cutTrailingHardStates(walDir: string, n: number): { from: number; to: number; commit: number } {
  const { file, size, records } = readRecords(walDir);
  const entryIndex = (r: WalRecord) => decodeEntry(r.data).index;
  const entries = records.filter((r) => r.type === WAL_RECORD.entry);
  const last = entryIndex(entries.at(-1)!);
  const from = last - n + 1;
  const firstCut = records.findIndex((r) => r.type === WAL_RECORD.entry && entryIndex(r) === from);
  const kept = records.filter((r, i) => i < firstCut || r.type !== WAL_RECORD.state);
  writeSegment(file, size, kept);
  return { from, to: last, commit: from - 1 };
}

/** raftpb.Entry{type=1, term=2, index=3, data=4}, as gogoproto writes it (every scalar present). */
export function encodeEntry(type: number, term: number, index: number, data: Buffer): Buffer {
  return Buffer.concat([Buffer.from([0x08, ...varint(type), 0x10, ...varint(term), 0x18, ...varint(index), 0x22, ...varint(data.length)]), data]);
}

/** The byte offset just after the last record of a one-segment WAL. */
export function endOfRecords(walDir: string): number {
  return scanWal(listWalSegments(walDir)).segments[0].end;
}
