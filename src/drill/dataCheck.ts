// Does the scratch cluster hold what the source held at the snapshot's revision?
// The key count at that revision, and HashKV at it: taken on the source while the
// revision is still in its history, compared when both sides report the same
// compact revision (a hash leaves out what compaction made unreachable, so it is
// only comparable between equal compaction points). When the source can no longer
// answer at that revision, or the compaction points differ, a sample of keys is
// compared one by one instead, and the result says which was done. A hash that
// differs is followed by a key-by-key walk at that revision, to name the keys.
// Only reads, on both sides.
import { clientFor, type ConnectionOptions, type EtcdClient } from '../client/etcdClient.js';
import { ALL_KEYS } from '../client/keyRange.js';
import type { KeyValue } from '../client/types.js';

/** What the source says at the snapshot's revision, read right after the snapshot. */
export interface SourceAtRevision {
  revision: number;
  /** keys at the revision; undefined when the source could not answer at it */
  keys?: number;
  hash?: number;
  compactRevision?: number;
  /** why the source could not answer at the revision */
  unavailable?: string;
}

export interface DataCheck {
  method: 'hashkv' | 'sampled-keys';
  /** why this method was used */
  why: string;
  revision: number;
  keys: { source: number | null; scratch: number; snapshot: number; ok: boolean; against: 'source' | 'snapshot' };
  hash: { source: number | null; scratch: number | null; sourceCompact: number | null; scratchCompact: number | null; ok: boolean | null };
  sample?: { compared: number; skipped: number };
  /** each difference found, one line each; empty when the data agrees */
  differences: string[];
}

const MAX_DIFFERENCES = 10;
const PAGE = 1000;

async function withClient<T>(endpoints: string[], conn: ConnectionOptions, fn: (c: EtcdClient) => Promise<T>): Promise<T> {
  const c = clientFor(endpoints, conn);
  try {
    return await fn(c);
  } finally {
    c.close();
  }
}

/** The source's key count and HashKV at `revision` (one member: the one snapshotted). */
export async function readSourceAt(endpoint: string, conn: ConnectionOptions, revision: number): Promise<SourceAtRevision> {
  return withClient([endpoint], conn, async (c) => {
    try {
      const h = await c.hashKV(revision);
      const counted = await c.range(ALL_KEYS.key, { rangeEnd: ALL_KEYS.rangeEnd, countOnly: true, revision });
      return { revision, keys: counted.count, hash: h.hash, compactRevision: h.compactRevision };
    } catch (e) {
      return { revision, unavailable: (e as Error).message };
    }
  });
}

/** A key as it reads in a message: printable text as is, anything else as hex. */
export function keyText(k: Buffer): string {
  const s = k.toString('utf8');
  return /^[\x20-\x7e]*$/.test(s) ? JSON.stringify(s) : `0x${k.toString('hex')}`;
}

function describeKv(kv: KeyValue): string {
  return `mod_revision ${kv.modRevision}, ${kv.value.length} bytes`;
}

async function page(c: EtcdClient, from: Buffer, revision: number, keysOnly: boolean): Promise<{ kvs: KeyValue[]; more: boolean }> {
  const r = await c.range(from, { rangeEnd: ALL_KEYS.rangeEnd, revision, limit: PAGE, keysOnly });
  return { kvs: r.kvs, more: r.more };
}

function after(k: Buffer): Buffer {
  return Buffer.concat([k, Buffer.from([0])]);
}

function differs(a: KeyValue, b: KeyValue): boolean {
  return !a.value.equals(b.value) || a.modRevision !== b.modRevision || a.createRevision !== b.createRevision || a.version !== b.version;
}

/**
 * Both sides at `revision`, in key order, page by page: the keys that differ (up
 * to MAX_DIFFERENCES), within `budgetMs`.
 */
export async function walkDifferences(source: EtcdClient, scratch: EtcdClient, revision: number, budgetMs = 60_000): Promise<string[]> {
  const out: string[] = [];
  const deadline = Date.now() + budgetMs;
  let a = await page(source, ALL_KEYS.key, revision, false);
  let b = await page(scratch, ALL_KEYS.key, revision, false);
  let i = 0;
  let j = 0;
  for (;;) {
    if (out.length >= MAX_DIFFERENCES) break;
    if (Date.now() > deadline) {
      out.push(`(the key-by-key walk stopped after ${Math.round(budgetMs / 1000)}s)`);
      break;
    }
    if (i >= a.kvs.length && a.more) {
      a = await page(source, after(a.kvs[a.kvs.length - 1].key), revision, false);
      i = 0;
    }
    if (j >= b.kvs.length && b.more) {
      b = await page(scratch, after(b.kvs[b.kvs.length - 1].key), revision, false);
      j = 0;
    }
    const x = a.kvs[i];
    const y = b.kvs[j];
    if (!x && !y) break;
    const cmp = !x ? 1 : !y ? -1 : Buffer.compare(x.key, y.key);
    if (cmp < 0) {
      out.push(`key ${keyText(x.key)} is in the source at revision ${revision} but not in the restored cluster`);
      i++;
    } else if (cmp > 0) {
      out.push(`key ${keyText(y.key)} is in the restored cluster but not in the source at revision ${revision}`);
      j++;
    } else {
      if (differs(x, y)) {
        const what = x.value.equals(y.value) ? 'metadata differs' : 'value differs';
        out.push(`key ${keyText(x.key)}: ${what} at revision ${revision} (source ${describeKv(x)}; restored ${describeKv(y)})`);
      }
      i++;
      j++;
    }
  }
  return out;
}

/** Every `stride`-th key at `revision` (keys only), at most `max`. */
async function sampleKeys(c: EtcdClient, revision: number, count: number, max: number): Promise<Buffer[]> {
  const stride = Math.max(1, Math.ceil(count / max));
  const out: Buffer[] = [];
  let from = ALL_KEYS.key;
  let n = 0;
  for (let pages = 0; pages < Math.ceil(count / PAGE) + 2 && out.length < max; pages++) {
    const p = await page(c, from, revision, true);
    for (const kv of p.kvs) if (n++ % stride === 0 && out.length < max) out.push(kv.key);
    if (!p.more || p.kvs.length === 0) break;
    from = after(p.kvs[p.kvs.length - 1].key);
  }
  return out;
}

async function getOne(c: EtcdClient, key: Buffer, revision?: number): Promise<KeyValue | undefined> {
  const r = await c.range(key, revision === undefined ? {} : { revision });
  return r.kvs[0];
}

/**
 * Sampled keys, half from each side. The restored side is read at `revision`; the
 * source at `revision` when it still can, else as it is now, and then a key
 * changed (or deleted, or created) since `revision` cannot be compared: skipped.
 */
async function compareSample(
  source: EtcdClient,
  scratch: EtcdClient,
  revision: number,
  sourceHasRevision: boolean,
  scratchKeys: number,
  sampleSize: number,
): Promise<{ compared: number; skipped: number; differences: string[] }> {
  const differences: string[] = [];
  let compared = 0;
  let skipped = 0;
  const half = Math.max(1, Math.ceil(sampleSize / 2));
  const fromScratch = await sampleKeys(scratch, revision, scratchKeys, half);
  const sourceNow = sourceHasRevision ? undefined : (await source.range(ALL_KEYS.key, { rangeEnd: ALL_KEYS.rangeEnd, countOnly: true })).count;
  const fromSource = await sampleKeys(source, sourceHasRevision ? revision : 0, sourceHasRevision ? scratchKeys : (sourceNow ?? 0), half);
  const seen = new Set<string>();
  for (const key of [...fromScratch, ...fromSource]) {
    const id = key.toString('hex');
    if (seen.has(id)) continue;
    seen.add(id);
    const mine = await getOne(scratch, key, revision);
    const theirs = await getOne(source, key, sourceHasRevision ? revision : undefined);
    if (!sourceHasRevision) {
      // The source as it is now: only keys untouched since the snapshot compare.
      const changedSince = (theirs && theirs.modRevision > revision) || (!theirs && mine);
      if (changedSince || (!theirs && !mine)) {
        skipped++;
        continue;
      }
    }
    compared++;
    if (differences.length >= MAX_DIFFERENCES) continue;
    if (!mine && theirs)
      differences.push(`key ${keyText(key)} is in the source (${describeKv(theirs)}) but not in the restored cluster at revision ${revision}`);
    else if (mine && !theirs) differences.push(`key ${keyText(key)} is in the restored cluster but not in the source at revision ${revision}`);
    else if (mine && theirs && differs(mine, theirs)) {
      const what = mine.value.equals(theirs.value) ? 'metadata differs' : 'value differs';
      differences.push(`key ${keyText(key)}: ${what} (source ${describeKv(theirs)}; restored at revision ${revision}: ${describeKv(mine)})`);
    }
  }
  return { compared, skipped, differences };
}

export interface DataCheckInput {
  sourceEndpoint: string;
  sourceConn: ConnectionOptions;
  scratchEndpoints: string[];
  scratchConn: ConnectionOptions;
  /** read right after the snapshot (readSourceAt) */
  source: SourceAtRevision;
  /** the key count the snapshot file itself reports */
  snapshotKeys: number;
  sampleSize: number;
}

/** Compares the restored cluster with the source at the snapshot's revision. */
export async function checkData(i: DataCheckInput): Promise<DataCheck> {
  const R = i.source.revision;
  const source = clientFor([i.sourceEndpoint], i.sourceConn);
  const scratch = clientFor(i.scratchEndpoints, i.scratchConn);
  try {
    const scratchKeys = (await scratch.range(ALL_KEYS.key, { rangeEnd: ALL_KEYS.rangeEnd, countOnly: true, revision: R })).count;
    const h = await scratch.hashKV(R);
    const sourceKeys = i.source.keys ?? null;
    const keysAgainst = sourceKeys === null ? 'snapshot' : 'source';
    const keysExpected = sourceKeys ?? i.snapshotKeys;
    const keys = { source: sourceKeys, scratch: scratchKeys, snapshot: i.snapshotKeys, ok: scratchKeys === keysExpected, against: keysAgainst } as const;
    const differences: string[] = [];
    if (!keys.ok)
      differences.push(
        `key count at revision ${R}: the restored cluster has ${scratchKeys}, the ${keysAgainst === 'source' ? 'source' : 'snapshot file'} ${keysExpected}`,
      );
    const hash = {
      source: i.source.hash ?? null,
      scratch: h.hash,
      sourceCompact: i.source.compactRevision ?? null,
      scratchCompact: h.compactRevision,
      ok: null as boolean | null,
    };
    const sourceHash = i.source.hash;
    if (sourceHash !== undefined && i.source.compactRevision === h.compactRevision) {
      hash.ok = sourceHash === h.hash;
      if (!hash.ok) {
        differences.push(`KV hash at revision ${R}: source ${hex(sourceHash)}, restored ${hex(h.hash)}`);
        differences.push(...(await walkDifferences(source, scratch, R).catch((e: Error) => [`(could not walk the keys at revision ${R}: ${e.message})`])));
      }
      return {
        method: 'hashkv',
        why: `the source still holds revision ${R} and both sides are compacted at ${h.compactRevision}`,
        revision: R,
        keys,
        hash,
        differences,
      };
    }
    const why =
      i.source.hash === undefined
        ? `the source could not hash revision ${R} (${i.source.unavailable ?? 'no answer'})`
        : `the compact revisions differ (source ${i.source.compactRevision}, restored ${h.compactRevision}), so their hashes are not comparable`;
    const sourceHasRevision = i.source.keys !== undefined;
    const s = await compareSample(source, scratch, R, sourceHasRevision, scratchKeys, i.sampleSize);
    differences.push(...s.differences);
    return {
      method: 'sampled-keys',
      why,
      revision: R,
      keys,
      hash,
      sample: { compared: s.compared, skipped: s.skipped },
      differences,
    };
  } finally {
    source.close();
    scratch.close();
  }
}

function hex(n: number): string {
  return `0x${(n >>> 0).toString(16).padStart(8, '0')}`;
}
