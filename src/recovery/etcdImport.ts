// An etcd backend file into a new Lifeboat KV database: every stored revision of
// bucket `key` as it is (so history since the last compaction, create/mod
// revisions, versions and leases all carry over, and HashKV agrees with etcd's),
// the store's revision and compaction point as etcd would resume them, and the
// lease records with their TTLs, and the auth state (users with their bcrypt hashes,
// roles, the switch and its revision) as etcd stored it. Streams: revisions go to
// SQLite in batches as the pages are read.

import { importEtcdAuth, KvStore, type StoredRevision } from '../kv/index.js';
import { scanEtcdDb, type EtcdDbSummary } from '../etcdfile/index.js';

const BATCH = 5000;

export interface EtcdImportResult {
  summary: EtcdDbSummary;
  /** What the file holds that the new store does not take over, one line each. */
  notCarriedOver: string[];
}

const ALARM_NAMES: Record<number, string> = { 1: 'NOSPACE', 2: 'CORRUPT' };

/**
 * Imports `file` into a new KV database at kvDbPath. The applied index becomes
 * etcd's consistent_index (at least 1), at term 1: etcd 3.4 keeps no term in its backend.
 */
export function importEtcdDb(file: string, kvDbPath: string, onProgress?: (read: number, total: number) => void): EtcdImportResult {
  const kv = KvStore.open(kvDbPath);
  try {
    let batch: StoredRevision[] = [];
    const flush = () => {
      if (batch.length > 0) kv.importRevisions(batch);
      batch = [];
    };
    const auth = { enabled: false, revision: 0, users: [] as Buffer[], roles: [] as Buffer[] };
    const summary = scanEtcdDb(file, {
      countLiveKeys: false,
      ...(onProgress ? { onProgress } : {}),
      onAuth: (bucket, key, value) => {
        if (bucket === 'authUsers') auth.users.push(value);
        else if (bucket === 'authRoles') auth.roles.push(value);
        else if (key.toString('latin1') === 'authEnabled') auth.enabled = value.length === 1 && value[0] === 1;
        else if (key.toString('latin1') === 'authRevision' && value.length === 8) auth.revision = Number(value.readBigUInt64BE());
      },
      onRevision: (r) => {
        batch.push(r);
        if (batch.length >= BATCH) flush();
      },
    });
    flush();
    kv.setRevision(summary.currentRevision, Math.max(summary.compactRevision, summary.scheduledCompactRevision ?? -1));
    kv.writeLocal((c) => {
      for (const l of summary.leases) c.putLease({ id: l.id, ttl: l.ttl });
      if (auth.enabled || auth.users.length > 0 || auth.roles.length > 0) importEtcdAuth(c, auth);
    });
    kv.apply(Math.max(summary.consistentIndex ?? 0, 1), 1, () => undefined);
    kv.makeDurable();
    return { summary, notCarriedOver: notCarriedOver(summary) };
  } finally {
    kv.close();
  }
}

function notCarriedOver(s: EtcdDbSummary): string[] {
  const out: string[] = [];
  if (s.removedMembers.length > 0) out.push(`${s.removedMembers.length} removed-member record(s) of the old cluster`);
  if (s.alarms.length > 0) {
    out.push(`alarms ${s.alarms.map((a) => `${ALARM_NAMES[a.alarm] ?? a.alarm} on ${a.memberId.toString(16)}`).join(', ')}`);
  }
  if (s.leases.some((l) => l.remainingTtl > 0)) out.push('checkpointed remaining lease TTLs: leases restart with their full TTL, as in etcd');
  return out;
}
