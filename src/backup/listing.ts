// What `lifeboat backup list` shows of a store, made from the catalog (the one
// reader, catalog.ts): per cluster ID its fulls, the chains of revisions a
// restore can reach with their revision and time ranges, gaps (recorded) and
// holes (nobody recorded them), sizes, encryption, and the restorable window;
// with the cluster's head revision, how far the latest backup is behind it.
import type { Catalog, ClusterCatalog } from './catalog.js';
import type { FullManifest, GapReason, SegmentManifest } from './manifest.js';

export interface ListedFull {
  revision: number;
  takenAt: string;
  keyCount: number;
  storedSize: number;
  plainSize: number;
  compression: string;
  recipients: number;
  object: string;
}

export interface ListedChain {
  fromRevision: number;
  toRevision: number;
  /** when the full was taken */
  fromTime: string;
  /** when the agent saw the chain's last revision */
  toTime: string;
  fullRevision: number;
  segments: number;
  storedSize: number;
  /**
   * The widest time window of a revision in the chain, as far as manifests tell
   * (a segment's first revision: from the agent's last confirmation that it was
   * current to the moment it saw it). Wide after an agent outage.
   */
  widestWindowMs: number;
}

export interface ListedCluster {
  clusterId: string;
  /** the earliest and latest restorable revision and their times; absent with no full */
  restorable?: { fromRevision: number; toRevision: number; fromTime: string; toTime: string };
  fulls: ListedFull[];
  chains: ListedChain[];
  segments: { count: number; revisions: number; storedSize: number };
  gaps: Array<{ fromRevision: number; toRevision: number; reason: GapReason; detail: string }>;
  /** revisions no stored object covers; `recorded` when a gap manifest says why */
  holes: Array<{ fromRevision: number; toRevision: number; recorded: boolean }>;
  storedSize: number;
  /** age recipients of every object (union); encrypted: how many of the objects are */
  encryption: { objects: number; encrypted: number; recipients: string[] };
  /** with --endpoints, when it is this cluster: its head and how many revisions the latest backup lacks */
  behind?: { endpoint: string; headRevision: number; revisions: number };
}

export interface BackupListing {
  store: string;
  clusters: ListedCluster[];
  /** data objects with no manifest (prune deletes them after an hour) */
  orphans: { count: number; size: number };
  unreadable: Catalog['unreadable'];
  /** with --endpoints: the cluster asked */
  head?: { endpoint: string; clusterId: string; revision: number; inStore: boolean };
}

export interface ClusterHead {
  endpoint: string;
  /** 16 hex digits */
  clusterId: string;
  revision: number;
}

const ms = (iso: string) => Date.parse(iso);

function chainSegments(c: ClusterCatalog, chain: ClusterCatalog['chains'][number]): SegmentManifest[] {
  return c.segments.filter((s) => s.toRevision > chain.full.revision && s.fromRevision >= chain.fromRevision && s.toRevision <= chain.toRevision);
}

function listChain(c: ClusterCatalog, chain: ClusterCatalog['chains'][number]): ListedChain {
  const segs = chainSegments(c, chain);
  const last = segs.find((s) => s.toRevision === chain.toRevision);
  return {
    fromRevision: chain.fromRevision,
    toRevision: chain.toRevision,
    fromTime: chain.full.takenAt,
    toTime: last ? last.lastSeenAt : chain.full.takenAt,
    fullRevision: chain.full.revision,
    segments: segs.length,
    storedSize: chain.full.storedSize + segs.reduce((n, s) => n + s.storedSize, 0),
    widestWindowMs: Math.max(0, ...segs.map((s) => ms(s.firstSeenAt) - ms(s.windowStart))),
  };
}

function listFull(f: FullManifest): ListedFull {
  return {
    revision: f.revision,
    takenAt: f.takenAt,
    keyCount: f.keyCount,
    storedSize: f.storedSize,
    plainSize: f.plainSize,
    compression: f.compression,
    recipients: f.recipients.length,
    object: f.object,
  };
}

export function listCluster(c: ClusterCatalog, head?: ClusterHead): ListedCluster {
  const chains = c.chains.map((ch) => listChain(c, ch));
  const data = [...c.fulls, ...c.segments];
  const first = chains[0];
  const latest = chains.reduce<ListedChain | undefined>((a, ch) => (!a || ch.toRevision > a.toRevision ? ch : a), undefined);
  return {
    clusterId: c.clusterId,
    ...(first && latest
      ? { restorable: { fromRevision: first.fromRevision, toRevision: latest.toRevision, fromTime: first.fromTime, toTime: latest.toTime } }
      : {}),
    fulls: c.fulls.map(listFull),
    chains,
    segments: {
      count: c.segments.length,
      revisions: c.segments.reduce((n, s) => n + s.revisions, 0),
      storedSize: c.segments.reduce((n, s) => n + s.storedSize, 0),
    },
    gaps: c.gaps.map((g) => ({ fromRevision: g.fromRevision, toRevision: g.toRevision, reason: g.reason, detail: g.detail })),
    holes: c.holes,
    storedSize: data.reduce((n, m) => n + m.storedSize, 0),
    encryption: {
      objects: data.length,
      encrypted: data.filter((m) => m.recipients.length > 0).length,
      recipients: [...new Set(data.flatMap((m) => m.recipients))].sort(),
    },
    ...(head && head.clusterId === c.clusterId
      ? { behind: { endpoint: head.endpoint, headRevision: head.revision, revisions: Math.max(0, head.revision - (latest?.toRevision ?? 0)) } }
      : {}),
  };
}

export function listBackups(store: string, catalog: Catalog, head?: ClusterHead): BackupListing {
  return {
    store,
    clusters: catalog.clusters.map((c) => listCluster(c, head)),
    orphans: { count: catalog.orphans.length, size: catalog.orphans.reduce((n, o) => n + o.size, 0) },
    unreadable: catalog.unreadable,
    ...(head ? { head: { ...head, inStore: catalog.clusters.some((c) => c.clusterId === head.clusterId) } } : {}),
  };
}
