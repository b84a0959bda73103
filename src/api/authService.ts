// etcd's Auth service (etcdserverpb.Auth) on top of an AuthBackend the member
// implements (src/server/authApi.ts). Answers follow etcd v3.4. Every call hands
// its client's deadline (grpc-timeout) to the backend, which neither proposes nor
// reads past it.
import type { GrpcServer } from '../net/grpcServer.js';
import type { Reply, UnaryCall, UnaryHandler } from '../net/serverCalls.js';
import { ErrLearnerNotSupported } from './errors.js';
import { serviceDefinition } from '../proto/load.js';
import { callerOf } from './caller.js';
import { toStatus, type Header } from './services.js';
import type { AuthInfo, Permission } from '../kv/index.js';
import type { Caller } from './caller.js';

/** What the Auth service needs from a member. Methods throw etcd's (or the auth store's) errors; `deadline` is the client's (Date.now() scale). */
export interface AuthBackend {
  header(revision: number): Header;
  currentRevision(): number;
  isLearner(): boolean;
  /** The user a caller is; undefined without a token or certificate. Throws "invalid auth token". */
  authInfo(c: Caller): Promise<AuthInfo | undefined>;
  authEnable(ai: AuthInfo | undefined, deadline?: number): Promise<void>;
  authDisable(ai: AuthInfo | undefined, deadline?: number): Promise<void>;
  /** A new simple token for the user. */
  authenticate(name: string, password: string, deadline?: number): Promise<string>;
  userAdd(ai: AuthInfo | undefined, name: string, password: string, noPassword: boolean, deadline?: number): Promise<void>;
  userGet(ai: AuthInfo | undefined, name: string, deadline?: number): Promise<string[]>;
  userList(ai: AuthInfo | undefined, deadline?: number): Promise<string[]>;
  userDelete(ai: AuthInfo | undefined, name: string, deadline?: number): Promise<void>;
  userChangePassword(ai: AuthInfo | undefined, name: string, password: string, deadline?: number): Promise<void>;
  userGrantRole(ai: AuthInfo | undefined, user: string, role: string, deadline?: number): Promise<void>;
  userRevokeRole(ai: AuthInfo | undefined, name: string, role: string, deadline?: number): Promise<void>;
  roleAdd(ai: AuthInfo | undefined, name: string, deadline?: number): Promise<void>;
  roleGet(ai: AuthInfo | undefined, role: string, deadline?: number): Promise<Permission[]>;
  roleList(ai: AuthInfo | undefined, deadline?: number): Promise<string[]>;
  roleDelete(ai: AuthInfo | undefined, role: string, deadline?: number): Promise<void>;
  roleGrantPermission(ai: AuthInfo | undefined, name: string, perm: Permission, deadline?: number): Promise<void>;
  roleRevokePermission(ai: AuthInfo | undefined, role: string, key: Buffer, rangeEnd: Buffer, deadline?: number): Promise<void>;
}

// Request shapes as grpc-js hands them over (keepCase, enums as names, bytes as Buffers).
interface NameReq {
  name?: string;
}
interface AuthenticateReq extends NameReq {
  password?: string;
}
interface UserAddReq extends AuthenticateReq {
  options?: { no_password?: boolean } | null;
}
interface RoleReq {
  role?: string;
}
interface GrantRoleReq {
  user?: string;
  role?: string;
}
interface RevokeRoleReq extends NameReq {
  role?: string;
}
interface WirePermission {
  permType?: string | number;
  key?: Buffer;
  range_end?: Buffer;
}
interface GrantPermReq extends NameReq {
  perm?: WirePermission | null;
}
interface RevokePermReq extends RoleReq {
  key?: Buffer;
  range_end?: Buffer;
}

const PERM_TYPES = ['READ', 'WRITE', 'READWRITE'];

function permFromWire(p: WirePermission | null | undefined): Permission {
  const t = typeof p?.permType === 'number' ? p.permType : Math.max(0, PERM_TYPES.indexOf(p?.permType ?? 'READ'));
  return { permType: t, key: Buffer.from(p?.key ?? []), rangeEnd: Buffer.from(p?.range_end ?? []) };
}

function permToWire(p: Permission): Record<string, unknown> {
  return { permType: PERM_TYPES[p.permType], key: p.key, range_end: p.rangeEnd };
}

export function registerAuthService(server: GrpcServer, b: AuthBackend): void {
  const h = () => b.header(b.currentRevision());
  /** A unary handler that knows its caller; refused on a learner, as etcd 3.4 refuses every Auth RPC there. */
  const unary =
    <Req>(fn: (req: Req, ai: AuthInfo | undefined, deadline: number) => Promise<Record<string, unknown>>): UnaryHandler<Req> =>
    (call, cb) => {
      const run = async () => {
        if (b.isLearner()) throw ErrLearnerNotSupported;
        const ai = await b.authInfo(callerOf(call));
        return { header: h(), ...(await fn(call.request, ai, call.deadline)) };
      };
      run().then(
        (r) => cb(null, r),
        (e) => cb(toStatus(e)),
      );
    };
  const none = {};
  server.addService(serviceDefinition('etcdserverpb.Auth'), {
    AuthEnable: unary(async (_r, ai, d) => (await b.authEnable(ai, d), none)),
    AuthDisable: unary(async (_r, ai, d) => (await b.authDisable(ai, d), none)),
    // Authenticate needs no token; a stale one the client still sends must not fail it.
    Authenticate: (call: UnaryCall<AuthenticateReq>, cb: Reply) => {
      const run = async () => {
        if (b.isLearner()) throw ErrLearnerNotSupported;
        const token = await b.authenticate(call.request.name ?? '', call.request.password ?? '', call.deadline);
        return { header: h(), token };
      };
      run().then(
        (r) => cb(null, r),
        (e) => cb(toStatus(e)),
      );
    },
    UserAdd: unary(async (r: UserAddReq, ai, d) => (await b.userAdd(ai, r.name ?? '', r.password ?? '', !!r.options?.no_password, d), none)),
    UserGet: unary(async (r: NameReq, ai, d) => ({ roles: await b.userGet(ai, r.name ?? '', d) })),
    UserList: unary(async (_r, ai, d) => ({ users: await b.userList(ai, d) })),
    UserDelete: unary(async (r: NameReq, ai, d) => (await b.userDelete(ai, r.name ?? '', d), none)),
    UserChangePassword: unary(async (r: AuthenticateReq, ai, d) => (await b.userChangePassword(ai, r.name ?? '', r.password ?? '', d), none)),
    UserGrantRole: unary(async (r: GrantRoleReq, ai, d) => (await b.userGrantRole(ai, r.user ?? '', r.role ?? '', d), none)),
    UserRevokeRole: unary(async (r: RevokeRoleReq, ai, d) => (await b.userRevokeRole(ai, r.name ?? '', r.role ?? '', d), none)),
    RoleAdd: unary(async (r: NameReq, ai, d) => (await b.roleAdd(ai, r.name ?? '', d), none)),
    RoleGet: unary(async (r: RoleReq, ai, d) => ({ perm: (await b.roleGet(ai, r.role ?? '', d)).map(permToWire) })),
    RoleList: unary(async (_r, ai, d) => ({ roles: await b.roleList(ai, d) })),
    RoleDelete: unary(async (r: RoleReq, ai, d) => (await b.roleDelete(ai, r.role ?? '', d), none)),
    RoleGrantPermission: unary(async (r: GrantPermReq, ai, d) => (await b.roleGrantPermission(ai, r.name ?? '', permFromWire(r.perm), d), none)),
    RoleRevokePermission: unary(
      async (r: RevokePermReq, ai, d) => (await b.roleRevokePermission(ai, r.role ?? '', Buffer.from(r.key ?? []), Buffer.from(r.range_end ?? []), d), none),
    ),
  });
}
