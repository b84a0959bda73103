// The auth requests Raft entries carry, in etcd's InternalRaftRequest fields
// (auth_enable=1000 ... auth_role_revoke_permission=1204), with etcd 3.5's
// hashedPassword fields: a password is hashed before it is proposed, never carried
// in plain text. Also etcd's RequestHeader (header=100: ID=1, username=2,
// auth_revision=3), which says who asked a client's request, and authpb.Permission,
// which roles keep in the store as requests carry it.

import { ProtoReader, ProtoWriter } from '../common/protobufWire.js';

/** authpb.Permission.Type */
export enum PermType {
  Read = 0,
  Write = 1,
  ReadWrite = 2,
}

export interface Permission {
  permType: PermType;
  key: Buffer;
  /** Empty: the key alone; "\0": every key from `key` on. */
  rangeEnd: Buffer;
}

/** Who asks: a token's (or a client certificate's) user, at the auth revision the request was made. */
export interface AuthInfo {
  username: string;
  revision: number;
}

/** The auth requests Raft entries carry (InternalRaftRequest fields 1000-1204). */
export type AuthRequest =
  | { authEnable: Record<string, never> }
  | { authDisable: Record<string, never> }
  | { authenticate: { name: string; simpleToken: string } }
  | { userAdd: { name: string; hashedPassword: string; noPassword: boolean } }
  | { userDelete: { name: string } }
  | { userChangePassword: { name: string; hashedPassword: string } }
  | { userGrantRole: { user: string; role: string } }
  | { userRevokeRole: { name: string; role: string } }
  | { roleAdd: { name: string } }
  | { roleDelete: { role: string } }
  | { roleGrantPermission: { name: string; perm: Permission } }
  | { roleRevokePermission: { role: string; key: Buffer; rangeEnd: Buffer } };

/** InternalRaftRequest.header */
export const HEADER_FIELD = 100;

const F = {
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

/** Whether an InternalRaftRequest field may hold an auth request (readAuth says which, if any). */
export function isAuthField(field: number): boolean {
  return field >= F.authEnable && field <= F.roleRevokePermission;
}

// --- authpb.Permission: permType=1 key=2 range_end=3

export function writePermission(w: ProtoWriter, p: Permission): void {
  w.int(1, p.permType).bytes(2, p.key).bytes(3, p.rangeEnd);
}

export function readPermission(data: Uint8Array): Permission {
  const r = new ProtoReader(data);
  const p: Permission = { permType: PermType.Read, key: Buffer.alloc(0), rangeEnd: Buffer.alloc(0) };
  while (!r.done) {
    const { field, wire } = r.tag();
    if (field === 1) p.permType = r.uint();
    else if (field === 2) p.key = Buffer.from(r.bytes());
    else if (field === 3) p.rangeEnd = Buffer.from(r.bytes());
    else r.skip(wire);
  }
  return p;
}

// --- RequestHeader

export function writeHeader(w: ProtoWriter, id: bigint, header: AuthInfo): void {
  w.message(HEADER_FIELD, (m) => m.int(1, id).string(2, header.username).int(3, header.revision));
}

export function readHeader(data: Uint8Array): AuthInfo {
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

// --- The requests

export function writeAuth(w: ProtoWriter, a: AuthRequest): void {
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

/** The auth request in InternalRaftRequest field `field`; undefined for one the member does not apply. */
export function readAuth(field: number, data: Uint8Array): AuthRequest | undefined {
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
