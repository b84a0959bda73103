// Where each object of a backup lives in a store (keys under the store's prefix):
//
//   lock.json                                        the agent's lock (agentLock.ts)
//   <clusterID>/full-<rev>-<time>.db[.gz|.br][.age]  a full: the plain snapshot bytes
//   <clusterID>/seg-<from>-<to>-<t0>-<t1>.lbseg[...] revisions from..to (segmentCodec.ts)
//   <clusterID>/gap-<from>-<to>                      revisions nobody kept (manifest only)
//   <name>.manifest.json                             the commit marker of <name> (manifest.ts)
//
// The cluster ID (16 hex digits) comes first because after a recovery the same
// revision numbers return with other data. Revisions are 20 digits, zero-padded,
// so keys sort by revision; times are UTC, ISO 8601 basic with milliseconds.

export const LOCK_KEY = 'lock.json';
export const MANIFEST_SUFFIX = '.manifest.json';

export type ObjectKind = 'full' | 'segment' | 'gap';

export type Compression = 'gzip' | 'brotli' | 'none';

const COMPRESSION_SUFFIX: Record<Compression, string> = { gzip: '.gz', brotli: '.br', none: '' };

export const revText = (rev: number): string => String(rev).padStart(20, '0');

/** 2026-12-02T03:15:00.123Z → 20261202T031500.123Z */
export function timeText(ms: number): string {
  return new Date(ms).toISOString().replace(/[-:]/g, '');
}

export function clusterIdText(id: bigint): string {
  return id.toString(16).padStart(16, '0');
}

function suffix(c: Compression, encrypted: boolean): string {
  return `${COMPRESSION_SUFFIX[c]}${encrypted ? '.age' : ''}`;
}

export function fullKey(clusterId: bigint, rev: number, atMs: number, c: Compression, encrypted: boolean): string {
  return `${clusterIdText(clusterId)}/full-${revText(rev)}-${timeText(atMs)}.db${suffix(c, encrypted)}`;
}

export function segmentKey(clusterId: bigint, from: number, to: number, t0: number, t1: number, c: Compression, encrypted: boolean): string {
  return `${clusterIdText(clusterId)}/seg-${revText(from)}-${revText(to)}-${timeText(t0)}-${timeText(t1)}.lbseg${suffix(c, encrypted)}`;
}

export function gapKey(clusterId: bigint, from: number, to: number): string {
  return `${clusterIdText(clusterId)}/gap-${revText(from)}-${revText(to)}`;
}

export const manifestKeyOf = (objectKey: string): string => `${objectKey}${MANIFEST_SUFFIX}`;

export function isManifestKey(key: string): boolean {
  return key.endsWith(MANIFEST_SUFFIX);
}
