// The one codec of the requests Raft entries carry: etcd's InternalRaftRequest
// protobuf. KV requests use etcd's field numbers and messages (ID=1, range=3,
// put=4, delete_range=5, txn=6, compaction=7; etcdserverpb inside), and so do
// lease grants and revocations (lease_grant=8: LeaseGrantRequest{TTL=1, ID=2};
// lease_revoke=9: LeaseRevokeRequest{ID=1}). The member's own requests besides
// leases ride in the same message: alarm=10 and publish=20 (JSON bodies). One
// entry is one request of either kind; the decoder skips fields it does not know.
// Auth requests use etcd's fields too (auth_enable=1000 ... auth_role_revoke_permission=1204),
// with etcd 3.5's hashedPassword fields: a password is hashed before it is proposed,
// never carried in plain text. A client's request carries etcd's RequestHeader
// (header=100: username=2, auth_revision=3), which the applier checks permissions
// against; the member's own requests (lease expiry, publish, alarms) carry none.

import { formatId, parseId } from '../common/ids.js';
import { ProtoReader, ProtoWriter } from '../common/protobufWire.js';
import { readPermission, writePermission, type AuthInfo, type AuthRequest } from './authStore.js';
import type { AlarmType, CompactionRequest, Compare, DeleteRangeRequest, KvRequest, PutRequest, RangeRequest, RequestOp, TxnRequest } from './types.js';

const F = {
  id: 1,
  range: 3,
  put: 4,
  deleteRange: 5,
  txn: 6,
  compaction: 7,
  leaseGrant: 8,
  leaseRevoke: 9,
  alarm: 10,
  publish: 20,
  header: 100,
  authEnable: 1000,
  authDisable: 1011,
  authenticate: 1012,
  userAdd: 1100,
  userDelete: 1101,
  userChangePassword: 1103,
  userGrantRole: 1104,
  userRevokeRole: 1105,
  roleAdd: 1200,
  roleDelete: 1201,
  roleGrantPermission: 1203,
  roleRevokePermission: 1204,
} as const;

/** The member's own requests: publishing its name and client URLs, alarms, lease grants and revocations. */
export type ServerRequest =
  | { publish: { memberId: bigint; name: string; clientURLs: string[] } }
  | { alarm: { action: 'ACTIVATE' | 'DEACTIVATE'; memberId: bigint; alarm: AlarmType } }
  | { leaseGrant: { id: bigint; ttl: number } }
  | { leaseRevoke: { id: bigint } }
  | { auth: AuthRequest };

/** A whole InternalRaftRequest as decoded from an entry. */
export interface DecodedEntryRequest {
  /** InternalRaftRequest.ID: the proposer's request ID (0n when none was given). */
  id: bigint;
  /** The KV request, if the entry holds one. */
  kv?: KvRequest;
  /** The member's own request, if the entry holds one. */
  server?: ServerRequest;
  /** Who asked, for a client's request (username "" and revision 0: no token). */
  header?: AuthInfo;
}

export interface DecodedRequest {
  /** InternalRaftRequest.ID: the proposer's request ID (0n when none was given). */
  id: bigint;
  /** Absent when the entry holds no KV request (another kind, or an empty entry). */
  request?: KvRequest;
}

/** Encodes a KV request or one of the member's own. */
export function encodeRequest(request: KvRequest | ServerRequest, id: bigint = 0n, header?: AuthInfo): Buffer {
  const w = new ProtoWriter(128);
  w.int(F.id, id);
  if (header) w.message(F.header, (m) => m.int(1, id).string(2, header.username).int(3, header.revision));
  if ('range' in request) w.message(F.range, (m) => writeRange(m, request.range));
  else if ('put' in request) w.message(F.put, (m) => writePut(m, request.put));
  else if ('deleteRange' in request) w.message(F.deleteRange, (m) => writeDeleteRange(m, request.deleteRange));
  else if ('txn' in request) w.message(F.txn, (m) => writeTxn(m, request.txn));
  else if ('compaction' in request) w.message(F.compaction, (m) => writeCompaction(m, request.compaction));
  else if ('publish' in request) {
    const p = request.publish;
    w.bytes(F.publish, Buffer.from(JSON.stringify({ id: formatId(p.memberId), name: p.name, clientURLs: p.clientURLs })));
  } else if ('leaseGrant' in request) {
    const g = request.leaseGrant;
    w.message(F.leaseGrant, (m) => m.int(1, g.ttl).int(2, g.id));
  } else if ('leaseRevoke' in request) {
    const lease = request.leaseRevoke.id;
    w.message(F.leaseRevoke, (m) => m.int(1, lease));
  } else if ('alarm' in request) {
    const a = request.alarm;
    w.bytes(F.alarm, Buffer.from(JSON.stringify({ action: a.action, memberId: formatId(a.memberId), alarm: a.alarm })));
  } else if ('auth' in request) writeAuth(w, request.auth);
  else throw new Error(`encodeRequest: unknown request kind ${Object.keys(request).join(',')}`);
  return w.finish();
}

/**
 * Decodes an entry's whole request, once; the keys and values returned are views
 * into `data`. The last KV field and the first server field count.
 */
export function decodeRequest(data: Uint8Array): DecodedEntryRequest {
  const r = new ProtoReader(data);
  const out: DecodedEntryRequest = { id: 0n };
  while (!r.done) {
    const { field, wire } = r.tag();
    switch (field) {
      case F.id:
        out.id = r.uint64();
        break;
      case F.range:
        out.kv = { range: readRange(r.bytes()) };
        break;
      case F.put:
        out.kv = { put: readPut(r.bytes()) };
        break;
      case F.deleteRange:
        out.kv = { deleteRange: readDeleteRange(r.bytes()) };
        break;
      case F.txn:
        out.kv = { txn: readTxn(r.bytes()) };
        break;
      case F.compaction:
        out.kv = { compaction: readCompaction(r.bytes()) };
        break;
      case F.publish: {
        const body = r.bytes();
        if (!out.server) {
          const j = JSON.parse(body.toString('utf8')) as { id: string; name: string; clientURLs: string[] };
          out.server = { publish: { memberId: parseId(j.id), name: j.name, clientURLs: j.clientURLs } };
        }
        break;
      }
      case F.alarm: {
        const body = r.bytes();
        if (!out.server) {
          const j = JSON.parse(body.toString('utf8')) as { action: 'ACTIVATE' | 'DEACTIVATE'; memberId: string; alarm: AlarmType };
          out.server = { alarm: { action: j.action, memberId: parseId(j.memberId), alarm: j.alarm } };
        }
        break;
      }
      case F.leaseGrant: {
        const g = readLeaseGrant(r.bytes());
        out.server ??= { leaseGrant: g };
        break;
      }
      case F.leaseRevoke: {
        const lease = readLeaseId(r.bytes(), 1);
        out.server ??= { leaseRevoke: { id: lease } };
        break;
      }
      case F.header:
        out.header = readHeader(r.bytes());
        break;
      default:
        if (field >= F.authEnable && field <= F.roleRevokePermission && wire === 2) {
          const auth = readAuth(field, r.bytes());
          if (auth) out.server ??= { auth };
        } else r.skip(wire);
    }
  }
  return out;
}

function readHeader(data: Uint8Array): AuthInfo {
  const r = new ProtoReader(data);
  const h: AuthInfo = { username: '', revision: 0 };
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 2) h.username = r.string();
    else if (field === 3) h.revision = Number(r.uint64());
    else r.skip(wire);
  }
  return h;
}

function writeAuth(w: ProtoWriter, a: AuthRequest): void {
  if ('authEnable' in a) w.message(F.authEnable, () => undefined);
  else if ('authDisable' in a) w.message(F.authDisable, () => undefined);
  else if ('authenticate' in a) w.message(F.authenticate, (m) => m.string(1, a.authenticate.name).string(3, a.authenticate.simpleToken));
  else if ('userAdd' in a) {
    const u = a.userAdd;
    w.message(F.userAdd, (m) => {
      m.string(1, u.name);
      if (u.noPassword) m.message(3, (o) => o.bool(1, true));
      m.string(4, u.hashedPassword);
    });
  } else if ('userDelete' in a) w.message(F.userDelete, (m) => m.string(1, a.userDelete.name));
  else if ('userChangePassword' in a)
    w.message(F.userChangePassword, (m) => m.string(1, a.userChangePassword.name).string(3, a.userChangePassword.hashedPassword));
  else if ('userGrantRole' in a) w.message(F.userGrantRole, (m) => m.string(1, a.userGrantRole.user).string(2, a.userGrantRole.role));
  else if ('userRevokeRole' in a) w.message(F.userRevokeRole, (m) => m.string(1, a.userRevokeRole.name).string(2, a.userRevokeRole.role));
  else if ('roleAdd' in a) w.message(F.roleAdd, (m) => m.string(1, a.roleAdd.name));
  else if ('roleDelete' in a) w.message(F.roleDelete, (m) => m.string(1, a.roleDelete.role));
  else if ('roleGrantPermission' in a) {
    const g = a.roleGrantPermission;
    w.message(F.roleGrantPermission, (m) => m.string(1, g.name).message(2, (p) => writePermission(p, g.perm)));
  } else {
    const v = a.roleRevokePermission;
    w.message(F.roleRevokePermission, (m) => m.string(1, v.role).bytes(2, v.key).bytes(3, v.rangeEnd));
  }
}

/** The strings and bytes fields of one auth request message, by number. */
function fields(data: Uint8Array): Map<number, Buffer> {
  const r = new ProtoReader(data);
  const out = new Map<number, Buffer>();
  while (!r.done) {
    const { field, wire } = r.tag();
    if (wire === 2) out.set(field, Buffer.from(r.bytes()));
    else r.skip(wire);
  }
  return out;
}

function readAuth(field: number, data: Uint8Array): AuthRequest | undefined {
  const f = fields(data);
  const str = (n: number) => f.get(n)?.toString('utf8') ?? '';
  const buf = (n: number) => f.get(n) ?? Buffer.alloc(0);
  switch (field) {
    case F.authEnable:
      return { authEnable: {} };
    case F.authDisable:
      return { authDisable: {} };
    case F.authenticate:
      return { authenticate: { name: str(1), simpleToken: str(3) } };
    case F.userAdd: {
      let noPassword = false;
      const opts = f.get(3);
      if (opts) {
        const o = new ProtoReader(opts);
        while (!o.done) {
          const t = o.tag();
          if (t.field === 1) noPassword = o.bool();
          else o.skip(t.wire);
        }
      }
      return { userAdd: { name: str(1), hashedPassword: str(4), noPassword } };
    }
    case F.userDelete:
      return { userDelete: { name: str(1) } };
    case F.userChangePassword:
      return { userChangePassword: { name: str(1), hashedPassword: str(3) } };
    case F.userGrantRole:
      return { userGrantRole: { user: str(1), role: str(2) } };
    case F.userRevokeRole:
      return { userRevokeRole: { name: str(1), role: str(2) } };
    case F.roleAdd:
      return { roleAdd: { name: str(1) } };
    case F.roleDelete:
      return { roleDelete: { role: str(1) } };
    case F.roleGrantPermission:
      return { roleGrantPermission: { name: str(1), perm: readPermission(buf(2)) } };
    case F.roleRevokePermission:
      return { roleRevokePermission: { role: str(1), key: buf(2), rangeEnd: buf(3) } };
    default:
      return undefined;
  }
}

export function encodeKvRequest(request: KvRequest, id: bigint = 0n): Buffer {
  return encodeRequest(request, id);
}

/** The KV request in an entry, if any (the member's own requests yield none). */
export function decodeKvRequest(data: Uint8Array): DecodedRequest {
  const { id, kv } = decodeRequest(data);
  return kv ? { id, request: kv } : { id };
}

export function encodeServerRequest(req: ServerRequest, id: bigint): Buffer {
  return encodeRequest(req, id);
}

/** The member's own request in an entry, if it holds one (KV requests yield undefined). */
export function decodeServerRequest(data: Uint8Array): ServerRequest | undefined {
  return decodeRequest(data).server;
}

function readLeaseGrant(data: Uint8Array): { id: bigint; ttl: number } {
  const r = new ProtoReader(data);
  const g = { id: 0n, ttl: 0 };
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1) g.ttl = r.int64Number();
    else if (field === 2) g.id = r.int64();
    else r.skip(wire);
  }
  return g;
}

function readLeaseId(data: Uint8Array, idField: number): bigint {
  const r = new ProtoReader(data);
  let id = 0n;
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === idField) id = r.int64();
    else r.skip(wire);
  }
  return id;
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

const EMPTY = Buffer.alloc(0);
