// What `backup restore-keys` will do, decided from two reads: the keys under the
// prefixes as the backup had them at the point, and as the live cluster has them
// now. Every key gets one action and the live mod revision it was seen at; the
// apply (restoreKeysApply.ts) writes a key only while it still has that mod
// revision. The plan is JSON, so `--dry-run -w json > plan.json` and `--plan
// plan.json` apply exactly what was reviewed.
import type { KeyValue } from '../client/types.js';
import { InputError } from '../common/errors.js';

export const PLAN_KIND = 'lifeboat-restore-keys-plan';

export type KeyAction =
  /** gone from the live cluster: written back */
  | 'restore'
  /** different in the live cluster: overwritten with the backup's value */
  | 'overwrite'
  /** created since the point: deleted with --delete-newer */
  | 'delete'
  /** created since the point and left alone */
  | 'keep-newer'
  /** the same value in both: nothing to do */
  | 'same';

export interface PlannedKey {
  /** base64 */
  key: string;
  action: KeyAction;
  /** the live mod revision the key was seen at (0: absent): the apply's guard */
  liveModRevision: number;
  /** base64 of the value to write (restore, overwrite) */
  value?: string;
  /** the lease the key had at the point, and its granted TTL: a fresh lease is granted with it */
  lease?: { id: string; ttl: number };
}

export interface RestoreKeysPlan {
  format: 1;
  kind: typeof PLAN_KIND;
  store: string;
  point: string;
  clusterId: string;
  revision: number;
  liveClusterId: string;
  liveRevision: number;
  prefixes: string[];
  deleteNewer: boolean;
  dropLeases: boolean;
  keys: PlannedKey[];
}

export interface BackupKey {
  kv: KeyValue;
  /** the granted TTL of its lease at the point, when it had one */
  leaseTtl?: number;
}

const b64 = (b: Buffer) => b.toString('base64');

/** The actions, from the backup's keys and the live ones (both under the same prefixes), in key order. */
export function decideKeys(backup: readonly BackupKey[], live: readonly KeyValue[], o: { deleteNewer: boolean; dropLeases: boolean }): PlannedKey[] {
  const liveBy = new Map(live.map((kv) => [b64(kv.key), kv]));
  const backupBy = new Map(backup.map((b) => [b64(b.kv.key), b]));
  const keys = [...new Set([...backupBy.keys(), ...liveBy.keys()])].sort((a, b) => Buffer.compare(Buffer.from(a, 'base64'), Buffer.from(b, 'base64')));
  return keys.map((k): PlannedKey => {
    const was = backupBy.get(k);
    const now = liveBy.get(k);
    const liveModRevision = now?.modRevision ?? 0;
    if (!was) return { key: k, action: o.deleteNewer ? 'delete' : 'keep-newer', liveModRevision };
    const lease = !o.dropLeases && was.kv.lease !== 0n && was.leaseTtl ? { id: was.kv.lease.toString(16), ttl: was.leaseTtl } : undefined;
    if (now && now.value.equals(was.kv.value)) return { key: k, action: 'same', liveModRevision };
    return { key: k, action: now ? 'overwrite' : 'restore', liveModRevision, value: b64(was.kv.value), ...(lease ? { lease } : {}) };
  });
}

/** The prefixes of a Kubernetes namespace, from the keys seen: every /registry/<resource>/NS/ and /registry/namespaces/NS. */
export function namespacePrefixes(ns: string, keys: readonly Buffer[]): string[] {
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(ns)) throw new InputError(`--k8s-namespace ${ns}: not a Kubernetes namespace name`);
  const out = new Set<string>([`/registry/namespaces/${ns}`]);
  for (const k of keys) {
    const s = k.toString('utf8');
    if (!s.startsWith('/registry/')) continue;
    const parts = s.split('/');
    // /registry/<resource, maybe group/resource>/<ns>/<name>: the namespace is the segment before the name.
    if (parts.length >= 5 && parts[parts.length - 2] === ns) out.add(`${parts.slice(0, -1).join('/')}/`);
  }
  return [...out].sort();
}

export function readPlan(text: string, file: string): RestoreKeysPlan {
  let p: RestoreKeysPlan;
  try {
    p = JSON.parse(text) as RestoreKeysPlan;
  } catch (e) {
    throw new InputError(`--plan ${file}: not JSON (${(e as Error).message}); give the file 'restore-keys --dry-run -w json' wrote`);
  }
  if (p?.kind !== PLAN_KIND || p.format !== 1 || !Array.isArray(p.keys))
    throw new InputError(`--plan ${file}: not a restore-keys plan; give the file 'restore-keys --dry-run -w json' wrote`);
  return p;
}

export function planCounts(keys: readonly PlannedKey[]): Record<KeyAction, number> {
  const c: Record<KeyAction, number> = { restore: 0, overwrite: 0, delete: 0, 'keep-newer': 0, same: 0 };
  for (const k of keys) c[k.action]++;
  return c;
}
