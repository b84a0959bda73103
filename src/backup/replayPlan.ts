// Which objects a replay to a revision needs: the newest full at or before it,
// then the segments that carry every revision after the full up to it, each
// exactly once. A revision no object holds is named with the reason readers can
// see: a recorded gap, a manifest whose object is gone, or nothing at all.
import { lastStoredRevision, type Catalog, type ClusterCatalog } from './catalog.js';
import type { FullManifest, HashPoint, SegmentManifest } from './manifest.js';

export interface ReplayPlan {
  clusterId: string;
  full: FullManifest;
  /**
   * The revision the full restores to: its own, or 1 for a full of an empty
   * cluster, which holds no key to read a revision from (0) while the cluster is
   * at 1, the revision both runtimes start at, which never holds an event.
   */
  base: number;
  /** in revision order; together they hold base + 1 .. target, each once */
  segments: SegmentManifest[];
  target: number;
  /** the HashKV points recorded from full.revision to target, by revision, with the object whose manifest holds each */
  hashPoints: Array<HashPoint & { object: string }>;
}

/** The backup cannot be replayed to the point asked: names the revision and object (or the choice) that stops it. */
export class ReplayError extends Error {
  constructor(
    message: string,
    readonly object?: string,
    readonly revision?: number,
  ) {
    super(message);
    this.name = 'ReplayError';
  }
}

const SEG_REVS = /seg-(\d{20})-(\d{20})-/;

/** The cluster of the store to replay: the one asked, or the only one. */
export function chooseCluster(catalog: Catalog, clusterId?: string): ClusterCatalog {
  const ids = catalog.clusters.map((c) => c.clusterId);
  if (clusterId !== undefined) {
    const c = catalog.clusters.find((x) => x.clusterId === clusterId.toLowerCase().padStart(16, '0'));
    if (!c) throw new ReplayError(`cluster ${clusterId} has no backup in this store (it holds ${ids.join(', ') || 'none'}); give one of those with --cluster`);
    return c;
  }
  if (catalog.clusters.length === 0) throw new ReplayError('the store holds no backup (no manifest); check the store URL, or run lifeboat backup run first');
  if (catalog.clusters.length > 1) throw new ReplayError(`the store holds backups of ${ids.length} clusters (${ids.join(', ')}); choose one with --cluster`);
  return catalog.clusters[0];
}

/**
 * The full and segments that reach `at` (default: the last revision the cluster
 * stored); `skipFulls`: fulls found damaged, so the plan starts from an older one.
 */
export function planReplay(catalog: Catalog, cluster: ClusterCatalog, at?: number, skipFulls: ReadonlySet<string> = new Set()): ReplayPlan {
  const last = lastStoredRevision(cluster);
  const target = at ?? last;
  if (at !== undefined && at > last) throw new ReplayError(`revision ${at} is past the last one stored for cluster ${cluster.clusterId} (${last})`);
  const fulls = cluster.fulls.filter((f) => f.revision <= target && !skipFulls.has(f.object));
  if (fulls.length === 0) {
    const first = cluster.fulls[0];
    throw new ReplayError(
      first
        ? `revision ${target} is before the first full of cluster ${cluster.clusterId} (${first.object}, revision ${first.revision})`
        : `cluster ${cluster.clusterId} has no full in the store (every replay starts from one)`,
    );
  }
  const full = fulls[fulls.length - 1];
  const base = Math.max(full.revision, 1);
  const segments: SegmentManifest[] = [];
  let reached = base;
  while (reached < target) {
    const next = cluster.segments.filter((s) => s.fromRevision <= reached + 1 && s.toRevision > reached).sort((a, b) => b.toRevision - a.toRevision)[0];
    if (!next) throw missingError(catalog, cluster, reached + 1, target);
    segments.push(next);
    reached = next.toRevision;
  }
  const hashPoints = [full, ...segments]
    .flatMap((m) => m.hashPoints.map((h) => ({ ...h, revision: Math.max(h.revision, 1), object: m.object })))
    .filter((h) => h.revision >= base && h.revision <= target)
    .sort((a, b) => a.revision - b.revision)
    .filter((h, i, all) => i === 0 || all[i - 1].revision !== h.revision);
  return { clusterId: cluster.clusterId, full, base, segments, target: Math.max(target, base), hashPoints };
}

/** Revision `rev` is in no segment: say why, naming the object readers lost or the gap recorded. */
function missingError(catalog: Catalog, cluster: ClusterCatalog, rev: number, target: number): ReplayError {
  for (const u of catalog.unreadable) {
    const m = SEG_REVS.exec(u.key);
    if (!u.key.startsWith(`${cluster.clusterId}/`) || !m || Number(m[1]) > rev || Number(m[2]) < rev) continue;
    const object = u.key.replace(/\.manifest\.json$/, '');
    const gone = u.problem.startsWith('its object ');
    return new ReplayError(
      `revision ${rev}: segment ${object} ${gone ? 'is not in the store (its manifest is)' : `cannot be read (${u.problem})`}`,
      object,
      rev,
    );
  }
  for (const o of catalog.orphans) {
    const m = SEG_REVS.exec(o.key);
    if (!o.key.startsWith(`${cluster.clusterId}/`) || !m || Number(m[1]) > rev || Number(m[2]) < rev) continue;
    return new ReplayError(`revision ${rev}: segment ${o.key} has no manifest (never committed, or its manifest was lost)`, o.key, rev);
  }
  const gap = cluster.gaps.find((g) => g.fromRevision <= rev && g.toRevision >= rev);
  if (gap)
    return new ReplayError(
      `revision ${rev} is in a recorded gap (revisions ${gap.fromRevision}-${gap.toRevision}, ${gap.reason}: ${gap.detail}); replay to a revision before ${gap.fromRevision} or from the full after it`,
      undefined,
      rev,
    );
  const after = cluster.segments.find((s) => s.fromRevision > rev);
  const end = Math.min(target, after ? after.fromRevision - 1 : target);
  return new ReplayError(
    `revisions ${rev}-${end} are in no object of the store: a segment is missing${after ? ` before ${after.object}` : ''}`,
    undefined,
    rev,
  );
}
