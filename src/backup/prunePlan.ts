// Which objects `lifeboat backup prune` deletes: a pure function of the
// catalog, the retention policy and the clock, so it is tested against a
// hand-written answer.
//
// The rule, per cluster ID (each cluster is pruned on its own):
//  1. Restore points kept:
//     - every revision seen within --keep-within of now;
//     - the cluster's latest revision, however old (an agent that stopped
//       writing never has its last backup pruned away);
//     - the newest --keep-last fulls;
//     - the newest full of each of the last --keep-daily UTC days (today
//       included) and of each of the last --keep-weekly ISO weeks (Monday to
//       Sunday, UTC; this week included).
//  2. What a kept restore point needs:
//     - a kept full needs itself only;
//     - a kept revision R that is not a full needs the newest full of its
//       chain at or below R and every segment from that full to the end of the
//       chain (a restore replays them in order), so with --keep-within the whole
//       tail of each chain from the last full before the window is kept.
//  3. A gap manifest goes once every revision it describes lies below the
//     cluster's oldest kept revision (it explains a hole nobody can restore
//     across any more); it has no data object.
//  4. Everything else with a manifest goes: the manifest first, then its object,
//     so a reader never sees a manifest whose object is gone.
//  5. Orphans (data objects with no manifest) older than an hour go: younger
//     ones may be an upload whose manifest is about to be written.
// Objects outside a cluster's folder (lock.json) and manifests that could not be
// read are never touched.
import type { Catalog, ClusterCatalog } from './catalog.js';
import { gapKey, manifestKeyOf } from './layout.js';
import type { FullManifest, Manifest, SegmentManifest } from './manifest.js';

export interface PrunePolicy {
  keepWithinMs: number;
  /** ≥ 1: prune never leaves a cluster without its newest full */
  keepLast: number;
  keepDaily: number;
  keepWeekly: number;
}

export const ORPHAN_AGE_MS = 60 * 60 * 1000;

export interface PruneVictim {
  kind: 'full' | 'segment' | 'gap' | 'orphan';
  clusterId?: string;
  fromRevision?: number;
  toRevision?: number;
  /** deleted first (absent for an orphan) */
  manifest?: string;
  /** deleted second (absent for a gap) */
  object?: string;
  size: number;
}

export interface PrunePlan {
  delete: PruneVictim[];
  /** per cluster: what stays restorable, and why each kept full is kept */
  kept: Array<{ clusterId: string; fulls: Array<{ revision: number; reasons: string[] }>; segments: number; oldestRevision?: number }>;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const t = (iso: string) => Date.parse(iso);

/** UTC day number of `ms` (days since the epoch). */
const dayOf = (ms: number) => Math.floor(ms / DAY_MS);
/** ISO week number since the epoch, weeks starting on Monday (1970-01-05 was a Monday). */
const weekOf = (ms: number) => Math.floor((dayOf(ms) - 4) / 7);

/** The newest full in each of the last `count` buckets (bucket of now included). */
function newestPerBucket(fulls: FullManifest[], bucketOf: (ms: number) => number, count: number, now: number): FullManifest[] {
  const newest = new Map<number, FullManifest>();
  const current = bucketOf(now);
  for (const f of fulls) {
    const b = bucketOf(t(f.takenAt));
    if (b > current || b <= current - count) continue;
    const had = newest.get(b);
    if (!had || t(f.takenAt) > t(had.takenAt) || (t(f.takenAt) === t(had.takenAt) && f.revision > had.revision)) newest.set(b, f);
  }
  return [...newest.values()];
}

/** The segments a restore from `base` to the end of `chain` replays. */
function tailOf(c: ClusterCatalog, chain: ClusterCatalog['chains'][number], base: FullManifest): SegmentManifest[] {
  return c.segments.filter((s) => s.toRevision > base.revision && s.fromRevision <= chain.toRevision && s.toRevision <= chain.toRevision);
}

function planCluster(c: ClusterCatalog, p: PrunePolicy, now: number) {
  const reasons = new Map<FullManifest, string[]>();
  const keepFull = (f: FullManifest, why: string) => reasons.set(f, [...(reasons.get(f) ?? []), why]);
  const keptSegments = new Set<SegmentManifest>();
  const cutoff = now - p.keepWithinMs;

  const byAge = [...c.fulls].sort((a, b) => t(b.takenAt) - t(a.takenAt) || b.revision - a.revision);
  for (const f of byAge.slice(0, p.keepLast)) keepFull(f, 'last');
  for (const f of newestPerBucket(c.fulls, dayOf, p.keepDaily, now)) keepFull(f, 'daily');
  for (const f of newestPerBucket(c.fulls, weekOf, p.keepWeekly, now)) keepFull(f, 'weekly');

  const latest = Math.max(0, ...c.chains.map((ch) => ch.toRevision));
  for (const chain of c.chains) {
    const chainFulls = c.fulls.filter((f) => f.revision >= chain.fromRevision && f.revision <= chain.toRevision);
    // The chain's restore points with the time each was seen; the first one in the window (or the chain's last revision, when it is the cluster's latest) is the oldest kept.
    const points = [
      ...chainFulls.map((f) => ({ revision: f.revision, at: t(f.takenAt) })),
      ...tailOf(c, chain, chain.full).map((s) => ({ revision: Math.max(s.fromRevision, chain.full.revision + 1), at: t(s.lastSeenAt) })),
    ];
    const inWindow = points.filter((x) => x.at >= cutoff).map((x) => x.revision);
    if (chain.toRevision === latest) inWindow.push(chain.toRevision);
    if (inWindow.length === 0) continue;
    const first = Math.min(...inWindow);
    const base = chainFulls.filter((f) => f.revision <= first).reduce((a, f) => (f.revision > a.revision ? f : a), chain.full);
    for (const f of chainFulls) if (t(f.takenAt) >= cutoff) keepFull(f, 'within');
    if (t(base.takenAt) < cutoff) keepFull(base, 'base of kept revisions');
    for (const s of tailOf(c, chain, base)) keptSegments.add(s);
  }

  const keptRevisions = [...reasons.keys()].map((f) => f.revision).concat([...keptSegments].map((s) => s.fromRevision));
  const oldestKept = keptRevisions.length > 0 ? Math.min(...keptRevisions) : undefined;
  return { reasons, keptSegments, oldestKept };
}

/** What to delete from the store `catalog` describes, at time `now` (ms). */
export function planPrune(catalog: Catalog, policy: PrunePolicy, now: number): PrunePlan {
  const manifestKey = (m: Manifest) =>
    catalog.manifestKeys.get(m) ??
    (m.kind === 'gap' ? manifestKeyOf(gapKey(BigInt(`0x${m.clusterId}`), m.fromRevision, m.toRevision)) : manifestKeyOf(m.object));
  const victims: PruneVictim[] = [];
  const kept: PrunePlan['kept'] = [];
  for (const c of catalog.clusters) {
    const { reasons, keptSegments, oldestKept } = planCluster(c, policy, now);
    const data = (m: FullManifest | SegmentManifest): PruneVictim => ({
      kind: m.kind,
      clusterId: c.clusterId,
      fromRevision: m.fromRevision,
      toRevision: m.toRevision,
      manifest: manifestKey(m),
      object: m.object,
      size: (catalog.objects.get(m.object)?.size ?? m.storedSize) + (catalog.objects.get(manifestKey(m))?.size ?? 0),
    });
    for (const f of c.fulls) if (!reasons.has(f)) victims.push(data(f));
    for (const s of c.segments) if (!keptSegments.has(s)) victims.push(data(s));
    for (const g of c.gaps) {
      if (oldestKept !== undefined && g.toRevision >= oldestKept) continue;
      const manifest = manifestKey(g);
      victims.push({
        kind: 'gap',
        clusterId: c.clusterId,
        fromRevision: g.fromRevision,
        toRevision: g.toRevision,
        manifest,
        size: catalog.objects.get(manifest)?.size ?? 0,
      });
    }
    kept.push({
      clusterId: c.clusterId,
      fulls: [...reasons.entries()].map(([f, why]) => ({ revision: f.revision, reasons: why })).sort((a, b) => a.revision - b.revision),
      segments: keptSegments.size,
      ...(oldestKept === undefined ? {} : { oldestRevision: oldestKept }),
    });
  }
  for (const o of catalog.orphans) if (o.lastModified.getTime() < now - ORPHAN_AGE_MS) victims.push({ kind: 'orphan', object: o.key, size: o.size });
  return { delete: victims, kept };
}
