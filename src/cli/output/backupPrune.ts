// `lifeboat backup prune` as text: what went (or would go), what the store refused, what stays.
import type { PruneResult } from '../../backup/prune.js';
import type { PruneVictim } from '../../backup/prunePlan.js';
import { humanBytes } from './humanize.js';
import type { Renderer } from './render.js';

const range = (v: PruneVictim) => (v.fromRevision === undefined ? '' : ` revisions ${v.fromRevision}..${v.toRevision}`);

function pruneText(r: PruneResult): string {
  const out: string[] = [];
  const verb = r.dryRun ? 'would delete' : 'deleted';
  for (const v of r.deleted) out.push(`${verb} ${v.kind}${range(v)}: ${v.object ?? v.manifest}`);
  for (const s of r.skipped) out.push(`skipped ${s.victim.kind}${range(s.victim)}: ${s.reason}`);
  for (const k of r.kept) {
    const fulls = k.fulls.map((f) => `${f.revision} (${f.reasons.join(', ')})`).join(', ');
    out.push(
      `cluster ${k.clusterId} keeps fulls ${fulls || 'none'} and ${k.segments} segment(s)${k.oldestRevision === undefined ? '' : `, from revision ${k.oldestRevision}`}`,
    );
  }
  const bytes = r.deleted.reduce((n, v) => n + v.size, 0);
  out.push(
    `${r.store}: ${verb} ${r.deleted.length} object(s), ${humanBytes(bytes)}${r.skipped.length > 0 ? `; ${r.skipped.length} refused by the store (object lock) and kept` : ''}`,
  );
  return out.join('\n');
}

export const backupPruneOutput: Renderer<PruneResult> = { simple: pruneText, table: pruneText };
