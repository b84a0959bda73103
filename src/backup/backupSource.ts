// A point in a backup store as a recovery source: STORE@POINT, e.g.
// s3://bucket/prefix@2026-12-01T14:05:00Z, file:///srv/backups@latest or
// file:///srv/backups@8e9e05c52164694d:1200. What it names is read from the
// store's catalog without replaying anything (recover plan compares it with the
// survivors); the recovery materializes it as `backup restore --at` does.
import { InputError } from '../common/errors.js';
import type { BackupPoint } from '../recovery/plan.js';
import { lastStoredRevision, readCatalog } from './catalog.js';
import type { ObjectStore, S3StoreOptions } from './objectStore.js';
import { openStore, parseStoreUrl } from './openStore.js';
import { segmentLoader } from './replay.js';
import { parseRestorePoint, resolveRestorePoint } from './restorePoint.js';
import { DEFAULT_RETRY_POLICY, RetryingStore } from './retryingStore.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface BackupSource {
  /** the store's URL (file:///dir or s3://bucket/prefix) */
  store: string;
  /** POINT as written */
  point: string;
  /** STORE@POINT as given */
  text: string;
}

const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;

/** Whether `text` names a store (scheme://…) rather than a path: a source that is not a path. */
export function looksLikeBackupSource(text: string): boolean {
  return SCHEME.test(text.trim());
}

/**
 * STORE@POINT, checked without reaching the store; undefined for a path (a data
 * dir or snapshot file). Bad input is one line saying what to give.
 */
export function parseBackupSource(text: string, nowMs = Date.now()): BackupSource | undefined {
  const t = text.trim();
  const scheme = SCHEME.exec(t)?.[1];
  if (scheme === undefined) return undefined;
  const form = 'give file:///dir@POINT or s3://bucket/prefix@POINT (POINT: CLUSTERID:REV, REV, an RFC 3339 time, -15m or latest)';
  if (scheme !== 'file' && scheme !== 's3') throw new InputError(`source ${t}: unknown scheme ${scheme}://; ${form}`);
  const at = t.lastIndexOf('@');
  if (at < 0 || at === t.length - 1) throw new InputError(`source ${t}: no @POINT naming what to recover from the store; ${form}`);
  const store = t.slice(0, at);
  const point = t.slice(at + 1);
  try {
    parseStoreUrl(store);
    parseRestorePoint(point, nowMs);
  } catch (e) {
    throw new InputError(`source ${t}: ${(e as Error).message.replace(/^--store [^:]*: /, '')}`);
  }
  return { store, point, text: t };
}

/** What reaching the store takes beyond its URL: the S3 settings and the age identities (secrets: read from files or the environment). */
export interface BackupAccess {
  s3: S3StoreOptions;
  identities: readonly string[];
  maxTimeUncertaintyMs: number;
  acceptUncertainTime: boolean;
}

/** The store of a source, every call retried as the backup commands' defaults do. Close it when done. */
export async function openSourceStore(src: BackupSource, access: Pick<BackupAccess, 's3'>): Promise<ObjectStore> {
  return new RetryingStore(await openStore(src.store, access.s3), DEFAULT_RETRY_POLICY);
}

/** Resolves the point against the store's catalog (refusals as `backup restore --at` gives them), reading segments only where a time needs them. */
export async function describeBackupPoint(src: BackupSource, access: BackupAccess, clusterId?: string): Promise<BackupPoint> {
  const store = await openSourceStore(src, access);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-point-'));
  try {
    const catalog = await readCatalog(store);
    const resolved = await resolveRestorePoint(catalog, parseRestorePoint(src.point, Date.now()), {
      ...(clusterId ? { clusterId } : {}),
      maxTimeUncertaintyMs: access.maxTimeUncertaintyMs,
      acceptUncertainTime: access.acceptUncertainTime,
      loadSegment: segmentLoader({ store, identities: access.identities }, work),
    });
    const c = resolved.cluster;
    const last = lastStoredRevision(c);
    const lastSeen = [
      ...c.segments.filter((s) => s.toRevision === last).map((s) => s.lastSeenAt),
      ...c.fulls.filter((f) => f.revision === last).map((f) => f.takenAt),
    ][0];
    const fullAt = c.fulls.find((f) => f.revision === resolved.revision)?.takenAt;
    const segAt = c.segments.find((s) => s.toRevision === resolved.revision)?.lastSeenAt;
    const seen = resolved.time ? new Date(resolved.time.seenAtMs).toISOString() : (segAt ?? fullAt);
    return {
      source: src.text,
      clusterId: c.clusterId,
      runtime: c.fulls[0]?.runtime ?? 'lifeboat',
      revision: resolved.revision,
      lastRevision: last,
      ...(seen ? { seenAt: seen } : {}),
      ...(lastSeen ? { lastSeenAt: lastSeen } : {}),
    };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
    store.close();
  }
}
