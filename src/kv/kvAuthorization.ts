// Whether a user may make a KV request, as etcd v3.4 decides it (etcdserver/apply_auth.go):
// Range needs read on its range; Put needs write on its key, write on every key
// already attached to its lease, and read when it asks for the previous value;
// DeleteRange needs write on its range (and read with prev_kv); a Txn needs read on
// every compare's range and the above for every op. Compaction is not checked.
//
// Lifeboat is stricter than etcd 3.4 in two places where 3.4 lets data out: a Txn's
// nested Txn ops are checked like its own (3.4 skips them), and a Txn's Put with
// prev_kv needs read like a plain Put does (3.4 skips it).

import type { AuthError } from './authErrors.js';
import type { AuthInfo } from './authRequestCodec.js';
import type { AuthState } from './authStore.js';
import type { KvRequest, RequestOp, TxnRequest } from './types.js';

/** The refusal for `req` by `ai`, or undefined when it may run. `leaseKeys`: the keys attached to a lease. */
export function kvRequestRefusal(s: AuthState, ai: AuthInfo | undefined, req: KvRequest, leaseKeys: (id: bigint) => Buffer[]): AuthError | undefined {
  if (!s.enabled()) return undefined;
  if ('range' in req) return s.opPermitted(ai, req.range.key, req.range.rangeEnd, false);
  if ('put' in req) {
    const p = req.put;
    const lease = p.lease ?? 0n;
    return (
      s.opPermitted(ai, p.key, undefined, true) ??
      (lease !== 0n ? leaseKeys(lease).reduce<AuthError | undefined>((err, k) => err ?? s.opPermitted(ai, k, undefined, true), undefined) : undefined) ??
      (p.prevKv ? s.opPermitted(ai, p.key, undefined, false) : undefined)
    );
  }
  if ('deleteRange' in req) {
    const d = req.deleteRange;
    return s.opPermitted(ai, d.key, d.rangeEnd, true) ?? (d.prevKv ? s.opPermitted(ai, d.key, d.rangeEnd, false) : undefined);
  }
  if ('txn' in req) return txnRefusal(s, ai, req.txn);
  return undefined;
}

/** The refusal for revoking a lease: write on every key attached to it (etcd's checkLeasePuts). */
export function leaseRevokeRefusal(s: AuthState, ai: AuthInfo | undefined, keys: Buffer[]): AuthError | undefined {
  if (!s.enabled()) return undefined;
  for (const k of keys) {
    const err = s.opPermitted(ai, k, undefined, true);
    if (err) return err;
  }
  return undefined;
}

function txnRefusal(s: AuthState, ai: AuthInfo | undefined, t: TxnRequest): AuthError | undefined {
  for (const c of t.compare ?? []) {
    const err = s.opPermitted(ai, c.key, c.rangeEnd, false);
    if (err) return err;
  }
  for (const op of [...(t.success ?? []), ...(t.failure ?? [])]) {
    const err = opRefusal(s, ai, op);
    if (err) return err;
  }
  return undefined;
}

function opRefusal(s: AuthState, ai: AuthInfo | undefined, op: RequestOp): AuthError | undefined {
  if ('requestRange' in op) return s.opPermitted(ai, op.requestRange.key, op.requestRange.rangeEnd, false);
  if ('requestPut' in op) {
    const p = op.requestPut;
    return s.opPermitted(ai, p.key, undefined, true) ?? (p.prevKv ? s.opPermitted(ai, p.key, undefined, false) : undefined);
  }
  if ('requestDeleteRange' in op) {
    const d = op.requestDeleteRange;
    return (d.prevKv ? s.opPermitted(ai, d.key, d.rangeEnd, false) : undefined) ?? s.opPermitted(ai, d.key, d.rangeEnd, true);
  }
  if ('requestTxn' in op) return txnRefusal(s, ai, op.requestTxn);
  return undefined;
}
