// Carrying out a prune plan (prunePlan.ts): each victim's manifest first, then
// its object, so a reader never sees a manifest without its object. What the
// store's object lock refuses is skipped and reported; a refused manifest keeps
// its object too (both stay a whole backup).
import type { PrunePlan, PruneVictim } from './prunePlan.js';
import { ObjectLocked, type ObjectStore } from './objectStore.js';

export interface PruneResult {
  store: string;
  dryRun: boolean;
  deleted: PruneVictim[];
  /** refused by the store (object lock): the key and what the store said */
  skipped: Array<{ victim: PruneVictim; key: string; reason: string }>;
  kept: PrunePlan['kept'];
}

/** Victims deleted at once (each one's manifest still before its object). */
const PARALLEL_DELETES = 8;

export async function applyPrune(store: ObjectStore, plan: PrunePlan, dryRun: boolean): Promise<PruneResult> {
  const result: PruneResult = { store: store.url, dryRun, deleted: [], skipped: [], kept: plan.kept };
  if (dryRun) return { ...result, deleted: plan.delete };
  const outcomes: Array<{ key: string; reason: string } | null | undefined> = plan.delete.map(() => undefined);
  const removeOne = async (v: PruneVictim): Promise<{ key: string; reason: string } | null> => {
    for (const key of [v.manifest, v.object]) {
      if (key === undefined) continue;
      try {
        await store.delete(key);
      } catch (e) {
        if (!(e instanceof ObjectLocked)) throw e;
        return { key, reason: e.message };
      }
    }
    return null;
  };
  let next = 0;
  const worker = async () => {
    while (next < plan.delete.length) {
      const i = next++;
      outcomes[i] = await removeOne(plan.delete[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL_DELETES, plan.delete.length) }, worker));
  // Reported in the plan's order, whatever order the deletes finished in.
  plan.delete.forEach((v, i) => {
    const o = outcomes[i];
    if (o === null) result.deleted.push(v);
    else if (o) result.skipped.push({ victim: v, ...o });
  });
  return result;
}
