// What a store holds, as readers see it: every manifest (the commit markers),
// grouped by cluster ID and ordered by revision, with the chains of revisions
// they cover, the gaps between them, and the restorable window. Objects with
// no manifest are not part of it (they are listed apart, for prune). The agent
// resumes from here, and list, verify, prune and restore read it.
import { isManifestKey, MANIFEST_SUFFIX } from './layout.js';
import { parseManifest, type FullManifest, type GapManifest, type Manifest, type SegmentManifest } from './manifest.js';
import type { ObjectStore, StoredObject } from './objectStore.js';

export interface ClusterCatalog {
  clusterId: string;
  fulls: FullManifest[];
  segments: SegmentManifest[];
  gaps: GapManifest[];
  /**
   * Runs of revisions a restore can reach: each starts at a full's revision and
   * runs through the segments that follow it without a hole.
   */
  chains: Array<{ fromRevision: number; toRevision: number; full: FullManifest }>;
  /** revisions between two stored objects that no object covers (recorded as a gap or not) */
  holes: Array<{ fromRevision: number; toRevision: number; recorded: boolean }>;
  /** the earliest and latest restorable revision; undefined with no full */
  window?: { fromRevision: number; toRevision: number };
}

export interface Catalog {
  clusters: ClusterCatalog[];
  /** manifests that could not be read: their objects are treated as absent */
  unreadable: Array<{ key: string; problem: string }>;
  /** data objects with no manifest (a writer died between the two, or a manifest was lost) */
  orphans: StoredObject[];
  /** every stored object, for sizes */
  objects: Map<string, StoredObject>;
  /** the key each manifest was read from (prune deletes it) */
  manifestKeys: Map<Manifest, string>;
}

export async function readCatalog(store: ObjectStore): Promise<Catalog> {
  const listed = await store.list('');
  const objects = new Map(listed.map((o) => [o.key, o]));
  const manifests: Manifest[] = [];
  const unreadable: Catalog['unreadable'] = [];
  const manifestKeys = new Map<Manifest, string>();
  for (const o of listed) {
    if (!isManifestKey(o.key)) continue;
    try {
      const m = parseManifest(o.key, await store.get(o.key));
      if (m.kind !== 'gap' && !objects.has(m.object)) unreadable.push({ key: o.key, problem: `its object ${m.object} is not in the store` });
      else {
        manifests.push(m);
        manifestKeys.set(m, o.key);
      }
    } catch (e) {
      unreadable.push({ key: o.key, problem: (e as Error).message });
    }
  }
  const described = new Set(listed.filter((o) => isManifestKey(o.key)).map((o) => o.key.slice(0, -MANIFEST_SUFFIX.length)));
  const orphans = listed.filter((o) => !isManifestKey(o.key) && o.key.includes('/') && !described.has(o.key));
  const byCluster = new Map<string, Manifest[]>();
  for (const m of manifests) byCluster.set(m.clusterId, [...(byCluster.get(m.clusterId) ?? []), m]);
  const clusters = [...byCluster.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([id, ms]) => clusterCatalog(id, ms));
  return { clusters, unreadable, orphans, objects, manifestKeys };
}

const byRevision = <T extends { fromRevision: number; toRevision: number }>(a: T, b: T) => a.fromRevision - b.fromRevision || a.toRevision - b.toRevision;

export function clusterCatalog(clusterId: string, ms: readonly Manifest[]): ClusterCatalog {
  const fulls = ms.filter((m): m is FullManifest => m.kind === 'full').sort(byRevision);
  const segments = ms.filter((m): m is SegmentManifest => m.kind === 'segment').sort(byRevision);
  const gaps = ms.filter((m): m is GapManifest => m.kind === 'gap').sort(byRevision);
  // Coverage: fulls cover their revision; segments their range. Walk it in order.
  const spans = [
    ...fulls.map((f) => ({ fromRevision: f.revision, toRevision: f.revision, full: f })),
    ...segments.map((s) => ({ fromRevision: s.fromRevision, toRevision: s.toRevision, full: undefined })),
  ].sort(byRevision);
  const chains: ClusterCatalog['chains'] = [];
  const holes: ClusterCatalog['holes'] = [];
  let covered = 0; // highest revision reached so far by anything stored
  let chain: ClusterCatalog['chains'][number] | undefined;
  for (const s of spans) {
    if (covered > 0 && s.fromRevision > covered + 1) {
      const hole = { fromRevision: covered + 1, toRevision: s.fromRevision - 1 };
      holes.push({ ...hole, recorded: gaps.some((g) => g.fromRevision <= hole.fromRevision && g.toRevision >= hole.toRevision) });
      chain = undefined;
    }
    if (s.full && (!chain || s.full.revision > chain.toRevision)) {
      chain = { fromRevision: s.full.revision, toRevision: s.full.revision, full: s.full };
      chains.push(chain);
    }
    if (chain && s.toRevision > chain.toRevision && s.fromRevision <= chain.toRevision + 1) chain.toRevision = s.toRevision;
    covered = Math.max(covered, s.toRevision);
  }
  const window = chains.length > 0 ? { fromRevision: chains[0].fromRevision, toRevision: Math.max(...chains.map((c) => c.toRevision)) } : undefined;
  return { clusterId, fulls, segments, gaps, chains, holes, window };
}

/** The last revision stored for a cluster (a full's or a segment's end); 0 when nothing is. */
export function lastStoredRevision(c: ClusterCatalog | undefined): number {
  if (!c) return 0;
  return Math.max(0, ...c.fulls.map((f) => f.revision), ...c.segments.map((s) => s.toRevision));
}
