// `lifeboat backup status`: how old the newest usable backup is. Per cluster in
// the store: the last full, the last segment, the last stored revision, the
// gaps; who holds the agent's lock; and, given the cluster's endpoints, how far
// the store is behind it, in revisions and in seconds (since the agent saw the
// last stored revision, when the cluster has moved on since).
import type { EtcdClient } from '../client/etcdClient.js';
import { readLock, type LockRecord } from './agent/agentLock.js';
import { lastStoredRevision, readCatalog } from './catalog.js';
import { clusterIdText } from './layout.js';
import type { ObjectStore } from './objectStore.js';

export interface ClusterStatus {
  clusterId: string;
  lastFull?: { revision: number; takenAt: string; ageSeconds: number; object: string };
  lastSegment?: { fromRevision: number; toRevision: number; lastSeenAt: string; ageSeconds: number; object: string };
  lastStoredRevision: number;
  gaps: number;
  /** with endpoints, for the cluster they serve */
  lag?: { headRevision: number; revisions: number; seconds: number; endpoint: string };
}

export interface BackupStatus {
  store: string;
  agent?: LockRecord;
  clusters: ClusterStatus[];
  /** the cluster the endpoints serve, when the store has nothing of it */
  liveClusterNotInStore?: string;
}

export async function backupStatus(store: ObjectStore, client?: EtcdClient, now = Date.now()): Promise<BackupStatus> {
  const catalog = await readCatalog(store);
  const age = (iso: string) => Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  const clusters = catalog.clusters.map((c): ClusterStatus => {
    const full = c.fulls[c.fulls.length - 1];
    const seg = [...c.segments].sort((a, b) => a.toRevision - b.toRevision).pop();
    return {
      clusterId: c.clusterId,
      ...(full ? { lastFull: { revision: full.revision, takenAt: full.takenAt, ageSeconds: age(full.takenAt), object: full.object } } : {}),
      ...(seg
        ? {
            lastSegment: {
              fromRevision: seg.fromRevision,
              toRevision: seg.toRevision,
              lastSeenAt: seg.lastSeenAt,
              ageSeconds: age(seg.lastSeenAt),
              object: seg.object,
            },
          }
        : {}),
      lastStoredRevision: lastStoredRevision(c),
      gaps: c.gaps.length,
    };
  });
  const agent = await readLock(store);
  const out: BackupStatus = { store: store.url, ...(agent ? { agent } : {}), clusters };
  if (client) {
    const r = await client.range('\0', { countOnly: true });
    const endpoint = await client.activeEndpoint();
    const id = clusterIdText(r.header.clusterId);
    const c = clusters.find((x) => x.clusterId === id);
    if (!c) out.liveClusterNotInStore = id;
    else {
      const revisions = Math.max(0, r.header.revision - c.lastStoredRevision);
      // The store's newest revision was seen then; the cluster has moved on since, at the latest.
      const seenAt = c.lastSegment && c.lastSegment.toRevision === c.lastStoredRevision ? c.lastSegment.lastSeenAt : c.lastFull?.takenAt;
      c.lag = { headRevision: r.header.revision, revisions, seconds: revisions > 0 && seenAt ? age(seenAt) : 0, endpoint };
    }
  }
  return out;
}
