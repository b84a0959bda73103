// Copying the source's auth state (etcd's users, roles, permissions and role
// grants) to the destination before any key. etcd never returns a password or
// its hash, so each user is created with a random password that is never shown
// or kept: nobody can log in with it, client-certificate CN login works, and
// `etcdctl user passwd` sets a real one. (A `--no-password` user could never get
// one: etcd 3.4 keeps a user's no-password option through `user passwd`.)
// Auth is never enabled on the destination here: its root has no usable password.
// A user or role already on the destination is kept when it is identical (same
// roles; same permissions) and refused otherwise, before anything is written.
import { randomBytes } from 'node:crypto';
import type { EtcdClient } from '../client/etcdClient.js';
import type { RolePermission } from '../client/types.js';
import { RefusedError } from '../common/errors.js';

/** etcd's built-in role: every permission, granted without being created. */
const ROOT_ROLE = 'root';

export interface AuthCopyResult {
  /** created on the destination (names) */
  roles: string[];
  users: string[];
  /** already on the destination, identical */
  sameRoles: number;
  sameUsers: number;
  /** the source has auth enabled (its calls needed a token) */
  sourceAuthEnabled: boolean;
  destAuthEnabled: boolean;
}

interface AuthState {
  roles: Map<string, RolePermission[]>;
  users: Map<string, string[]>;
}

/** Copies what is missing; throws RefusedError, having written nothing, when a name differs between the sides. */
export async function copyAuth(src: EtcdClient, dst: EtcdClient): Promise<AuthCopyResult> {
  const from = await readAuth(src, 'source', '--from');
  // Nothing to copy: the destination is not read (its user may not be allowed to).
  const none: AuthState = { roles: new Map(), users: new Map() };
  const to = from.roles.size + from.users.size === 0 ? none : await readAuth(dst, 'destination', '--to');
  const newRoles = [...from.roles].filter(([name]) => !to.roles.has(name));
  const newUsers = [...from.users].filter(([name]) => !to.users.has(name));
  for (const [name, perms] of from.roles) {
    const there = to.roles.get(name);
    if (there && permsKey(there) !== permsKey(perms))
      throw new RefusedError(
        `role ${JSON.stringify(name)} exists on the destination with other permissions; delete it there (etcdctl role delete ${name}) or pass --no-copy-auth`,
      );
  }
  for (const [name, roles] of from.users) {
    const there = to.users.get(name);
    if (there && [...there].sort().join('\n') !== [...roles].sort().join('\n'))
      throw new RefusedError(
        `user ${JSON.stringify(name)} exists on the destination with other roles; delete it there (etcdctl user delete ${name}) or pass --no-copy-auth`,
      );
  }
  // Roles first, so every grant below finds its role.
  for (const [name, perms] of newRoles) {
    await dst.roleAdd(name);
    for (const p of perms) await dst.roleGrantPermission(name, p);
  }
  for (const [name, roles] of newUsers) {
    await dst.userAdd(name, randomBytes(32).toString('base64'));
    for (const r of roles) await dst.userGrantRole(name, r);
  }
  return {
    roles: newRoles.map(([n]) => n),
    users: newUsers.map(([n]) => n),
    sameRoles: from.roles.size - newRoles.length,
    sameUsers: from.users.size - newUsers.length,
    sourceAuthEnabled: await src.authenticated(),
    destAuthEnabled: await dst.authenticated(),
  };
}

async function readAuth(c: EtcdClient, side: string, flag: string): Promise<AuthState> {
  try {
    const roles = new Map<string, RolePermission[]>();
    for (const name of await c.roleList()) if (name !== ROOT_ROLE) roles.set(name, await c.roleGet(name));
    const users = new Map<string, string[]>();
    for (const name of await c.userList()) users.set(name, await c.userGet(name));
    return { roles, users };
  } catch (err) {
    // Listing users and roles is admin-only once auth is on.
    if (err instanceof Error)
      err.message = `${side}: reading users and roles: ${err.message.replace(/; check --endpoints$/, `; check ${flag}`)} (with auth enabled this needs a user with the root role; --no-copy-auth copies keys only)`;
    throw err;
  }
}

/** A role's permissions, in an order-free form to compare. */
function permsKey(perms: readonly RolePermission[]): string {
  return perms
    .map((p) => `${p.permType} ${p.key.toString('hex')} ${p.rangeEnd.toString('hex')}`)
    .sort()
    .join('\n');
}
