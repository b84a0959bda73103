// Keeping the entries an etcd survivor holds past its commit index: in a scratch
// copy of its WAL, one HardState record is appended to the newest segment with
// commit = the last entry's index (term = the larger of the hard state's and the
// last entry's; the vote kept), its CRC continuing the chain. etcd, started on the
// copy with --force-new-cluster, then applies every entry itself. Only ever called
// on a copy: the survivor's own files are never written.
import fs from 'node:fs';
import { crc32c } from '../common/crc32c.js';
import { listWalSegments, scanWal, WAL_RECORD } from '../etcdfile/walRecord.js';
import { walEntries, walHeaderFacts } from '../etcdfile/walLog.js';
import { ProtoWriter } from '../common/protobufWire.js';

export interface WalTailCommit {
  /** entries past the old commit index, now committed */
  pastCommit: number;
  appended: boolean;
  commit: number;
}

/** walpb.Record{type, crc, data} framed as etcd frames it: a length word (padding count in its top byte), the record, zero padding to 8 bytes. */
function frame(type: number, crc: number, data: Buffer): Buffer {
  const rec = new ProtoWriter().int(1, type).int(2, crc).bytesAlways(3, data).finish();
  const pad = (8 - (rec.length % 8)) % 8;
  const out = Buffer.alloc(8 + rec.length + pad);
  const word = BigInt(rec.length) | (pad > 0 ? BigInt(0x80 | pad) << 56n : 0n);
  out.writeBigUInt64LE(word, 0);
  rec.copy(out, 8);
  return out;
}

function readTail(walDir: string) {
  const segments = listWalSegments(walDir);
  if (segments.length === 0) throw new Error(`etcd WAL directory ${walDir} holds no segments`);
  const scan = scanWal(segments);
  const facts = walHeaderFacts(scan.records);
  const first = facts.snapshots[0];
  const { entries } = walEntries(scan.records, first ? { index: first.index, term: first.term } : { index: 0, term: 0 });
  return { scan, hs: facts.hardState, last: entries.at(-1) };
}

/** The WAL's commit index, read only: what etcd must have applied before its db holds the committed log. */
export function walCommitIndex(walDir: string): number {
  return readTail(walDir).hs.commit;
}

export function commitWalTail(walDir: string): WalTailCommit {
  const { scan, hs, last } = readTail(walDir);
  if (!last || last.index <= hs.commit) return { pastCommit: 0, appended: false, commit: hs.commit };
  const state = new ProtoWriter().int(1, Math.max(hs.term, last.term)).int(2, hs.vote).int(3, last.index).finish();
  const prevCrc = scan.records.at(-1)?.crc ?? 0;
  const record = frame(WAL_RECORD.state, crc32c(state, prevCrc) >>> 0, state);
  const newest = scan.segments.at(-1)!;
  // Written where the valid records end (over a torn tail, if any); whatever follows is zeroed so etcd reads no stray record after it.
  const fd = fs.openSync(newest.file, 'r+');
  try {
    const size = fs.fstatSync(fd).size;
    const at = newest.end;
    const after = Buffer.alloc(Math.max(0, size - at - record.length));
    fs.writeSync(fd, record, 0, record.length, at);
    if (after.length > 0) fs.writeSync(fd, after, 0, after.length, at + record.length);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return { pastCommit: last.index - hs.commit, appended: true, commit: last.index };
}
