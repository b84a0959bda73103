// Typed results of the client's calls: IDs as bigint, revisions/terms/indexes/sizes
// as numbers (int64 on the wire, far below 2^53 in practice), keys and values as Buffers.
import { wireBig, wireNum } from './ids.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
/** A request as protobufjs takes it (field names as in the .proto). */
export type Wire = Record<string, any>;

// ---- responses as grpc-js hands them over (proto/load.ts: keepCase, longs as
// decimal strings, bytes as Buffers, enums as names); every field may be missing ----

/** A 64-bit integer (decimal string) or a 32-bit one (number). */
export type WireInt = string | number;

export interface WireHeader {
  cluster_id?: WireInt;
  member_id?: WireInt;
  revision?: WireInt;
  raft_term?: WireInt;
}

export interface WireMember {
  ID?: WireInt;
  name?: string;
  peerURLs?: string[];
  clientURLs?: string[];
  isLearner?: boolean;
}

export interface WireKeyValue {
  key?: Buffer;
  value?: Buffer;
  create_revision?: WireInt;
  mod_revision?: WireInt;
  version?: WireInt;
  lease?: WireInt;
}

export interface WireHeaderOnly {
  header?: WireHeader | null;
}

export interface WireMemberListResponse extends WireHeaderOnly {
  members?: WireMember[];
}

export interface WireMemberAddResponse extends WireMemberListResponse {
  member?: WireMember | null;
}

export interface WireRangeResponse extends WireHeaderOnly {
  kvs?: WireKeyValue[];
  more?: boolean;
  count?: WireInt;
}

export interface WirePutResponse extends WireHeaderOnly {
  prev_kv?: WireKeyValue | null;
}

export interface WireDeleteRangeResponse extends WireHeaderOnly {
  deleted?: WireInt;
  prev_kvs?: WireKeyValue[];
}

export interface WireResponseOp {
  response_range?: WireRangeResponse | null;
  response_put?: WirePutResponse | null;
  response_delete_range?: WireDeleteRangeResponse | null;
  response_txn?: WireTxnResponse | null;
}

export interface WireTxnResponse extends WireHeaderOnly {
  succeeded?: boolean;
  responses?: WireResponseOp[];
}

export interface WireStatusResponse extends WireHeaderOnly {
  version?: string;
  dbSize?: WireInt;
  dbSizeInUse?: WireInt;
  leader?: WireInt;
  raftIndex?: WireInt;
  raftTerm?: WireInt;
  raftAppliedIndex?: WireInt;
  errors?: string[];
  isLearner?: boolean;
}

export interface WireAlarmMember {
  memberID?: WireInt;
  alarm?: string;
}

export interface WireAlarmResponse extends WireHeaderOnly {
  alarms?: WireAlarmMember[];
}

export interface WireHashKVResponse extends WireHeaderOnly {
  hash?: WireInt;
  compact_revision?: WireInt;
}

export interface WireHashResponse extends WireHeaderOnly {
  hash?: WireInt;
}

export interface WireEvent {
  type?: string;
  kv?: WireKeyValue | null;
}

export interface WireWatchResponse extends WireHeaderOnly {
  created?: boolean;
  canceled?: boolean;
  compact_revision?: WireInt;
  cancel_reason?: string;
  events?: WireEvent[];
}

export interface ResponseHeader {
  clusterId: bigint;
  memberId: bigint;
  revision: number;
  raftTerm: number;
}

export interface Member {
  id: bigint;
  /** empty until the member has started and published its name */
  name: string;
  peerURLs: string[];
  clientURLs: string[];
  isLearner: boolean;
}

export interface KeyValue {
  key: Buffer;
  value: Buffer;
  createRevision: number;
  modRevision: number;
  version: number;
  lease: bigint;
}

export interface MemberListResult {
  header: ResponseHeader;
  members: Member[];
}

export interface MemberAddResult {
  header: ResponseHeader;
  member: Member;
  members: Member[];
}

export interface RangeResult {
  header: ResponseHeader;
  kvs: KeyValue[];
  more: boolean;
  count: number;
}

export interface PutResult {
  header: ResponseHeader;
  prevKv?: KeyValue;
}

export interface DeleteResult {
  header: ResponseHeader;
  deleted: number;
  prevKvs: KeyValue[];
}

export interface StatusResult {
  header: ResponseHeader;
  version: string;
  dbSize: number;
  dbSizeInUse: number;
  leader: bigint;
  raftIndex: number;
  raftTerm: number;
  raftAppliedIndex: number;
  errors: string[];
  isLearner: boolean;
}

export interface HashKVResult {
  header: ResponseHeader;
  hash: number;
  compactRevision: number;
}

export interface HashResult {
  header: ResponseHeader;
  hash: number;
}

export type AlarmType = 'NONE' | 'NOSPACE' | 'CORRUPT';
export type AlarmAction = 'GET' | 'ACTIVATE' | 'DEACTIVATE';

export interface AlarmMember {
  memberId: bigint;
  alarm: AlarmType;
}

export interface AlarmResult {
  header: ResponseHeader;
  alarms: AlarmMember[];
}

export interface HeaderOnly {
  header: ResponseHeader;
}

export interface SnapshotChunk {
  remainingBytes: number;
  blob: Buffer;
}

export type SortOrder = 'NONE' | 'ASCEND' | 'DESCEND';
export type SortTarget = 'KEY' | 'VERSION' | 'CREATE' | 'MOD' | 'VALUE';

export interface RangeOptions {
  /** exclusive end; empty = the single key; "\0" = every key ≥ key */
  rangeEnd?: Buffer | string;
  limit?: number;
  revision?: number;
  sortOrder?: SortOrder;
  sortTarget?: SortTarget;
  /** serializable read (served by the member itself, possibly stale) */
  serializable?: boolean;
  keysOnly?: boolean;
  countOnly?: boolean;
}

export interface PutOptions {
  lease?: bigint;
  prevKv?: boolean;
}

export interface DeleteOptions {
  rangeEnd?: Buffer | string;
  prevKv?: boolean;
}

export type CompareTarget = 'VERSION' | 'CREATE' | 'MOD' | 'VALUE' | 'LEASE';
export type CompareResult = 'EQUAL' | 'GREATER' | 'LESS' | 'NOT_EQUAL';

export interface TxnCompare {
  key: Buffer | string;
  rangeEnd?: Buffer | string;
  target: CompareTarget;
  result: CompareResult;
  /** a number for VERSION/CREATE/MOD, a bigint for LEASE, bytes for VALUE */
  value: number | bigint | Buffer | string;
}

export type TxnOp =
  | { range: { key: Buffer | string } & RangeOptions }
  | { put: { key: Buffer | string; value: Buffer | string } & PutOptions }
  | { deleteRange: { key: Buffer | string } & DeleteOptions };

export interface TxnRequest {
  compare?: TxnCompare[];
  success?: TxnOp[];
  failure?: TxnOp[];
}

export type TxnOpResult = { range: RangeResult } | { put: PutResult } | { deleteRange: DeleteResult };

export interface TxnResult {
  header: ResponseHeader;
  succeeded: boolean;
  responses: TxnOpResult[];
}

// ---- wire → typed ----

export function headerFromWire(w: WireHeader | null | undefined): ResponseHeader {
  return {
    clusterId: wireBig(w?.cluster_id),
    memberId: wireBig(w?.member_id),
    revision: wireNum(w?.revision),
    raftTerm: wireNum(w?.raft_term),
  };
}

export function memberFromWire(w: WireMember): Member {
  return {
    id: wireBig(w.ID),
    name: w.name ?? '',
    peerURLs: [...(w.peerURLs ?? [])],
    clientURLs: [...(w.clientURLs ?? [])],
    isLearner: !!w.isLearner,
  };
}

export function kvFromWire(w: WireKeyValue): KeyValue {
  return {
    key: Buffer.from(w.key ?? []),
    value: Buffer.from(w.value ?? []),
    createRevision: wireNum(w.create_revision),
    modRevision: wireNum(w.mod_revision),
    version: wireNum(w.version),
    lease: wireBig(w.lease),
  };
}

export function rangeFromWire(w: WireRangeResponse): RangeResult {
  return { header: headerFromWire(w.header), kvs: (w.kvs ?? []).map(kvFromWire), more: !!w.more, count: wireNum(w.count) };
}

export function putFromWire(w: WirePutResponse): PutResult {
  return w.prev_kv ? { header: headerFromWire(w.header), prevKv: kvFromWire(w.prev_kv) } : { header: headerFromWire(w.header) };
}

export function deleteFromWire(w: WireDeleteRangeResponse): DeleteResult {
  return { header: headerFromWire(w.header), deleted: wireNum(w.deleted), prevKvs: (w.prev_kvs ?? []).map(kvFromWire) };
}

export function statusFromWire(w: WireStatusResponse): StatusResult {
  return {
    header: headerFromWire(w.header),
    version: w.version ?? '',
    dbSize: wireNum(w.dbSize),
    dbSizeInUse: wireNum(w.dbSizeInUse),
    leader: wireBig(w.leader),
    raftIndex: wireNum(w.raftIndex),
    raftTerm: wireNum(w.raftTerm),
    raftAppliedIndex: wireNum(w.raftAppliedIndex),
    errors: [...(w.errors ?? [])],
    isLearner: !!w.isLearner,
  };
}

export function alarmFromWire(w: WireAlarmResponse): AlarmResult {
  return {
    header: headerFromWire(w.header),
    alarms: (w.alarms ?? []).map((a) => ({ memberId: wireBig(a.memberID), alarm: (a.alarm ?? 'NONE') as AlarmType })),
  };
}

/** One permission of an etcd role: READ, WRITE or READWRITE on a key, or on [key, rangeEnd) when rangeEnd is set. */
export interface RolePermission {
  permType: 'READ' | 'WRITE' | 'READWRITE';
  key: Buffer;
  /** empty: the key alone; [0]: every key from `key` on */
  rangeEnd: Buffer;
}
