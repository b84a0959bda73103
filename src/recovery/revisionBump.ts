// The revision bump rule: a cluster recovered from a source older than the
// cluster's last recorded revision (what a backup store holds for that cluster
// ID; a survivor's own revision when a snapshot is restored beside it) must not
// serve revisions again that clients have already seen: a Kubernetes watcher
// resuming from a resource version the new cluster reaches again with other
// data would silently miss changes. So its revision is raised past the last
// recorded one, by BUMP_MARGIN more (revisions the cluster may have made that
// were never recorded), and everything before marked compacted so every watcher
// and reader of an old revision is told to relist:
//   - mark-compacted, in the restore itself, where the runtime supports it (the
//     embedded member; etcd through etcdutl, 3.5.10+ and 3.6);
//   - otherwise (etcd 3.4), once the member serves: writes to one throwaway key
//     until the revision is reached, the last of them deleting it, then a
//     compaction at that revision. Nothing else is written or deleted. A gap over
//     maxWrites (default 1,000,000) is not "modest": refused before anything changes.
import { RefusedError } from '../common/errors.js';
import type { EtcdClient } from '../client/etcdClient.js';

/** Revisions added past the last recorded one. */
export const BUMP_MARGIN = 1000;
/** The largest bump etcd 3.4 reaches by writes unless the operator raises it. */
export const DEFAULT_MAX_BUMP_WRITES = 1_000_000;
/** The only key the bump by writes touches. */
export const BUMP_KEY = 'lifeboat/revision-bump';

export type BumpMethod = 'none' | 'mark-compacted' | 'writes';

export interface BumpPlan {
  method: BumpMethod;
  sourceRevision: number;
  /** the cluster's last recorded revision (0: unknown) */
  lastRevision: number;
  /** where it came from ("the store", "survivor /x") */
  lastFrom: string;
  /** mark-compacted: the restore's --bump-revision amount */
  bump: number;
  /** the revision the recovered cluster starts at (after the bump) */
  target: number;
  /** the plan line */
  line: string;
}

export interface BumpInput {
  sourceRevision: number;
  lastRevision: number;
  lastFrom: string;
  /** the runtime's restore can bump and mark compacted */
  markCompacted: boolean;
  /** the largest bump reached by writes (default DEFAULT_MAX_BUMP_WRITES) */
  maxWrites?: number;
}

/** What the rule does for this source; throws RefusedError when only writes can reach it and the gap is over maxWrites. */
export function planRevisionBump(i: BumpInput): BumpPlan {
  const base = { sourceRevision: i.sourceRevision, lastRevision: i.lastRevision, lastFrom: i.lastFrom };
  if (i.lastRevision <= i.sourceRevision)
    return {
      ...base,
      method: 'none',
      bump: 0,
      target: i.sourceRevision,
      line:
        i.lastRevision > 0
          ? `revision: no bump: the source (revision ${i.sourceRevision}) is at the cluster's last recorded revision (${i.lastRevision}, ${i.lastFrom})`
          : `revision: no bump: the cluster's last revision is not known beyond the source's (${i.sourceRevision})`,
    };
  const target = i.lastRevision + BUMP_MARGIN;
  const bump = target - i.sourceRevision;
  const back = `without it, revisions (Kubernetes resource versions) would go back from ${i.lastRevision} to ${i.sourceRevision}`;
  if (i.markCompacted)
    return {
      ...base,
      method: 'mark-compacted',
      bump,
      target,
      line: `revision: bumped by ${bump} to ${target} (the cluster's last recorded revision ${i.lastRevision}, ${i.lastFrom}, + ${BUMP_MARGIN}), everything before marked compacted; ${back}`,
    };
  const max = i.maxWrites ?? DEFAULT_MAX_BUMP_WRITES;
  if (bump > max)
    throw new RefusedError(
      `the revision bump needs ${bump} writes (from revision ${i.sourceRevision} to ${target}, past the cluster's last recorded ${i.lastRevision}), over the limit of ${max} for a runtime without mark-compacted (etcd 3.4): raise it with --set max-bump-writes=N, or recover into a runtime that bumps in the restore (etcd 3.5.10+ with etcdutl, or Lifeboat); nothing was changed`,
    );
  return {
    ...base,
    method: 'writes',
    bump,
    target,
    line: `revision: raised by ${bump} writes to the key ${BUMP_KEY} to ${target} (the cluster's last recorded revision ${i.lastRevision}, ${i.lastFrom}, + ${BUMP_MARGIN}; the last write deletes it), then compacted at ${target} (etcd 3.4 has no mark-compacted); ${back}`,
  };
}

export interface BumpDone {
  writes: number;
  fromRevision: number;
  revision: number;
  compactedAt: number;
}

/** Writes in flight at once. */
const PIPELINE = 32;

/**
 * The bump by writes on a serving member nothing else writes to: puts to BUMP_KEY
 * until the revision is one short of `target`, a delete of it reaching `target`,
 * then a compaction there. Refused when the source itself holds BUMP_KEY (written at
 * or before `sourceRevision`: it would be changed); one written after it is an
 * interrupted bump's, resumed.
 */
export async function bumpByWrites(
  client: EtcdClient,
  target: number,
  sourceRevision: number,
  onProgress?: (text: string) => void,
  signal?: AbortSignal,
): Promise<BumpDone> {
  const start = await client.range(BUMP_KEY);
  const held = start.kvs[0];
  if (held && held.modRevision <= sourceRevision)
    throw new RefusedError(
      `the source holds the key ${BUMP_KEY}: the revision bump by writes would change it; delete it from the recovered cluster, then resume`,
    );
  const from = start.header.revision;
  let rev = from;
  let writes = 0;
  let said = Date.now();
  // A bounded loop: each round writes what is left (at most target - from writes in all).
  while (rev < target - 1) {
    signal?.throwIfAborted();
    const n = Math.min(PIPELINE, target - 1 - rev);
    const results = await Promise.all(Array.from({ length: n }, () => client.put(BUMP_KEY, '')));
    writes += n;
    rev = Math.max(rev, ...results.map((r) => r.header.revision));
    if (Date.now() - said > 5000) {
      onProgress?.(`revision bump: at ${rev} of ${target}`);
      said = Date.now();
    }
  }
  const del = await client.deleteRange(BUMP_KEY);
  writes++;
  const revision = del.header.revision;
  await client.compact(revision, { physical: true });
  return { writes, fromRevision: from, revision, compactedAt: revision };
}

/**
 * The compaction that ends a bump, made again by a resumed run: at `target`
 * unless the cluster is compacted there or later already. Returns the revision
 * the cluster is compacted at.
 */
export async function compactBumpedAt(client: EtcdClient, target: number): Promise<number> {
  try {
    await client.compact(target, { physical: true });
    return target;
  } catch (e) {
    if (/required revision has been compacted/.test((e as Error).message)) return (await client.hashKV(0)).compactRevision;
    throw e;
  }
}
