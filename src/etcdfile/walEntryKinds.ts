// What an etcd 3.4 WAL entry is, in one line an operator can read: a put, a
// delete, a txn, a member change, an auth change, a v2 request. Values are never
// shown (only their size), and passwords never: etcd 3.4 carries UserAdd and
// UserChangePassword passwords in plain text in its entries.
//
// EntryNormal data is etcdserverpb.InternalRaftRequest (raft_internal.proto):
//   header=100, ID=1, v2=2, range=3, put=4, delete_range=5, txn=6, compaction=7,
//   lease_grant=8, lease_revoke=9, alarm=10 {action=1, memberID=2, alarm=3},
//   lease_checkpoint=11, auth_enable=1000, auth_disable=1011, authenticate=1012,
//   auth_user_add=1100 {name=1, password=2}, auth_user_delete=1101,
//   auth_user_get=1102, auth_user_change_password=1103 {name=1, password=2},
//   auth_user_grant_role=1104 {user=1, role=2}, auth_user_revoke_role=1105,
//   auth_user_list=1106, auth_role_list=1107, auth_role_add=1200,
//   auth_role_delete=1201, auth_role_get=1202, auth_role_grant_permission=1203,
//   auth_role_revoke_permission=1204; 3.5: cluster_version_set=1300,
//   cluster_member_attr_set=1301.
// or, from etcd's v2 API and its own publish / cluster-version writes, a bare
// etcdserverpb.Request {ID=1, Method=2, Path=3, Val=4, ...}. The KV and lease
// requests are decoded field by field by the project's one InternalRaftRequest codec
// (src/kv/requestCodec.ts), which encodes them as etcd does.

import { decodeRequestField } from '../kv/requestCodec.js';
import { ProtoReader } from '../common/protobufWire.js';
import type { KvRequest, RequestOp } from '../kv/types.js';
import { decodeMember, failed } from './etcdBuckets.js';
import { CONF_CHANGE_TYPE, ENTRY_TYPE, decodeConfChange, decodeConfChangeV2, type EtcdEntry } from './raftpbCodec.js';

export type EntryKind = 'empty' | 'put' | 'delete' | 'txn' | 'range' | 'compaction' | 'lease' | 'alarm' | 'auth' | 'v2' | 'member change' | 'other';

export interface EntryDescription {
  index: number;
  term: number;
  kind: EntryKind;
  /** One line; never a value or a password. */
  text: string;
  /** A v2-API request (etcd's own, under /0, or a client's, under /1). */
  v2?: { method: string; path: string };
  /** A member change: the node and what happens to it. */
  confChange?: { type: 'add' | 'remove' | 'update' | 'add learner'; nodeId: bigint; peerURLs: string[] };
}

const V2_METHODS = new Set(['GET', 'PUT', 'POST', 'DELETE', 'QGET', 'SYNC', 'HEAD']);
const KV_FIELDS = new Set([3, 4, 5, 6, 7, 8, 9]);
const CONF_TYPES = ['add', 'remove', 'update', 'add learner'] as const;
const ALARM_ACTIONS = ['GET', 'ACTIVATE', 'DEACTIVATE'];
const ALARM_TYPES = ['NONE', 'NOSPACE', 'CORRUPT'];

/** A key as text: printable ASCII as is, anything else escaped. */
function showKey(b: Uint8Array): string {
  let s = '';
  for (const c of b) s += c >= 0x20 && c < 0x7f && c !== 0x22 && c !== 0x5c ? String.fromCharCode(c) : `\\x${c.toString(16).padStart(2, '0')}`;
  return s.length > 80 ? `"${s.slice(0, 80)}"…` : `"${s}"`;
}

function showRange(key: Uint8Array, end: Uint8Array | undefined): string {
  if (!end || end.length === 0) return showKey(key);
  if (end.length === 1 && end[0] === 0) return `${showKey(key)} and after`;
  return `[${showKey(key)}, ${showKey(end)})`;
}

function opText(op: RequestOp): string {
  if ('requestPut' in op) return `put ${showKey(op.requestPut.key)}`;
  if ('requestDeleteRange' in op) return `delete ${showRange(op.requestDeleteRange.key, op.requestDeleteRange.rangeEnd)}`;
  if ('requestRange' in op) return `get ${showRange(op.requestRange.key, op.requestRange.rangeEnd)}`;
  if ('requestTxn' in op) return 'txn';
  return 'no-op';
}

/** A KV request in one line (keys and value sizes, never values). */
export function kvText(kv: KvRequest): { kind: EntryKind; text: string } {
  if ('put' in kv)
    return {
      kind: 'put',
      text: `put ${showKey(kv.put.key)} (${kv.put.value?.length ?? 0} bytes${kv.put.lease ? `, lease ${kv.put.lease.toString(16)}` : ''})`,
    };
  if ('deleteRange' in kv) return { kind: 'delete', text: `delete ${showRange(kv.deleteRange.key, kv.deleteRange.rangeEnd)}` };
  if ('txn' in kv) {
    const t = kv.txn;
    const ops = (list: RequestOp[] | undefined) => (list && list.length > 0 ? list.map(opText).join(', ') : 'nothing');
    return { kind: 'txn', text: `txn: ${t.compare?.length ?? 0} compares; then ${ops(t.success)}; else ${ops(t.failure)}` };
  }
  if ('compaction' in kv) return { kind: 'compaction', text: `compact at revision ${kv.compaction.revision}` };
  return { kind: 'range', text: `get ${showRange(kv.range.key, kv.range.rangeEnd)}` };
}

function stringField(data: Uint8Array, want: number): string {
  const r = new ProtoReader(data);
  let out = '';
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === want && wire === 2) out = r.string();
    else r.skip(wire);
  }
  return out;
}

function intField(data: Uint8Array, want: number): bigint {
  const r = new ProtoReader(data);
  let out = 0n;
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === want && wire === 0) out = r.uint64();
    else r.skip(wire);
  }
  return out;
}

/** etcdserverpb.Request (v2): its method and path, if `data` looks like one. */
function v2Request(data: Uint8Array): { method: string; path: string } | undefined {
  const method = stringField(data, 2);
  const path = stringField(data, 3);
  return V2_METHODS.has(method) && (path.startsWith('/') || method === 'SYNC') ? { method, path } : undefined;
}

/** A bare v2 Request at the top level: field 2 is its method, field 3 a path starting with '/'. */
function isBareV2(data: Uint8Array): boolean {
  try {
    return v2Request(data) !== undefined;
  } catch {
    return false;
  }
}

function authText(field: number, body: Uint8Array): string | undefined {
  const name = () => JSON.stringify(stringField(body, 1));
  switch (field) {
    case 1000:
      return 'auth enable';
    case 1011:
      return 'auth disable';
    case 1012:
      return `authenticate ${name()} (password redacted)`;
    case 1100:
      return `user add ${name()} (password redacted)`;
    case 1101:
      return `user delete ${name()}`;
    case 1102:
      return `user get ${name()}`;
    case 1103:
      return `user change password ${name()} (password redacted)`;
    case 1104:
      return `user ${name()} grant role ${JSON.stringify(stringField(body, 2))}`;
    case 1105:
      return `user ${name()} revoke role ${JSON.stringify(stringField(body, 2))}`;
    case 1106:
      return 'user list';
    case 1107:
      return 'role list';
    case 1200:
      return `role add ${name()}`;
    case 1201:
      return `role delete ${name()}`;
    case 1202:
      return `role get ${name()}`;
    case 1203:
      return `role ${name()} grant permission`;
    case 1204:
      return `role ${name()} revoke permission`;
    default:
      return undefined;
  }
}

function describeNormal(data: Buffer): Pick<EntryDescription, 'kind' | 'text' | 'v2'> {
  if (data.length === 0) return { kind: 'empty', text: 'empty (a new leader’s first entry)' };
  if (isBareV2(data)) {
    const v2 = v2Request(data)!;
    return { kind: 'v2', text: `v2 ${v2.method} ${v2.path}`, v2 };
  }
  const r = new ProtoReader(data);
  const texts: Array<{ kind: EntryKind; text: string; v2?: { method: string; path: string } }> = [];
  while (!r.done) {
    const { field, wire } = r.tag();
    if (wire !== 2) {
      r.skip(wire);
      continue;
    }
    const body = r.bytes();
    if (KV_FIELDS.has(field)) {
      const one = decodeRequestField(field, body);
      if (one && 'kv' in one) texts.push(kvText(one.kv));
      else if (one && 'leaseGrant' in one.server)
        texts.push({ kind: 'lease', text: `lease grant ${one.server.leaseGrant.id.toString(16)} ttl ${one.server.leaseGrant.ttl}s` });
      else if (one && 'leaseRevoke' in one.server) texts.push({ kind: 'lease', text: `lease revoke ${one.server.leaseRevoke.id.toString(16)}` });
    } else if (field === 2) {
      const v2 = v2Request(body) ?? { method: '?', path: '?' };
      texts.push({ kind: 'v2', text: `v2 ${v2.method} ${v2.path}`, v2 });
    } else if (field === 10) {
      const action = ALARM_ACTIONS[Number(intField(body, 1))] ?? '?';
      const alarm = ALARM_TYPES[Number(intField(body, 3))] ?? '?';
      texts.push({ kind: 'alarm', text: `alarm ${action} ${alarm} member ${intField(body, 2).toString(16)}` });
    } else if (field === 11) {
      texts.push({ kind: 'lease', text: 'lease checkpoint' });
    } else if (field === 1300) {
      texts.push({ kind: 'other', text: `cluster version set ${JSON.stringify(stringField(body, 1))}` });
    } else if (field === 1301) {
      texts.push({ kind: 'other', text: `member ${intField(body, 1).toString(16)} attributes set` });
    } else if (field !== 100) {
      const auth = authText(field, body);
      texts.push(auth ? { kind: 'auth', text: auth } : { kind: 'other', text: `InternalRaftRequest field ${field}` });
    }
  }
  if (texts.length === 0) return { kind: 'other', text: 'InternalRaftRequest with no request' };
  return { kind: texts[0].kind, text: texts.map((t) => t.text).join('; '), ...(texts[0].v2 ? { v2: texts[0].v2 } : {}) };
}

function describeConfChange(data: Buffer): Pick<EntryDescription, 'kind' | 'text' | 'confChange'> {
  const cc = decodeConfChange(data);
  const type = CONF_TYPES[cc.type];
  if (!type) return { kind: 'member change', text: `conf change of unknown type ${cc.type} for ${cc.nodeId.toString(16)}` };
  let peerURLs: string[] = [];
  let name = '';
  if (cc.context.length > 0 && cc.type !== CONF_CHANGE_TYPE.removeNode) {
    const m = decodeMember(Buffer.from(cc.nodeId.toString(16)), cc.context);
    if (!failed(m)) {
      peerURLs = m.peerURLs;
      name = m.name;
    }
  }
  const who = `${cc.nodeId.toString(16)}${name ? ` ${name}` : ''}${peerURLs.length ? ` ${peerURLs.join(',')}` : ''}`;
  const verb = { add: 'add member', remove: 'remove member', update: 'update member', 'add learner': 'add learner' }[type];
  return { kind: 'member change', text: `${verb} ${who}`, confChange: { type, nodeId: cc.nodeId, peerURLs } };
}

/** One line for the entry; a malformed one says so instead of throwing. */
export function describeEntry(e: EtcdEntry): EntryDescription {
  const base = { index: e.index, term: e.term };
  try {
    if (e.type === ENTRY_TYPE.normal) return { ...base, ...describeNormal(e.data) };
    if (e.type === ENTRY_TYPE.confChange) return { ...base, ...describeConfChange(e.data) };
    if (e.type === ENTRY_TYPE.confChangeV2) {
      const changes = decodeConfChangeV2(e.data);
      return {
        ...base,
        kind: 'member change',
        text: `conf change v2: ${changes.map((c) => `${CONF_TYPES[c.type] ?? c.type} ${c.nodeId.toString(16)}`).join(', ') || 'leave joint'}`,
      };
    }
    return { ...base, kind: 'other', text: `entry of unknown type ${e.type}` };
  } catch (err) {
    return { ...base, kind: 'other', text: `does not decode (${(err as Error).message})` };
  }
}
