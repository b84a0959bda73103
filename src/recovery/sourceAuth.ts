// A password checked against a recovery source's own auth store, while the cluster
// is down: the users and their bcrypt hashes in an etcd backend (a data dir's
// member/snap/db or an etcd snapshot file: the authUsers bucket) or in a Lifeboat KV
// store (a data dir's kv.db or a Lifeboat snapshot: its meta table). Read-only.
import fs from 'node:fs';
import path from 'node:path';
import bcrypt from 'bcryptjs';
import { openSqlite } from '../common/sqlite.js';
import { BoltDb } from '../etcdfile/index.js';
import { AuthState, decodeUser, type AuthUser } from '../kv/authStore.js';
import type { ClusterMetaReader } from '../kv/clusterMeta.js';
import { kvPath } from '../storage/layout.js';
import { snapshotKind } from './snapshotFormat.js';

/** What the source says of a user's password: `unknown` when the source cannot tell (no auth store read). */
export type SourcePasswordCheck = 'ok' | 'wrong' | 'no-such-user' | 'auth-disabled' | 'unknown';

interface SourceAuth {
  enabled: boolean;
  user(name: string): AuthUser | undefined;
}

/** The etcd backend's auth buckets: `auth` (authEnabled) and `authUsers` (name → authpb.User). */
function etcdAuth(file: string): SourceAuth {
  const db = BoltDb.open(file);
  try {
    const users = new Map<string, AuthUser>();
    let enabled = false;
    const auth = db.bucket('auth');
    if (auth) for (const e of db.entries(auth)) if (e.key.toString('latin1') === 'authEnabled') enabled = e.value.length === 1 && e.value[0] === 1;
    const bucket = db.bucket('authUsers');
    if (bucket)
      for (const e of db.entries(bucket)) {
        const u = decodeUser(e.value);
        users.set(u.name, u);
      }
    return { enabled, user: (name) => users.get(name) };
  } finally {
    db.close();
  }
}

/** A Lifeboat KV store's auth state, read from its meta table (opened read-only). */
function lifeboatAuth(file: string): SourceAuth {
  const db = openSqlite(file, { readonly: true, fileMustExist: true });
  try {
    const get = db.prepare('SELECT value FROM meta WHERE name = ?').pluck();
    const names = db.prepare('SELECT name FROM meta WHERE name >= ? AND name < ? ORDER BY name').pluck();
    const reader = {
      getMeta: (name: string) => get.get(name) as Buffer | undefined,
      metaNames: (prefix: string) => names.all(prefix, `${prefix}\uffff`) as string[],
    } as ClusterMetaReader;
    const state = new AuthState(reader);
    const enabled = state.enabled();
    const users = new Map(state.userNames().map((n) => [n, state.user(n)!]));
    return { enabled, user: (name) => users.get(name) };
  } finally {
    db.close();
  }
}

function authOf(source: string): SourceAuth | undefined {
  const stat = fs.statSync(source);
  if (stat.isDirectory()) {
    const etcdDb = path.join(source, 'member', 'snap', 'db');
    if (fs.existsSync(etcdDb)) return etcdAuth(etcdDb);
    if (fs.existsSync(kvPath(source))) return lifeboatAuth(kvPath(source));
    return undefined;
  }
  const kind = snapshotKind(source);
  if (kind.format === 'etcd') return etcdAuth(source);
  if (kind.format === 'lifeboat') return lifeboatAuth(source);
  return undefined;
}

/** Checks `password` of `user` against the source's auth store, as etcd's Authenticate would. */
export async function checkSourcePassword(source: string, user: string, password: string): Promise<SourcePasswordCheck> {
  let auth: SourceAuth | undefined;
  try {
    auth = authOf(source);
  } catch {
    return 'unknown'; // damaged or unreadable: the run's own steps say why
  }
  if (!auth) return 'unknown';
  if (!auth.enabled) return 'auth-disabled';
  const u = auth.user(user);
  if (!u) return 'no-such-user';
  if (u.noPassword || u.password.length === 0) return 'wrong';
  return (await bcrypt.compare(password, u.password.toString('latin1'))) ? 'ok' : 'wrong';
}
