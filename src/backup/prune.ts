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

export async function applyPrune(store: ObjectStore, plan: PrunePlan, dryRun: boolean): Promise<PruneResult> {
  const result: PruneResult = { store: store.url, dryRun, deleted: [], skipped: [], kept: plan.kept };
  if (dryRun) return { ...result, deleted: plan.delete };
  for (const v of plan.delete) {
    let done = true;
    for (const key of [v.manifest, v.object]) {
      if (key === undefined) continue;
      try {
        await store.delete(key);
      } catch (e) {
        if (!(e instanceof ObjectLocked)) throw e;
        result.skipped.push({ victim: v, key, reason: e.message });
        done = false;
        break;
      }
    }
    if (done) result.deleted.push(v);
  }
  return result;
}
