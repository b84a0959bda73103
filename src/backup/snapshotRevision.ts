// The revision of a full: the one a member restored from the snapshot starts
// at. A Lifeboat snapshot keeps it. An etcd file keeps none: etcd takes the
// newest key revision left in it, or the compaction's when that is newer (a
// compaction drops the tombstones of deletes up to it), so a restored member
// answers, and writes after, the compaction's revision; a file with neither (an
// empty keyspace never written to) restores at revision 1, where etcd starts
// every store. `etcdctl snapshot status` (and snapshotStatus's `revision`) show
// only the first (0 for an empty keyspace). The agent writes this revision into
// a full's manifest; every reader of a full must read the file the same way.
import type { SnapshotStatus } from '../recovery/snapshotFormat.js';

export function snapshotRevision(s: Pick<SnapshotStatus, 'revision' | 'etcd'>): number {
  return Math.max(1, s.revision, s.etcd?.compactRevision ?? 0);
}
