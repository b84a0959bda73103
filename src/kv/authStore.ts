// Users, roles and the auth switch, kept in the KV database (the `meta` table) so
// that they change in the same transaction as the entry that decides them, replay
// from the Raft log, and travel in every snapshot: etcd v3.4's auth/store.go.
//
//   auth/enabled        1 byte (1 or 0), etcd's auth bucket `authEnabled`
//   auth/revision       8-byte big-endian, etcd's `authRevision`
//   auth/user/<name>    authpb.User   {name=1, password=2 (bcrypt hash), roles=3, options=4{no_password=1}}
//   auth/role/<name>    authpb.Role   {name=1, keyPermission=2 {permType=1, key=2, range_end=3}}
//
// Values are etcd's own protobufs, so an etcd backend's authUsers/authRoles values
// import as they are. Passwords arrive here already hashed (the member hashes them
// before proposing): no plain-text password is ever in an entry or in this file.
// Also the permission checks (etcd's isOpPermitted and IsAdminPermitted), which read
// only this state, so every member decides the same at apply.

import type { ClusterMetaReader, ClusterMetaWriter } from './clusterMeta.js';
import {
  ErrAuthFailed,
  ErrAuthNotEnabled,
  ErrAuthOldRevision,
  ErrInvalidAuthMgmt,
  ErrPermissionDenied,
  ErrPermissionNotGranted,
  ErrRoleAlreadyExist,
  ErrRoleEmpty,
  ErrRoleNotFound,
  ErrRoleNotGranted,
  ErrRootRoleNotExist,
  ErrRootUserNotExist,
  ErrUserAlreadyExist,
  ErrUserEmpty,
  ErrUserNotFound,
  type AuthError,
} from './authErrors.js';
import { ProtoReader, ProtoWriter } from '../common/protobufWire.js';
import { PermType, readPermission, writePermission, type AuthInfo, type AuthRequest, type Permission } from './authRequestCodec.js';

export const ROOT_USER = 'root';
export const ROOT_ROLE = 'root';

export interface AuthUser {
  name: string;
  /** bcrypt hash; empty for a --no-password user. */
  password: Buffer;
  /** Sorted, as etcd keeps them. */
  roles: string[];
  noPassword: boolean;
}

export interface AuthRole {
  name: string;
  /** Sorted by key, as etcd keeps them. */
  perms: Permission[];
}

/** What applying an auth request did, for the proposer and the member's token store. */
export interface AuthApplyResult {
  error?: AuthError;
  /** authenticate: the token made ("<prefix>.<index>") and its user. */
  token?: { token: string; username: string };
  /** Tokens of this user are no longer valid (deleted, password changed). */
  invalidateUser?: string;
  /** Auth was switched on or off: every token is dropped. */
  switched?: boolean;
}

const ENABLED = 'auth/enabled';
const REVISION = 'auth/revision';
const USER = 'auth/user/';
const ROLE = 'auth/role/';

// --- authpb codec

export function encodeUser(u: AuthUser): Buffer {
  const w = new ProtoWriter(64);
  w.string(1, u.name).bytes(2, u.password);
  for (const r of u.roles) w.bytesAlways(3, Buffer.from(r, 'utf8'));
  if (u.noPassword) w.message(4, (m) => m.bool(1, true));
  return w.finish();
}

export function decodeUser(data: Uint8Array): AuthUser {
  const r = new ProtoReader(data);
  const u: AuthUser = { name: '', password: Buffer.alloc(0), roles: [], noPassword: false };
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1) u.name = r.string();
    else if (field === 2) u.password = Buffer.from(r.bytes());
    else if (field === 3) u.roles.push(r.string());
    else if (field === 4) {
      const o = new ProtoReader(r.bytes());
      while (!o.done) {
        const t = o.tag();
        if (t.field === 1) u.noPassword = o.bool();
        else o.skip(t.wire);
      }
    } else r.skip(wire);
  }
  return u;
}

export function encodeRole(role: AuthRole): Buffer {
  const w = new ProtoWriter(64);
  w.string(1, role.name);
  for (const p of role.perms) w.message(2, (m) => writePermission(m, p));
  return w.finish();
}

export function decodeRole(data: Uint8Array): AuthRole {
  const r = new ProtoReader(data);
  const role: AuthRole = { name: '', perms: [] };
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1) role.name = r.string();
    else if (field === 2) role.perms.push(readPermission(r.bytes()));
    else r.skip(wire);
  }
  return role;
}

// --- reading

/** The auth state in a store, read on demand (the table is small; nothing is cached across applies). */
export class AuthState {
  constructor(private readonly m: ClusterMetaReader) {}

  enabled(): boolean {
    const v = this.m.getMeta(ENABLED);
    return !!v && v.length > 0 && v[0] === 1;
  }

  revision(): number {
    const v = this.m.getMeta(REVISION);
    return v && v.length === 8 ? Number(v.readBigUInt64BE()) : 0;
  }

  user(name: string): AuthUser | undefined {
    const v = this.m.getMeta(USER + name);
    return v && decodeUser(v);
  }

  role(name: string): AuthRole | undefined {
    const v = this.m.getMeta(ROLE + name);
    return v && decodeRole(v);
  }

  userNames(): string[] {
    return this.m.metaNames(USER).map((n) => n.slice(USER.length));
  }

  roleNames(): string[] {
    return this.m.metaNames(ROLE).map((n) => n.slice(ROLE.length));
  }

  hasRole(user: string, role: string): boolean {
    return this.user(user)?.roles.includes(role) ?? false;
  }

  /** etcd's IsAdminPermitted: anyone while auth is off; else a user with the root role. */
  adminPermitted(ai: AuthInfo | undefined): AuthError | undefined {
    if (!this.enabled()) return undefined;
    if (!ai || ai.username === '') return ErrUserEmpty;
    const u = this.user(ai.username);
    if (!u) return ErrUserNotFound;
    return u.roles.includes(ROOT_ROLE) ? undefined : ErrPermissionDenied;
  }

  /** etcd's isOpPermitted: read or write access to a key (rangeEnd empty) or a range. */
  opPermitted(ai: AuthInfo | undefined, key: Uint8Array, rangeEnd: Uint8Array | undefined, write: boolean): AuthError | undefined {
    if (!this.enabled()) return undefined;
    if (!ai || ai.revision === 0) return ErrUserEmpty;
    if (ai.revision < this.revision()) return ErrAuthOldRevision;
    const u = this.user(ai.username);
    if (!u) return ErrPermissionDenied;
    if (u.roles.includes(ROOT_ROLE)) return undefined;
    const granted: Interval[] = [];
    for (const name of u.roles) {
      for (const p of this.role(name)?.perms ?? []) {
        if (p.permType === PermType.ReadWrite || p.permType === (write ? PermType.Write : PermType.Read)) granted.push(permInterval(p));
      }
    }
    const ok = rangeEnd && rangeEnd.length > 0 ? covers(granted, affine(key, rangeEnd)) : granted.some((iv) => containsPoint(iv, Buffer.from(key)));
    return ok ? undefined : ErrPermissionDenied;
  }
}

// --- key intervals as etcd's adt package compares them: an empty end is +infinity

interface Interval {
  begin: Buffer;
  /** Empty: unbounded. */
  end: Buffer;
}

/** Affine order: the empty byte string sorts after every other. */
function cmp(a: Buffer, b: Buffer): number {
  if (a.length === 0) return b.length === 0 ? 0 : 1;
  if (b.length === 0) return -1;
  return Buffer.compare(a, b);
}

function affine(key: Uint8Array, rangeEnd: Uint8Array): Interval {
  const end = rangeEnd.length === 1 && rangeEnd[0] === 0 ? Buffer.alloc(0) : Buffer.from(rangeEnd);
  return { begin: Buffer.from(key), end };
}

function permInterval(p: Permission): Interval {
  if (p.rangeEnd.length === 0) return { begin: p.key, end: Buffer.concat([p.key, Buffer.from([0])]) };
  return affine(p.key, p.rangeEnd);
}

function containsPoint(iv: Interval, p: Buffer): boolean {
  return cmp(iv.begin, p) <= 0 && cmp(p, iv.end) < 0;
}

/** Whether the union of `ivs` covers `want` without a gap (etcd's intervalTree.Contains). */
function covers(ivs: Interval[], want: Interval): boolean {
  const hits = ivs.filter((iv) => cmp(iv.begin, want.end) < 0 && cmp(want.begin, iv.end) < 0).sort((a, b) => cmp(a.begin, b.begin));
  if (hits.length === 0) return false;
  let minBegin = hits[0].begin;
  let maxEnd = hits[0].end;
  for (const iv of hits.slice(1)) {
    if (cmp(maxEnd, iv.begin) < 0) return false;
    if (cmp(iv.end, maxEnd) > 0) maxEnd = iv.end;
    if (cmp(iv.begin, minBegin) < 0) minBegin = iv.begin;
  }
  return cmp(maxEnd, want.end) >= 0 && cmp(minBegin, want.begin) <= 0;
}

// --- writing (apply)

function revisionBytes(n: number): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
}

/** Applies an auth request at entry `index` (who may ask was checked by the caller). */
export function applyAuthRequest(w: ClusterMetaWriter, req: AuthRequest, index: number): AuthApplyResult {
  const s = new AuthState(w);
  const putUser = (u: AuthUser) => w.setMeta(USER + u.name, encodeUser(u));
  const putRole = (r: AuthRole) => w.setMeta(ROLE + r.name, encodeRole(r));
  const commit = () => w.setMeta(REVISION, revisionBytes(s.revision() + 1));
  if ('authEnable' in req) {
    if (s.enabled()) return {};
    const root = s.user(ROOT_USER);
    if (!root) return { error: ErrRootUserNotExist };
    if (!root.roles.includes(ROOT_ROLE)) return { error: ErrRootRoleNotExist };
    w.setMeta(ENABLED, Buffer.from([1]));
    return { switched: true };
  }
  if ('authDisable' in req) {
    if (!s.enabled()) return {};
    w.setMeta(ENABLED, Buffer.from([0]));
    commit();
    return { switched: true };
  }
  if ('authenticate' in req) {
    if (!s.enabled()) return { error: ErrAuthNotEnabled };
    const u = s.user(req.authenticate.name);
    if (!u || u.noPassword) return { error: ErrAuthFailed };
    return { token: { token: `${req.authenticate.simpleToken}.${index}`, username: u.name } };
  }
  if ('userAdd' in req) {
    const { name, hashedPassword, noPassword } = req.userAdd;
    if (name.length === 0) return { error: ErrUserEmpty };
    if (s.user(name)) return { error: ErrUserAlreadyExist };
    putUser({ name, password: noPassword ? Buffer.alloc(0) : Buffer.from(hashedPassword, 'utf8'), roles: [], noPassword });
    commit();
    return {};
  }
  if ('userDelete' in req) {
    const { name } = req.userDelete;
    if (s.enabled() && name === ROOT_USER) return { error: ErrInvalidAuthMgmt };
    if (!s.user(name)) return { error: ErrUserNotFound };
    w.deleteMeta(USER + name);
    commit();
    return { invalidateUser: name };
  }
  if ('userChangePassword' in req) {
    const { name, hashedPassword } = req.userChangePassword;
    const u = s.user(name);
    if (!u) return { error: ErrUserNotFound };
    putUser({ ...u, password: Buffer.from(hashedPassword, 'utf8') });
    commit();
    return { invalidateUser: name };
  }
  if ('userGrantRole' in req) {
    const { user, role } = req.userGrantRole;
    const u = s.user(user);
    if (!u) return { error: ErrUserNotFound };
    // The root role may be granted before it exists (etcd).
    if (role !== ROOT_ROLE && !s.role(role)) return { error: ErrRoleNotFound };
    if (u.roles.includes(role)) return {};
    putUser({ ...u, roles: [...u.roles, role].sort(byBytes) });
    commit();
    return {};
  }
  if ('userRevokeRole' in req) {
    const { name, role } = req.userRevokeRole;
    if (s.enabled() && name === ROOT_USER && role === ROOT_ROLE) return { error: ErrInvalidAuthMgmt };
    const u = s.user(name);
    if (!u) return { error: ErrUserNotFound };
    if (!u.roles.includes(role)) return { error: ErrRoleNotGranted };
    putUser({ ...u, roles: u.roles.filter((r) => r !== role) });
    commit();
    return {};
  }
  if ('roleAdd' in req) {
    const { name } = req.roleAdd;
    if (name.length === 0) return { error: ErrRoleEmpty };
    if (s.role(name)) return { error: ErrRoleAlreadyExist };
    putRole({ name, perms: [] });
    commit();
    return {};
  }
  if ('roleDelete' in req) {
    const { role } = req.roleDelete;
    if (s.enabled() && role === ROOT_ROLE) return { error: ErrInvalidAuthMgmt };
    if (!s.role(role)) return { error: ErrRoleNotFound };
    w.deleteMeta(ROLE + role);
    for (const name of s.userNames()) {
      const u = s.user(name);
      if (u?.roles.includes(role)) putUser({ ...u, roles: u.roles.filter((r) => r !== role) });
    }
    commit();
    return {};
  }
  if ('roleGrantPermission' in req) {
    const { name, perm } = req.roleGrantPermission;
    const role = s.role(name);
    if (!role) return { error: ErrRoleNotFound };
    const same = role.perms.find((p) => p.key.equals(perm.key) && p.rangeEnd.equals(perm.rangeEnd));
    if (same) same.permType = perm.permType;
    else role.perms = [...role.perms, perm].sort((a, b) => Buffer.compare(a.key, b.key));
    putRole(role);
    commit();
    return {};
  }
  const { role: name, key, rangeEnd } = req.roleRevokePermission;
  const role = s.role(name);
  if (!role) return { error: ErrRoleNotFound };
  const kept = role.perms.filter((p) => !(p.key.equals(key) && p.rangeEnd.equals(rangeEnd)));
  if (kept.length === role.perms.length) return { error: ErrPermissionNotGranted };
  putRole({ ...role, perms: kept });
  commit();
  return {};
}

const byBytes = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

/** Writes an etcd backend's auth buckets as they are (snapshot restore of a real etcd file). */
export function importEtcdAuth(w: ClusterMetaWriter, a: { enabled: boolean; revision: number; users: Uint8Array[]; roles: Uint8Array[] }): void {
  w.setMeta(ENABLED, Buffer.from([a.enabled ? 1 : 0]));
  w.setMeta(REVISION, revisionBytes(a.revision));
  for (const v of a.users) w.setMeta(USER + decodeUser(v).name, Buffer.from(v));
  for (const v of a.roles) w.setMeta(ROLE + decodeRole(v).name, Buffer.from(v));
}
