// An etcd backend file into a new Lifeboat KV database: every stored revision of
// bucket `key` as it is (so history since the last compaction, create/mod
// revisions, versions and leases all carry over, and HashKV agrees with etcd's),
// the store's revision and compaction point as etcd would resume them, and the
// lease records with their TTLs. Streams: revisions go to SQLite in batches as the
// pages are read.

import { KvStore, type StoredRevision } from '../kv/index.js';
import { scanEtcdDb, type EtcdDbSummary } from './etcdDbScan.js';

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
export function importEtcdDb(file: string, kvDbPath: string): EtcdImportResult {
  const kv = KvStore.open(kvDbPath);
  try {
    let batch: StoredRevision[] = [];
    const flush = () => {
      if (batch.length > 0) kv.importRevisions(batch);
      batch = [];
    };
    const summary = scanEtcdDb(file, {
      countLiveKeys: false,
      onRevision: (r) => {
        batch.push(r);
        if (batch.length >= BATCH) flush();
      },
    });
    flush();
    kv.setRevision(summary.currentRevision, Math.max(summary.compactRevision, summary.scheduledCompactRevision ?? -1));
    kv.writeLocal((c) => {
      for (const l of summary.leases) c.putLease({ id: l.id, ttl: l.ttl });
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
  if (s.authEnabled || s.authUsers > 0 || s.authRoles > 0) {
    out.push(`authentication (${s.authEnabled ? 'enabled' : 'disabled'}, ${s.authUsers} users, ${s.authRoles} roles): Lifeboat does not serve etcd auth`);
  }
  if (s.leases.some((l) => l.remainingTtl > 0)) out.push('checkpointed remaining lease TTLs: leases restart with their full TTL, as in etcd');
  return out;
}
