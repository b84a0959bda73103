// The checks etcd's gRPC layer makes before proposing a KV request (v3.4
// etcdserver/api/v3rpc/key.go), for the API layer to call. The applier does not
// repeat them: entries in the log have passed them on the member that proposed.

import { ErrDuplicateKey, ErrEmptyKey, ErrKeyNotFound, ErrLeaseProvided, ErrTooManyOps, ErrValueProvided } from './errors.js';
import type { DeleteRangeRequest, PutRequest, RangeRequest, RequestOp, TxnRequest } from '../kv/types.js';

/** etcd's --max-txn-ops default. */
export const DEFAULT_MAX_TXN_OPS = 128;

export function checkRangeRequest(r: RangeRequest): void {
  if (r.key.length === 0) throw ErrEmptyKey;
}

export function checkPutRequest(r: PutRequest): void {
  if (r.key.length === 0) throw ErrEmptyKey;
  if (r.ignoreValue && (r.value?.length ?? 0) !== 0) throw ErrValueProvided;
  if (r.ignoreLease && (r.lease ?? 0n) !== 0n) throw ErrLeaseProvided;
}

export function checkDeleteRequest(r: DeleteRangeRequest): void {
  if (r.key.length === 0) throw ErrEmptyKey;
}

/** Throws the EtcdError etcd would answer, or returns. */
export function checkTxnRequest(r: TxnRequest, maxTxnOps = DEFAULT_MAX_TXN_OPS): void {
  checkTxnShape(r, maxTxnOps);
  // After the cheap checks, to avoid quadratic work on oversized requests (as etcd).
  checkIntervals(r.success ?? []);
  checkIntervals(r.failure ?? []);
}

function checkTxnShape(r: TxnRequest, maxTxnOps: number): void {
  const compare = r.compare ?? [];
  const success = r.success ?? [];
  const failure = r.failure ?? [];
  const opc = Math.max(compare.length, success.length, failure.length);
  if (opc > maxTxnOps) throw ErrTooManyOps;
  for (const c of compare) if (c.key.length === 0) throw ErrEmptyKey;
  for (const op of [...success, ...failure]) checkRequestOp(op, maxTxnOps - opc);
}

function checkRequestOp(op: RequestOp, maxTxnOps: number): void {
  if ('requestRange' in op) checkRangeRequest(op.requestRange);
  else if ('requestPut' in op) checkPutRequest(op.requestPut);
  else if ('requestDeleteRange' in op) checkDeleteRequest(op.requestDeleteRange);
  else if ('requestTxn' in op) checkTxnShape(op.requestTxn, maxTxnOps);
  else throw ErrKeyNotFound; // an empty op, as etcd answers it
}

/** [begin, end) compared as bytes; a single key k is [k, k\0). */
interface Interval {
  begin: Buffer;
  end: Buffer;
}

function pointInterval(k: Uint8Array): Interval {
  return { begin: Buffer.from(k), end: Buffer.concat([Buffer.from(k), Buffer.from([0])]) };
}

function intersectsPoint(ivs: Interval[], key: string): boolean {
  const p = Buffer.from(key, 'latin1');
  // [b, e) meets [p, p\0) when b <= p < e. etcd takes range ends literally here, so a
  // "\0" (from-key) delete meets nothing, as in etcd 3.4.
  return ivs.some((iv) => Buffer.compare(iv.begin, p) <= 0 && Buffer.compare(p, iv.end) < 0);
}

/**
 * No key may be written twice in one txn branch, nor put where a delete of the same
 * branch reaches (etcd's checkIntervals): "duplicate key given in txn request".
 */
function checkIntervals(reqs: RequestOp[]): { puts: Set<string>; dels: Interval[] } {
  const dels: Interval[] = [];
  for (const op of reqs) {
    if (!('requestDeleteRange' in op)) continue;
    const d = op.requestDeleteRange;
    dels.push(d.rangeEnd && d.rangeEnd.length > 0 ? { begin: Buffer.from(d.key), end: Buffer.from(d.rangeEnd) } : pointInterval(d.key));
  }
  const puts = new Set<string>();
  for (const op of reqs) {
    if (!('requestTxn' in op)) continue;
    const then = checkIntervals(op.requestTxn.success ?? []);
    const otherwise = checkIntervals(op.requestTxn.failure ?? []);
    for (const k of then.puts) {
      if (puts.has(k) || intersectsPoint(dels, k)) throw ErrDuplicateKey;
      puts.add(k);
    }
    for (const k of otherwise.puts) {
      // The same key in both branches of one nested txn is fine: only one runs.
      if ((puts.has(k) && !then.puts.has(k)) || intersectsPoint(dels, k)) throw ErrDuplicateKey;
      puts.add(k);
    }
    dels.push(...then.dels, ...otherwise.dels);
  }
  for (const op of reqs) {
    if (!('requestPut' in op)) continue;
    const k = Buffer.from(op.requestPut.key).toString('latin1');
    if (puts.has(k) || intersectsPoint(dels, k)) throw ErrDuplicateKey;
    puts.add(k);
  }
  return { puts, dels };
}
