// etcd's KV applier (etcdserver/apply.go, v3.4): what Range, Put, DeleteRange, Txn
// and Compaction do to the MVCC store and what they answer. Errors are thrown as
// KvError; the store turns them into results after rolling back.

import { ErrCompacted, ErrFutureRev, ErrKeyNotFound, ErrLeaseNotFound } from './errors.js';
import { asBuffer, keyRange, ReadTxn, WriteTxn, type Revisions, type TxnRead } from './mvccTxn.js';
import type { RevisionTables } from './revisionTables.js';
import {
  CompareResult,
  CompareTarget,
  SortOrder,
  SortTarget,
  type CompactionRequest,
  type CompactionResponse,
  type Compare,
  type DeleteRangeRequest,
  type DeleteRangeResponse,
  type KeyValue,
  type KvRequest,
  type KvResponse,
  type PutRequest,
  type PutResponse,
  type RangeRequest,
  type RangeResponse,
  type RequestOp,
  type ResponseOp,
  type TxnRequest,
  type TxnResponse,
} from './types.js';

export interface ApplyContext {
  readonly tables: RevisionTables;
  readonly revs: Revisions;
  leaseExists(id: bigint): boolean;
  /** Runs fn so that its writes are undone if it throws (an SQLite savepoint). */
  atomically<T>(fn: () => T): T;
}

const EMPTY = Buffer.alloc(0);

export function applyKvRequest(ctx: ApplyContext, req: KvRequest): KvResponse {
  if ('range' in req) return { range: applyRange(new ReadTxn(ctx.tables, ctx.revs), req.range) };
  if ('put' in req) return { put: applyPut(ctx, req.put) };
  if ('deleteRange' in req) return { deleteRange: applyDeleteRange(ctx, req.deleteRange) };
  if ('txn' in req) return { txn: applyTxn(ctx, req.txn) };
  if ('compaction' in req) return { compaction: applyCompaction(ctx, req.compaction) };
  throw new Error(`applyKvRequest: unknown request kind ${Object.keys(req).join(',')}`);
}

// --- Range

export function applyRange(txn: TxnRead, r: RangeRequest): RangeResponse {
  const requested = r.sortOrder ?? SortOrder.None;
  const target = r.sortTarget ?? SortTarget.Key;
  const minMod = r.minModRevision ?? 0;
  const maxMod = r.maxModRevision ?? 0;
  const minCreate = r.minCreateRevision ?? 0;
  const maxCreate = r.maxCreateRevision ?? 0;
  const userLimit = r.limit ?? 0;

  // Sorting and filtering need every match; otherwise fetch one extra to learn `more`.
  // As in etcd 3.4, a non-key target with order NONE still fetches only limit+1 keys
  // (and sorts just those): the requested order decides, not the effective one.
  let limit = userLimit;
  if (requested !== SortOrder.None || minMod !== 0 || maxMod !== 0 || minCreate !== 0 || maxCreate !== 0) limit = 0;
  if (limit > 0) limit += 1;

  // keys_only is pushed down to skip reading values, unless values are sorted on.
  const keysOnly = r.keysOnly ?? false;
  const sortsOnValue = target === SortTarget.Value; // a value target sorts even with order NONE
  const rr = txn.range(keyRange(r.key, r.rangeEnd), {
    limit,
    rev: r.revision ?? 0,
    countOnly: r.countOnly ?? false,
    keysOnly: keysOnly && !sortsOnValue,
  });

  let kvs = rr.kvs;
  if (maxMod !== 0) kvs = kvs.filter((kv) => kv.modRevision <= maxMod);
  if (minMod !== 0) kvs = kvs.filter((kv) => kv.modRevision >= minMod);
  if (maxCreate !== 0) kvs = kvs.filter((kv) => kv.createRevision <= maxCreate);
  if (minCreate !== 0) kvs = kvs.filter((kv) => kv.createRevision >= minCreate);

  // Results come in ascending key order; a non-key target sorts ascending by default.
  let order = requested;
  if (target !== SortTarget.Key && order === SortOrder.None) order = SortOrder.Ascend;
  if (order === SortOrder.Descend && target === SortTarget.Key) kvs = kvs.slice().reverse();
  else if (order !== SortOrder.None && target !== SortTarget.Key) {
    // Stable, so equal sort keys stay in key order (Go's sort is not; order of ties is unspecified there).
    const cmp = sortComparator(target);
    kvs = kvs.slice().sort(order === SortOrder.Descend ? (a, b) => cmp(b, a) : cmp);
  }

  let more = false;
  if (userLimit > 0 && kvs.length > userLimit) {
    kvs = kvs.slice(0, userLimit);
    more = true;
  }
  if (keysOnly && sortsOnValue) kvs = kvs.map((kv) => ({ ...kv, value: EMPTY }));
  return { header: { revision: rr.rev }, kvs, more, count: rr.count };
}

function sortComparator(target: SortTarget): (a: KeyValue, b: KeyValue) => number {
  switch (target) {
    case SortTarget.Version:
      return (a, b) => a.version - b.version;
    case SortTarget.Create:
      return (a, b) => a.createRevision - b.createRevision;
    case SortTarget.Mod:
      return (a, b) => a.modRevision - b.modRevision;
    case SortTarget.Value:
      return (a, b) => Buffer.compare(a.value, b.value);
    default:
      return (a, b) => Buffer.compare(a.key, b.key);
  }
}

// --- Put and DeleteRange

function applyPut(ctx: ApplyContext, p: PutRequest): PutResponse {
  const lease = p.lease ?? 0n;
  if (lease !== 0n && !ctx.leaseExists(lease)) throw ErrLeaseNotFound;
  const txn = new WriteTxn(ctx.tables, ctx.revs);
  const resp = putIn(txn, p);
  txn.end();
  return resp;
}

function putIn(txn: WriteTxn, p: PutRequest): PutResponse {
  const key = asBuffer(p.key);
  let value = p.value ? asBuffer(p.value) : EMPTY;
  let lease = p.lease ?? 0n;
  let prev: KeyValue | undefined;
  if (p.ignoreValue || p.ignoreLease || p.prevKv) prev = txn.range(keyRange(key)).kvs[0];
  if (p.ignoreValue || p.ignoreLease) {
    // ignore_{value,lease} take them from the previous key-value, which must exist.
    if (!prev) throw ErrKeyNotFound;
    if (p.ignoreValue) value = prev.value;
    if (p.ignoreLease) lease = prev.lease;
  }
  const resp: PutResponse = { header: { revision: txn.put(key, value, lease) } };
  if (p.prevKv && prev) resp.prevKv = prev;
  return resp;
}

function applyDeleteRange(ctx: ApplyContext, d: DeleteRangeRequest): DeleteRangeResponse {
  const txn = new WriteTxn(ctx.tables, ctx.revs);
  const resp = deleteIn(txn, d);
  txn.end();
  return resp;
}

function deleteIn(txn: WriteTxn, d: DeleteRangeRequest): DeleteRangeResponse {
  const r = keyRange(d.key, d.rangeEnd);
  const prevKvs = d.prevKv ? txn.range(r).kvs : [];
  const { deleted, rev } = txn.deleteRange(r);
  return { header: { revision: rev }, deleted, prevKvs };
}

// --- Txn: compares of every nested level are evaluated first, against the state
// before the txn; then the chosen ops are checked; then applied as one revision.

interface TxnPlan {
  succeeded: boolean;
  ops: RequestOp[];
  /** For each op that is a nested txn, its plan. */
  nested: Map<number, TxnPlan>;
}

function planTxn(view: TxnRead, t: TxnRequest): TxnPlan {
  const succeeded = (t.compare ?? []).every((c) => applyCompare(view, c));
  const ops = (succeeded ? t.success : t.failure) ?? [];
  const nested = new Map<number, TxnPlan>();
  ops.forEach((op, i) => {
    if ('requestTxn' in op) nested.set(i, planTxn(view, op.requestTxn));
  });
  return { succeeded, ops, nested };
}

const ABSENT: KeyValue = { key: EMPTY, createRevision: 0, modRevision: 0, version: 0, value: EMPTY, lease: 0n };

function applyCompare(view: TxnRead, c: Compare): boolean {
  const kvs = view.range(keyRange(c.key, c.rangeEnd)).kvs;
  if (kvs.length === 0) {
    // A missing key has no value, not an empty one: value compares always fail.
    if (c.target === CompareTarget.Value) return false;
    return compareKv(c, ABSENT);
  }
  return kvs.every((kv) => compareKv(c, kv));
}

function compareKv(c: Compare, kv: KeyValue): boolean {
  let result: number;
  switch (c.target) {
    case CompareTarget.Value:
      result = Buffer.compare(kv.value, c.value ? asBuffer(c.value) : EMPTY);
      break;
    case CompareTarget.Create:
      result = Math.sign(kv.createRevision - (c.createRevision ?? 0));
      break;
    case CompareTarget.Mod:
      result = Math.sign(kv.modRevision - (c.modRevision ?? 0));
      break;
    case CompareTarget.Version:
      result = Math.sign(kv.version - (c.version ?? 0));
      break;
    case CompareTarget.Lease: {
      const want = c.lease ?? 0n;
      result = kv.lease === want ? 0 : kv.lease > want ? 1 : -1;
      break;
    }
    default:
      result = 0;
  }
  switch (c.result) {
    case CompareResult.Equal:
      return result === 0;
    case CompareResult.NotEqual:
      return result !== 0;
    case CompareResult.Greater:
      return result > 0;
    case CompareResult.Less:
      return result < 0;
    default:
      return true;
  }
}

function forEachOp(plan: TxnPlan, f: (op: RequestOp) => void): void {
  plan.ops.forEach((op, i) => {
    const nested = plan.nested.get(i);
    if (nested) forEachOp(nested, f);
    else f(op);
  });
}

function checkTxnOps(ctx: ApplyContext, view: TxnRead, plan: TxnPlan): void {
  // As etcd: every put is checked before any range.
  forEachOp(plan, (op) => {
    if (!('requestPut' in op)) return;
    const p = op.requestPut;
    if ((p.ignoreValue || p.ignoreLease) && view.range(keyRange(p.key)).kvs.length === 0) throw ErrKeyNotFound;
    const lease = p.lease ?? 0n;
    if (lease !== 0n && !ctx.leaseExists(lease)) throw ErrLeaseNotFound;
  });
  forEachOp(plan, (op) => {
    if (!('requestRange' in op)) return;
    const rev = op.requestRange.revision ?? 0;
    if (rev === 0) return;
    if (rev > view.rev()) throw ErrFutureRev;
    if (rev < ctx.revs.compacted) throw ErrCompacted;
  });
}

export function applyTxn(ctx: ApplyContext, t: TxnRequest): TxnResponse {
  const view = new ReadTxn(ctx.tables, ctx.revs);
  const plan = planTxn(view, t);
  checkTxnOps(ctx, view, plan);
  // etcd panics when an op fails after the checks (e.g. ignore_value on a key an
  // earlier op of the same txn deleted); we undo the txn and answer the error.
  return ctx.atomically(() => {
    const txn = new WriteTxn(ctx.tables, ctx.revs);
    const resp = runTxn(txn, plan);
    resp.header.revision = txn.rev();
    txn.end();
    return resp;
  });
}

function runTxn(txn: WriteTxn, plan: TxnPlan): TxnResponse {
  const responses: ResponseOp[] = [];
  plan.ops.forEach((op, i) => {
    const nested = plan.nested.get(i);
    if (nested) responses.push({ responseTxn: runTxn(txn, nested) });
    else if ('requestRange' in op) responses.push({ responseRange: applyRange(txn, op.requestRange) });
    else if ('requestPut' in op) responses.push({ responsePut: putIn(txn, op.requestPut) });
    else if ('requestDeleteRange' in op) responses.push({ responseDeleteRange: deleteIn(txn, op.requestDeleteRange) });
    // An empty op (the API layer refuses them) does nothing.
  });
  // Nested responses keep revision 0 in their header, as etcd's do.
  return { header: { revision: 0 }, succeeded: plan.succeeded, responses };
}

// --- Compaction

function applyCompaction(ctx: ApplyContext, c: CompactionRequest): CompactionResponse {
  const rev = c.revision;
  if (rev <= ctx.revs.compacted) throw ErrCompacted;
  if (rev > ctx.revs.current) throw ErrFutureRev;
  ctx.tables.compact(ctx.revs.compacted, rev);
  ctx.revs.compacted = rev;
  return { header: { revision: ctx.revs.current } };
}
