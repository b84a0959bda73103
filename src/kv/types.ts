// The KV store's requests and responses: plain objects mirroring etcd v3.4's
// etcdserverpb messages in camelCase (proto-loader's default), so the API layer
// passes them through with little mapping. Keys and values are bytes; revisions,
// versions and counts are numbers (2^53 revisions is beyond any store we keep);
// lease IDs are int64 and often above 2^53, so they are bigint (0n = no lease).

import type { KvError } from './errors.js';

export interface KeyValue {
  key: Buffer;
  createRevision: number;
  modRevision: number;
  version: number;
  value: Buffer;
  lease: bigint;
}

/** The part of etcd's ResponseHeader the KV knows; the server adds cluster/member/term. */
export interface KvHeader {
  revision: number;
}

export enum SortOrder {
  None = 0,
  Ascend = 1,
  Descend = 2,
}

export enum SortTarget {
  Key = 0,
  Version = 1,
  Create = 2,
  Mod = 3,
  Value = 4,
}

export interface RangeRequest {
  key: Uint8Array;
  /** Empty: the single key. "\0": every key >= key. Otherwise [key, rangeEnd). */
  rangeEnd?: Uint8Array;
  limit?: number;
  /** 0 or absent: the current revision. */
  revision?: number;
  sortOrder?: SortOrder;
  sortTarget?: SortTarget;
  serializable?: boolean;
  keysOnly?: boolean;
  countOnly?: boolean;
  minModRevision?: number;
  maxModRevision?: number;
  minCreateRevision?: number;
  maxCreateRevision?: number;
}

export interface RangeResponse {
  header: KvHeader;
  kvs: KeyValue[];
  more: boolean;
  count: number;
}

export interface PutRequest {
  key: Uint8Array;
  value?: Uint8Array;
  lease?: bigint;
  prevKv?: boolean;
  ignoreValue?: boolean;
  ignoreLease?: boolean;
}

export interface PutResponse {
  header: KvHeader;
  prevKv?: KeyValue;
}

export interface DeleteRangeRequest {
  key: Uint8Array;
  rangeEnd?: Uint8Array;
  prevKv?: boolean;
}

export interface DeleteRangeResponse {
  header: KvHeader;
  deleted: number;
  prevKvs: KeyValue[];
}

export enum CompareResult {
  Equal = 0,
  Greater = 1,
  Less = 2,
  NotEqual = 3,
}

export enum CompareTarget {
  Version = 0,
  Create = 1,
  Mod = 2,
  Value = 3,
  Lease = 4,
}

/** Only the field named by `target` is read (etcd's target_union oneof). */
export interface Compare {
  result: CompareResult;
  target: CompareTarget;
  key: Uint8Array;
  rangeEnd?: Uint8Array;
  version?: number;
  createRevision?: number;
  modRevision?: number;
  value?: Uint8Array;
  lease?: bigint;
}

/** etcd's RequestOp oneof: exactly one field set. */
export type RequestOp = { requestRange: RangeRequest } | { requestPut: PutRequest } | { requestDeleteRange: DeleteRangeRequest } | { requestTxn: TxnRequest };

export type ResponseOp =
  { responseRange: RangeResponse } | { responsePut: PutResponse } | { responseDeleteRange: DeleteRangeResponse } | { responseTxn: TxnResponse };

export interface TxnRequest {
  compare?: Compare[];
  success?: RequestOp[];
  failure?: RequestOp[];
}

export interface TxnResponse {
  /** As etcd: the top-level revision; 0 in nested txn responses. */
  header: KvHeader;
  succeeded: boolean;
  responses: ResponseOp[];
}

export interface CompactionRequest {
  revision: number;
  /** Accepted for compatibility; compaction here is always physical on apply. */
  physical?: boolean;
}

export interface CompactionResponse {
  header: KvHeader;
}

/** What a Raft log entry carries for the KV (etcd's InternalRaftRequest, KV part). */
export type KvRequest =
  { range: RangeRequest } | { put: PutRequest } | { deleteRange: DeleteRangeRequest } | { txn: TxnRequest } | { compaction: CompactionRequest };

export type KvResponse =
  { range: RangeResponse } | { put: PutResponse } | { deleteRange: DeleteRangeResponse } | { txn: TxnResponse } | { compaction: CompactionResponse };

/** Outcome of applying one request: an etcd error is an outcome, not a failure to apply. */
export type KvApplyResult = { response: KvResponse; error?: undefined } | { response?: undefined; error: KvError };

export interface HashKvResult {
  hash: number;
  /** The store's current revision (etcd's header.revision). */
  revision: number;
  /** etcd's compactMainRev: -1 until the first compaction. */
  compactRevision: number;
}

export interface Member {
  id: bigint;
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

export enum AlarmType {
  None = 0,
  NoSpace = 1,
  Corrupt = 2,
}

export interface Alarm {
  memberId: bigint;
  alarm: AlarmType;
}

/** etcd's mvccpb.Event.EventType. */
export enum EventType {
  Put = 0,
  Delete = 1,
}

/**
 * One change in the store's history (a watch event). A delete carries only the key
 * and its tombstone's revision in mod_revision, as etcd's do.
 */
export interface KvEvent {
  type: EventType;
  kv: KeyValue;
}

/** A page of history: complete for every revision up to and including `through`. */
export interface HistoryBatch {
  events: KvEvent[];
  through: number;
}

export interface LeaseRecord {
  id: bigint;
  ttl: number;
}

/** A snapshot file of the store: where, how big, its sha256, and the state it holds. */
export interface KvSnapshotInfo {
  path: string;
  /** File size, trailer included. */
  size: number;
  sha256: string;
  appliedIndex: number;
  appliedTerm: number;
  revision: number;
  compactRevision: number;
}

/** What a checkpoint made durable, and whether it had to (false: nothing was committed since the last one). */
export interface CheckpointResult {
  appliedIndex: number;
  synced: boolean;
  /** Every WAL frame was copied into the file (a reader can hold some back): until the next commit, nothing is left to do. */
  complete: boolean;
}
