// Which revision of which cluster a restore point names, and what it takes to
// reach it: POINT is CLUSTERID:REV, REV, an RFC 3339 time, a relative time
// ("-15m": that long before now) or "latest". A time maps to the last revision
// the agent saw at or before it; when the time falls inside the window of a
// later revision (the agent could not tell whether that one happened before the
// time: an agent outage makes windows wide) the mapping is uncertain by the
// window's width, and a width over the limit is refused unless accepted.
import { formatDuration, parseDuration } from '../common/durations.js';
import { InputError, RefusedError } from '../common/errors.js';
import type { ClusterCatalog, Catalog } from './catalog.js';
import type { FullManifest, SegmentManifest } from './manifest.js';
import type { Segment } from './segmentCodec.js';

export type RestorePoint =
  { kind: 'revision'; clusterId?: string; revision: number; text: string } | { kind: 'time'; atMs: number; text: string } | { kind: 'latest'; text: string };

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

export function parseRestorePoint(text: string, nowMs: number): RestorePoint {
  const t = text.trim();
  const bad = (why: string) =>
    new InputError(`restore point "${text}": ${why}; give CLUSTERID:REV, REV, an RFC 3339 time (2026-12-01T14:05:00Z), a relative time (-15m) or latest`);
  if (t === 'latest') return { kind: 'latest', text: t };
  const withCluster = /^([0-9a-fA-F]{1,16}):(\d+)$/.exec(t);
  if (withCluster) return { kind: 'revision', clusterId: withCluster[1].toLowerCase().padStart(16, '0'), revision: revisionOf(withCluster[2], bad), text: t };
  if (/^\d+$/.test(t)) return { kind: 'revision', revision: revisionOf(t, bad), text: t };
  if (t.startsWith('-')) {
    let ms: number;
    try {
      ms = parseDuration(t.slice(1), 'relative time');
    } catch (e) {
      throw bad((e as Error).message);
    }
    return { kind: 'time', atMs: nowMs - ms, text: t };
  }
  if (RFC3339.test(t)) {
    const ms = Date.parse(t);
    if (Number.isNaN(ms)) throw bad('not a valid time');
    if (ms > nowMs) throw bad('in the future');
    return { kind: 'time', atMs: ms, text: t };
  }
  throw bad('not a point');
}

function revisionOf(s: string, bad: (why: string) => Error): number {
  const n = Number(s);
  if (!Number.isSafeInteger(n) || n < 1) throw bad('the revision must be a whole number ≥ 1');
  return n;
}

/** How a time became a revision. */
export interface TimeMapping {
  atMs: number;
  revision: number;
  /** the agent saw `revision` at this time */
  seenAtMs: number;
  /** a later revision whose window holds the time: it may have happened before it */
  uncertain?: { revision: number; windowStartMs: number; windowEndMs: number; widthMs: number };
}

export interface ResolvedPoint {
  cluster: ClusterCatalog;
  revision: number;
  time?: TimeMapping;
  /** fulls to start from, newest first (a damaged one falls back to the next) */
  fulls: FullManifest[];
  /** the segments after the newest full up to the revision */
  segments: SegmentManifest[];
}

export interface ResolveOptions {
  /** --cluster-id: which cluster's history, when the store holds several */
  clusterId?: string;
  maxTimeUncertaintyMs: number;
  acceptUncertainTime: boolean;
  /** decoded segments, for the per-revision times a time point needs */
  loadSegment: (m: SegmentManifest) => Promise<Segment>;
}

export async function resolveRestorePoint(catalog: Catalog, point: RestorePoint, o: ResolveOptions): Promise<ResolvedPoint> {
  const restorable = catalog.clusters.filter((c) => c.window);
  if (restorable.length === 0) throw new RefusedError('the store holds no full backup: nothing can be restored from it');
  const wanted = point.kind === 'revision' && point.clusterId ? point.clusterId : o.clusterId;
  let candidates = wanted ? restorable.filter((c) => c.clusterId === wanted) : restorable;
  if (wanted && candidates.length === 0)
    throw new InputError(`cluster ${wanted} has no restorable backup in the store; it holds ${restorable.map((c) => c.clusterId).join(', ')}`);
  if (point.kind === 'revision') {
    const having = candidates.filter((c) => c.chains.some((ch) => ch.fromRevision <= point.revision && point.revision <= ch.toRevision));
    if (having.length > 1)
      throw new InputError(
        `revision ${point.revision} is in the backups of ${having.length} clusters (${having.map((c) => c.clusterId).join(', ')}); say which: CLUSTERID:${point.revision}`,
      );
    if (having.length === 1) candidates = having;
  }
  if (candidates.length > 1 && point.kind !== 'revision') {
    // latest / a time: the cluster whose history reaches furthest in time (the newest lineage), unless one was named.
    candidates = [candidates.reduce((a, b) => (lastSeen(a) >= lastSeen(b) ? a : b))];
  }
  const cluster = candidates[0];
  let revision: number;
  let time: TimeMapping | undefined;
  if (point.kind === 'latest') revision = cluster.window!.toRevision;
  else if (point.kind === 'revision') revision = point.revision;
  else {
    time = await mapTime(cluster, point.atMs, o);
    revision = time.revision;
    if (time.uncertain && time.uncertain.widthMs > o.maxTimeUncertaintyMs && !o.acceptUncertainTime)
      throw new RefusedError(
        `${point.text} falls inside the ${formatDuration(time.uncertain.widthMs)} window of revision ${time.uncertain.revision} (${iso(time.uncertain.windowStartMs)} to ${iso(time.uncertain.windowEndMs)}: the agent was not current then), wider than --max-time-uncertainty ${formatDuration(o.maxTimeUncertaintyMs)}; give a revision, or pass --accept-uncertain-time to restore revision ${revision}`,
      );
  }
  const chain = cluster.chains.filter((ch) => ch.fromRevision <= revision && revision <= ch.toRevision);
  if (chain.length === 0)
    throw new RefusedError(`revision ${revision} of cluster ${cluster.clusterId} cannot be restored: ${nearest(cluster, revision, catalog.unreadable)}`);
  const fulls = cluster.fulls
    .filter((f) => f.revision <= revision && chain.some((ch) => ch.fromRevision <= f.revision))
    .sort((a, b) => b.revision - a.revision);
  const from = fulls[0].revision;
  const segments = cluster.segments.filter((s) => s.toRevision > from && s.fromRevision <= revision);
  return { cluster, revision, time, fulls, segments };
}

const iso = (ms: number) => new Date(ms).toISOString();

function lastSeen(c: ClusterCatalog): number {
  return Math.max(0, ...c.segments.map((s) => Date.parse(s.lastSeenAt)), ...c.fulls.map((f) => Date.parse(f.takenAt)));
}

/** "the nearest restorable revisions are 1200 (before) and 1450 (after)", from the chains. */
function nearest(c: ClusterCatalog, rev: number, unreadable: Catalog['unreadable']): string {
  const before = c.chains.filter((ch) => ch.fromRevision <= rev).map((ch) => Math.min(ch.toRevision, rev));
  const after = c.chains.filter((ch) => ch.fromRevision > rev).map((ch) => ch.fromRevision);
  const b = before.length ? Math.max(...before) : undefined;
  const a = after.length ? Math.min(...after) : undefined;
  const hole = c.holes.find((h) => h.fromRevision <= rev && rev <= h.toRevision);
  const where = hole
    ? `it is inside a gap (${hole.fromRevision}..${hole.toRevision})${causeOf(c.clusterId, hole, unreadable)}`
    : 'it is outside the restorable window';
  const sides = [b !== undefined ? `${b} before it` : '', a !== undefined ? `${a} after it` : ''].filter(Boolean).join(' and ');
  return `${where}; the nearest restorable revisions are ${sides || 'none'}`;
}

/** A gap left by a segment whose object or manifest cannot be read (deleted, damaged): " where c…/seg-…: its object … is not in the store". */
function causeOf(clusterId: string, hole: { fromRevision: number; toRevision: number }, unreadable: Catalog['unreadable']): string {
  const causes = unreadable.filter((u) => {
    const m = /^([0-9a-f]{16})\/seg-(\d{20})-(\d{20})-/.exec(u.key);
    return m !== null && m[1] === clusterId && Number(m[2]) <= hole.toRevision && Number(m[3]) >= hole.fromRevision;
  });
  return causes.length > 0 ? ` where ${causes.map((u) => `${u.key}: ${u.problem}`).join(', ')}` : '';
}

/** The last revision seen at or before `atMs` (a full counts as seen when taken), and whether a later one's window holds the time. */
async function mapTime(c: ClusterCatalog, atMs: number, o: ResolveOptions): Promise<TimeMapping> {
  let best: { revision: number; seenAtMs: number } | undefined;
  for (const f of c.fulls) {
    const t = Date.parse(f.takenAt);
    if (t <= atMs && (!best || f.revision > best.revision)) best = { revision: f.revision, seenAtMs: t };
  }
  let uncertain: TimeMapping['uncertain'];
  // Only segments whose window can touch the time need decoding.
  for (const s of c.segments) {
    if (Date.parse(s.windowStart) > atMs) continue;
    if (Date.parse(s.lastSeenAt) <= atMs) {
      if (!best || s.toRevision > best.revision) best = { revision: s.toRevision, seenAtMs: Date.parse(s.lastSeenAt) };
      continue;
    }
    const seg = await o.loadSegment(s);
    for (const r of seg.records) {
      if (r.kind !== 'revision') continue;
      if (r.seenAtMs <= atMs) {
        if (!best || r.revision > best.revision) best = { revision: r.revision, seenAtMs: r.seenAtMs };
      } else if (r.currentSinceMs < atMs) {
        const widthMs = r.seenAtMs - r.currentSinceMs;
        if (!uncertain || widthMs > uncertain.widthMs) uncertain = { revision: r.revision, windowStartMs: r.currentSinceMs, windowEndMs: r.seenAtMs, widthMs };
      }
    }
  }
  if (!best) {
    const first = c.window ? c.window.fromRevision : 0;
    throw new RefusedError(`${iso(atMs)} is before the first full backup of cluster ${c.clusterId} (revision ${first}); give a later time or a revision`);
  }
  return { atMs, revision: best.revision, seenAtMs: best.seenAtMs, uncertain };
}
