// The KV requests Raft entries carry, in etcd's InternalRaftRequest fields and
// messages (etcdserverpb): range=3, put=4, delete_range=5, txn=6, compaction=7.

import { ProtoReader, type ProtoWriter } from '../common/protobufWire.js';
import type { CompactionRequest, Compare, DeleteRangeRequest, KvRequest, PutRequest, RangeRequest, RequestOp, TxnRequest } from './types.js';

const F = { range: 3, put: 4, deleteRange: 5, txn: 6, compaction: 7 } as const;

const EMPTY = Buffer.alloc(0);

/** Writes the request as its InternalRaftRequest field. */
export function writeKvRequest(w: ProtoWriter, request: KvRequest): void {
  if ('range' in request) w.message(F.range, (m) => writeRange(m, request.range));
  else if ('put' in request) w.message(F.put, (m) => writePut(m, request.put));
  else if ('deleteRange' in request) w.message(F.deleteRange, (m) => writeDeleteRange(m, request.deleteRange));
  else if ('txn' in request) w.message(F.txn, (m) => writeTxn(m, request.txn));
  else w.message(F.compaction, (m) => writeCompaction(m, request.compaction));
}

/** The KV request in InternalRaftRequest field `field`, if it is one of theirs; keys and values are views into `data`. */
export function readKvRequest(field: number, data: Uint8Array): KvRequest | undefined {
  switch (field) {
    case F.range:
      return { range: readRange(data) };
    case F.put:
      return { put: readPut(data) };
    case F.deleteRange:
      return { deleteRange: readDeleteRange(data) };
    case F.txn:
      return { txn: readTxn(data) };
    case F.compaction:
      return { compaction: readCompaction(data) };
    default:
      return undefined;
  }
}

// --- RangeRequest: key=1 range_end=2 limit=3 revision=4 sort_order=5 sort_target=6
// serializable=7 keys_only=8 count_only=9 min_mod=10 max_mod=11 min_create=12 max_create=13

function writeRange(w: ProtoWriter, q: RangeRequest): void {
  w.bytes(1, q.key).bytes(2, q.rangeEnd);
  w.int(3, q.limit ?? 0)
    .int(4, q.revision ?? 0)
    .int(5, q.sortOrder ?? 0)
    .int(6, q.sortTarget ?? 0);
  w.bool(7, q.serializable).bool(8, q.keysOnly).bool(9, q.countOnly);
  w.int(10, q.minModRevision ?? 0).int(11, q.maxModRevision ?? 0);
  w.int(12, q.minCreateRevision ?? 0).int(13, q.maxCreateRevision ?? 0);
}

function readRange(data: Uint8Array): RangeRequest {
  const r = new ProtoReader(data);
  const q: RangeRequest = { key: EMPTY };
  while (!r.done) {
    const { field, wire } = r.tag();
    switch (field) {
      case 1:
        q.key = r.bytes();
        break;
      case 2:
        q.rangeEnd = r.bytes();
        break;
      case 3:
        q.limit = r.int64Number();
        break;
      case 4:
        q.revision = r.int64Number();
        break;
      case 5:
        q.sortOrder = r.uint();
        break;
      case 6:
        q.sortTarget = r.uint();
        break;
      case 7:
        q.serializable = r.bool();
        break;
      case 8:
        q.keysOnly = r.bool();
        break;
      case 9:
        q.countOnly = r.bool();
        break;
      case 10:
        q.minModRevision = r.int64Number();
        break;
      case 11:
        q.maxModRevision = r.int64Number();
        break;
      case 12:
        q.minCreateRevision = r.int64Number();
        break;
      case 13:
        q.maxCreateRevision = r.int64Number();
        break;
      default:
        r.skip(wire);
    }
  }
  return q;
}

// --- PutRequest: key=1 value=2 lease=3 prev_kv=4 ignore_value=5 ignore_lease=6

function writePut(w: ProtoWriter, p: PutRequest): void {
  w.bytes(1, p.key)
    .bytes(2, p.value)
    .int(3, p.lease ?? 0n);
  w.bool(4, p.prevKv).bool(5, p.ignoreValue).bool(6, p.ignoreLease);
}

function readPut(data: Uint8Array): PutRequest {
  const r = new ProtoReader(data);
  const p: PutRequest = { key: EMPTY };
  while (!r.done) {
    const { field, wire } = r.tag();
    switch (field) {
      case 1:
        p.key = r.bytes();
        break;
      case 2:
        p.value = r.bytes();
        break;
      case 3:
        p.lease = r.int64();
        break;
      case 4:
        p.prevKv = r.bool();
        break;
      case 5:
        p.ignoreValue = r.bool();
        break;
      case 6:
        p.ignoreLease = r.bool();
        break;
      default:
        r.skip(wire);
    }
  }
  return p;
}

// --- DeleteRangeRequest: key=1 range_end=2 prev_kv=3

function writeDeleteRange(w: ProtoWriter, d: DeleteRangeRequest): void {
  w.bytes(1, d.key).bytes(2, d.rangeEnd).bool(3, d.prevKv);
}

function readDeleteRange(data: Uint8Array): DeleteRangeRequest {
  const r = new ProtoReader(data);
  const d: DeleteRangeRequest = { key: EMPTY };
  while (!r.done) {
    const { field, wire } = r.tag();
    switch (field) {
      case 1:
        d.key = r.bytes();
        break;
      case 2:
        d.rangeEnd = r.bytes();
        break;
      case 3:
        d.prevKv = r.bool();
        break;
      default:
        r.skip(wire);
    }
  }
  return d;
}

// --- Compare: result=1 target=2 key=3 version=4 create_revision=5 mod_revision=6
// value=7 lease=8 range_end=64. A zero target value decodes as absent, which etcd
// treats the same way (compareKV defaults it to 0 / empty).

function writeCompare(w: ProtoWriter, c: Compare): void {
  w.int(1, c.result).int(2, c.target).bytes(3, c.key);
  w.int(4, c.version ?? 0)
    .int(5, c.createRevision ?? 0)
    .int(6, c.modRevision ?? 0);
  w.bytes(7, c.value)
    .int(8, c.lease ?? 0n)
    .bytes(64, c.rangeEnd);
}

function readCompare(data: Uint8Array): Compare {
  const r = new ProtoReader(data);
  const c: Compare = { result: 0, target: 0, key: EMPTY };
  while (!r.done) {
    const { field, wire } = r.tag();
    switch (field) {
      case 1:
        c.result = r.uint();
        break;
      case 2:
        c.target = r.uint();
        break;
      case 3:
        c.key = r.bytes();
        break;
      case 4:
        c.version = r.int64Number();
        break;
      case 5:
        c.createRevision = r.int64Number();
        break;
      case 6:
        c.modRevision = r.int64Number();
        break;
      case 7:
        c.value = r.bytes();
        break;
      case 8:
        c.lease = r.int64();
        break;
      case 64:
        c.rangeEnd = r.bytes();
        break;
      default:
        r.skip(wire);
    }
  }
  return c;
}

// --- RequestOp: request_range=1 request_put=2 request_delete_range=3 request_txn=4
// --- TxnRequest: compare=1 success=2 failure=3

function writeOp(w: ProtoWriter, op: RequestOp): void {
  if ('requestRange' in op) w.message(1, (m) => writeRange(m, op.requestRange));
  else if ('requestPut' in op) w.message(2, (m) => writePut(m, op.requestPut));
  else if ('requestDeleteRange' in op) w.message(3, (m) => writeDeleteRange(m, op.requestDeleteRange));
  else if ('requestTxn' in op) w.message(4, (m) => writeTxn(m, op.requestTxn));
  // An empty RequestOp (no oneof set) encodes as an empty message, as in etcd.
}

function readOp(data: Uint8Array): RequestOp | undefined {
  const r = new ProtoReader(data);
  let op: RequestOp | undefined;
  while (!r.done) {
    const { field, wire } = r.tag();
    switch (field) {
      case 1:
        op = { requestRange: readRange(r.bytes()) };
        break;
      case 2:
        op = { requestPut: readPut(r.bytes()) };
        break;
      case 3:
        op = { requestDeleteRange: readDeleteRange(r.bytes()) };
        break;
      case 4:
        op = { requestTxn: readTxn(r.bytes()) };
        break;
      default:
        r.skip(wire);
    }
  }
  return op;
}

function writeTxn(w: ProtoWriter, t: TxnRequest): void {
  for (const c of t.compare ?? []) w.message(1, (m) => writeCompare(m, c));
  for (const op of t.success ?? []) w.message(2, (m) => writeOp(m, op));
  for (const op of t.failure ?? []) w.message(3, (m) => writeOp(m, op));
}

function readTxn(data: Uint8Array): TxnRequest {
  const r = new ProtoReader(data);
  const compare: Compare[] = [];
  const success: RequestOp[] = [];
  const failure: RequestOp[] = [];
  while (!r.done) {
    const { field, wire } = r.tag();
    switch (field) {
      case 1:
        compare.push(readCompare(r.bytes()));
        break;
      case 2:
        success.push(readOp(r.bytes()) ?? ({} as RequestOp));
        break;
      case 3:
        failure.push(readOp(r.bytes()) ?? ({} as RequestOp));
        break;
      default:
        r.skip(wire);
    }
  }
  return { compare, success, failure };
}

// --- CompactionRequest: revision=1 physical=2

function writeCompaction(w: ProtoWriter, c: CompactionRequest): void {
  w.int(1, c.revision).bool(2, c.physical);
}

function readCompaction(data: Uint8Array): CompactionRequest {
  const r = new ProtoReader(data);
  const c: CompactionRequest = { revision: 0 };
  while (!r.done) {
    const { field, wire } = r.tag();
    switch (field) {
      case 1:
        c.revision = r.int64Number();
        break;
      case 2:
        c.physical = r.bool();
        break;
      default:
        r.skip(wire);
    }
  }
  return c;
}
