// Mapping between the wire shapes (proto field names, 64-bit integers as decimal
// strings, enums as names) and the KV store's typed requests and responses.
import type {
  Compare,
  CompactionRequest,
  DeleteRangeRequest,
  DeleteRangeResponse,
  KeyValue,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  RequestOp,
  ResponseOp,
  TxnRequest,
  TxnResponse,
} from '../kv/types.js';
import { CompareResult, CompareTarget, SortOrder, SortTarget } from '../kv/types.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
/** A response as protobufjs takes it. */
type Wire = Record<string, any>;

// ---- requests as grpc-js hands them to a handler (proto/load.ts: keepCase, longs
// as decimal strings, bytes as Buffers, enums as names); every field may be missing ----

/** A 64-bit integer (decimal string) or a 32-bit one (number). */
export type WireInt = string | number;
/** An enum: its name, or its number. */
export type WireEnum = string | number;

export interface WireRangeRequest {
  key?: Uint8Array;
  range_end?: Uint8Array;
  limit?: WireInt;
  revision?: WireInt;
  sort_order?: WireEnum;
  sort_target?: WireEnum;
  serializable?: boolean;
  keys_only?: boolean;
  count_only?: boolean;
  min_mod_revision?: WireInt;
  max_mod_revision?: WireInt;
  min_create_revision?: WireInt;
  max_create_revision?: WireInt;
}

export interface WirePutRequest {
  key?: Uint8Array;
  value?: Uint8Array;
  lease?: WireInt;
  prev_kv?: boolean;
  ignore_value?: boolean;
  ignore_lease?: boolean;
}

export interface WireDeleteRangeRequest {
  key?: Uint8Array;
  range_end?: Uint8Array;
  prev_kv?: boolean;
}

export interface WireCompare {
  result?: WireEnum;
  target?: WireEnum;
  key?: Uint8Array;
  range_end?: Uint8Array;
  version?: WireInt;
  create_revision?: WireInt;
  mod_revision?: WireInt;
  value?: Uint8Array;
  lease?: WireInt;
}

export interface WireRequestOp {
  request_range?: WireRangeRequest | null;
  request_put?: WirePutRequest | null;
  request_delete_range?: WireDeleteRangeRequest | null;
  request_txn?: WireTxnRequest | null;
}

export interface WireTxnRequest {
  compare?: WireCompare[];
  success?: WireRequestOp[];
  failure?: WireRequestOp[];
}

export interface WireCompactionRequest {
  revision?: WireInt;
  physical?: boolean;
}

const num = (v: unknown): number => (v === undefined || v === null || v === '' ? 0 : Number(v));
const big = (v: unknown): bigint => (v === undefined || v === null || v === '' ? 0n : BigInt(v as string));
const buf = (v: unknown): Buffer => (v ? Buffer.from(v as Uint8Array) : Buffer.alloc(0));

function enumValue<T extends Record<string, string | number>>(e: T, names: string[], v: WireEnum | null | undefined): T[keyof T] {
  if (typeof v === 'number') return v as T[keyof T];
  const i = names.indexOf(String(v ?? names[0]));
  return (i < 0 ? 0 : i) as T[keyof T];
}

const SORT_ORDERS = ['NONE', 'ASCEND', 'DESCEND'];
const SORT_TARGETS = ['KEY', 'VERSION', 'CREATE', 'MOD', 'VALUE'];
const COMPARE_RESULTS = ['EQUAL', 'GREATER', 'LESS', 'NOT_EQUAL'];
const COMPARE_TARGETS = ['VERSION', 'CREATE', 'MOD', 'VALUE', 'LEASE'];

export function rangeFromWire(w: WireRangeRequest): RangeRequest {
  return {
    key: buf(w.key),
    rangeEnd: buf(w.range_end),
    limit: num(w.limit),
    revision: num(w.revision),
    sortOrder: enumValue(SortOrder, SORT_ORDERS, w.sort_order),
    sortTarget: enumValue(SortTarget, SORT_TARGETS, w.sort_target),
    serializable: !!w.serializable,
    keysOnly: !!w.keys_only,
    countOnly: !!w.count_only,
    minModRevision: num(w.min_mod_revision),
    maxModRevision: num(w.max_mod_revision),
    minCreateRevision: num(w.min_create_revision),
    maxCreateRevision: num(w.max_create_revision),
  };
}

export function putFromWire(w: WirePutRequest): PutRequest {
  return { key: buf(w.key), value: buf(w.value), lease: big(w.lease), prevKv: !!w.prev_kv, ignoreValue: !!w.ignore_value, ignoreLease: !!w.ignore_lease };
}

export function deleteRangeFromWire(w: WireDeleteRangeRequest): DeleteRangeRequest {
  return { key: buf(w.key), rangeEnd: buf(w.range_end), prevKv: !!w.prev_kv };
}

function compareFromWire(w: WireCompare): Compare {
  const c: Compare = {
    result: enumValue(CompareResult, COMPARE_RESULTS, w.result),
    target: enumValue(CompareTarget, COMPARE_TARGETS, w.target),
    key: buf(w.key),
    rangeEnd: buf(w.range_end),
  };
  switch (c.target) {
    case CompareTarget.Version:
      c.version = num(w.version);
      break;
    case CompareTarget.Create:
      c.createRevision = num(w.create_revision);
      break;
    case CompareTarget.Mod:
      c.modRevision = num(w.mod_revision);
      break;
    case CompareTarget.Value:
      c.value = buf(w.value);
      break;
    case CompareTarget.Lease:
      c.lease = big(w.lease);
      break;
  }
  return c;
}

function opFromWire(w: WireRequestOp): RequestOp {
  if (w.request_range) return { requestRange: rangeFromWire(w.request_range) };
  if (w.request_put) return { requestPut: putFromWire(w.request_put) };
  if (w.request_delete_range) return { requestDeleteRange: deleteRangeFromWire(w.request_delete_range) };
  if (w.request_txn) return { requestTxn: txnFromWire(w.request_txn) };
  // An empty RequestOp: etcd treats it as a no-op range of the empty key.
  return { requestRange: { key: Buffer.alloc(0) } };
}

export function txnFromWire(w: WireTxnRequest): TxnRequest {
  return {
    compare: (w.compare ?? []).map(compareFromWire),
    success: (w.success ?? []).map(opFromWire),
    failure: (w.failure ?? []).map(opFromWire),
  };
}

export function compactionFromWire(w: WireCompactionRequest): CompactionRequest {
  return { revision: num(w.revision), physical: !!w.physical };
}

export function kvToWire(kv: KeyValue): Wire {
  return {
    key: kv.key,
    create_revision: String(kv.createRevision),
    mod_revision: String(kv.modRevision),
    version: String(kv.version),
    value: kv.value,
    lease: kv.lease.toString(),
  };
}

export type HeaderFn = (revision: number) => Wire;

export function rangeToWire(r: RangeResponse, header: HeaderFn): Wire {
  return { header: header(r.header.revision), kvs: r.kvs.map(kvToWire), more: r.more, count: String(r.count) };
}

export function putToWire(r: PutResponse, header: HeaderFn): Wire {
  return { header: header(r.header.revision), prev_kv: r.prevKv ? kvToWire(r.prevKv) : null };
}

export function deleteRangeToWire(r: DeleteRangeResponse, header: HeaderFn): Wire {
  return { header: header(r.header.revision), deleted: String(r.deleted), prev_kvs: r.prevKvs.map(kvToWire) };
}

function opToWire(r: ResponseOp, header: HeaderFn): Wire {
  if ('responseRange' in r) return { response_range: rangeToWire(r.responseRange, header) };
  if ('responsePut' in r) return { response_put: putToWire(r.responsePut, header) };
  if ('responseDeleteRange' in r) return { response_delete_range: deleteRangeToWire(r.responseDeleteRange, header) };
  return { response_txn: txnToWire(r.responseTxn, header) };
}

export function txnToWire(r: TxnResponse, header: HeaderFn): Wire {
  return { header: header(r.header.revision), succeeded: r.succeeded, responses: r.responses.map((op) => opToWire(op, header)) };
}
