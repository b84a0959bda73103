// Hand-made backup manifests for tests of the readers (list, prune): fulls,
// segments and gaps at given revisions and times, and a store holding them
// (each data object of its stored size, then its manifest, as the agent writes).
import { createHash } from 'node:crypto';
import { fullKey, gapKey, manifestKeyOf, segmentKey } from '../../src/backup/layout.js';
import { MANIFEST_FORMAT, serializeManifest, type FullManifest, type GapManifest, type Manifest, type SegmentManifest } from '../../src/backup/manifest.js';
import type { ObjectStore } from '../../src/backup/objectStore.js';

export const CLUSTER = 'cafe0000000000a1';
const agent = { host: 'fixture', pid: 1 };
const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const iso = (ms: number) => new Date(ms).toISOString();

/** The bytes a fixture object holds: its size, deterministic, so the manifest's sums are right. */
export function fixtureBytes(object: string, size: number): Buffer {
  const seed = Buffer.from(`${object}\n`);
  return Buffer.concat(Array.from({ length: Math.ceil(size / seed.length) }, () => seed)).subarray(0, size);
}

export function full(revision: number, atMs: number, o: { clusterId?: string; size?: number; recipients?: string[] } = {}): FullManifest {
  const clusterId = o.clusterId ?? CLUSTER;
  const object = fullKey(BigInt(`0x${clusterId}`), revision, atMs, 'gzip', (o.recipients ?? []).length > 0);
  const size = o.size ?? 100;
  const digest = createHash('sha256').update(fixtureBytes(object, size)).digest('hex');
  return {
    format: MANIFEST_FORMAT,
    kind: 'full',
    clusterId,
    fromRevision: revision,
    toRevision: revision,
    createdAt: iso(atMs),
    agent,
    object,
    compression: 'gzip',
    recipients: o.recipients ?? [],
    storedSize: size,
    storedSha256: digest,
    plainSize: size * 3,
    plainSha256: sha(`plain ${object}`),
    runtime: 'etcd',
    member: { id: '1', name: 'm1', endpoint: '127.0.0.1:2379' },
    revision,
    compactRevision: 0,
    keyCount: 10,
    takenAt: iso(atMs),
    hashPoints: [],
  };
}

/** Revisions from..to seen between firstSeenMs and lastSeenMs; the agent was last confirmed current windowMs before the first. */
export function segment(
  from: number,
  to: number,
  firstSeenMs: number,
  lastSeenMs: number,
  o: { clusterId?: string; size?: number; windowMs?: number; recipients?: string[] } = {},
): SegmentManifest {
  const clusterId = o.clusterId ?? CLUSTER;
  const object = segmentKey(BigInt(`0x${clusterId}`), from, to, firstSeenMs, lastSeenMs, 'gzip', (o.recipients ?? []).length > 0);
  const size = o.size ?? 50;
  return {
    format: MANIFEST_FORMAT,
    kind: 'segment',
    clusterId,
    fromRevision: from,
    toRevision: to,
    createdAt: iso(lastSeenMs),
    agent,
    object,
    compression: 'gzip',
    recipients: o.recipients ?? [],
    storedSize: size,
    storedSha256: createHash('sha256').update(fixtureBytes(object, size)).digest('hex'),
    plainSize: size * 2,
    plainSha256: sha(`plain ${object}`),
    runtime: 'etcd',
    member: { endpoint: '127.0.0.1:2379' },
    revisions: to - from + 1,
    events: to - from + 1,
    leaseRecords: 0,
    windowStart: iso(firstSeenMs - (o.windowMs ?? 100)),
    firstSeenAt: iso(firstSeenMs),
    lastSeenAt: iso(lastSeenMs),
    hashPoints: [],
  };
}

export function gap(from: number, to: number, atMs: number, o: { clusterId?: string } = {}): GapManifest {
  return {
    format: MANIFEST_FORMAT,
    kind: 'gap',
    clusterId: o.clusterId ?? CLUSTER,
    fromRevision: from,
    toRevision: to,
    createdAt: iso(atMs),
    agent,
    reason: 'compacted',
    detail: `compacted past ${from - 1}`,
  };
}

/** The key of `m`'s manifest. */
export function manifestKey(m: Manifest): string {
  return m.kind === 'gap' ? manifestKeyOf(gapKey(BigInt(`0x${m.clusterId}`), m.fromRevision, m.toRevision)) : manifestKeyOf(m.object);
}

/** Writes each manifest's object (unless a gap) and then the manifest, as the agent does. */
export async function writeFixture(store: ObjectStore, manifests: Manifest[]): Promise<void> {
  for (const m of manifests) {
    if (m.kind !== 'gap') await store.put(m.object, fixtureBytes(m.object, m.storedSize));
    await store.put(manifestKey(m), serializeManifest(m));
  }
}
