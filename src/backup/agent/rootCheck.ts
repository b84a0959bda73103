// etcd 3.4 serves Maintenance.Snapshot and HashKV to the root role only: an
// agent or a full run as another user would fail at its first full, so it is
// refused at start, in one line.
import type { EtcdClient } from '../../client/etcdClient.js';
import { RefusedError } from '../../common/errors.js';

/** Refuses `user` (the --user of the command) without the root role; nothing to check without auth. */
export async function requireRootRole(client: EtcdClient, user: string | undefined): Promise<void> {
  if (!user) return;
  await client.status(); // authenticates, so authenticated() knows whether auth is on
  if (!(await client.authenticated())) return;
  const roles = await client.userGet(user);
  if (!roles.includes('root'))
    throw new RefusedError(
      `user ${user} has no root role (roles: ${roles.join(', ') || 'none'}); etcd 3.4 serves Snapshot and HashKV to root only: give --user a user with the root role`,
    );
}
