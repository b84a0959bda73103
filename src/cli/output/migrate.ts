// How `lifeboat migrate` prints its result: what was copied, applied and repaired,
// and the revision both sides were verified equal at.
import { authSummary, type MigrateResult } from '../../migrate/migration.js';
import type { Renderer } from '../baseCommand.js';

export const migrateOutput: Renderer<MigrateResult> = {
  simple: (r) => {
    const v = r.verified;
    const lines = [
      `source ${r.source.endpoint} (cluster ${r.source.cluster.toString(16)}) → destination ${r.dest.endpoint} (cluster ${r.dest.cluster.toString(16)})`,
    ];
    if (r.copy.keys > 0 || !r.resumed)
      lines.push(
        `copied ${r.copy.keys} keys at revision ${r.copy.revision}${r.copy.restarts ? ` (copy restarted ${r.copy.restarts}x after source compactions)` : ''}`,
      );
    if (r.auth) lines.push(...authSummary(r.auth));
    if (r.applied.revisions > 0)
      lines.push(`applied ${r.applied.events} changes in ${r.applied.revisions} revisions (${r.applied.fromRevision + 1}..${r.applied.toRevision})`);
    if (r.repaired > 0) lines.push(`wrote ${r.repaired} keys the watch had not delivered yet, from the source at revision ${v.revision}`);
    lines.push(`verified: ${v.sourceKeys} keys equal at source revision ${v.revision} (sha256 ${v.sourceSha256.slice(0, 16)})`);
    lines.push(`progress kept in ${r.progressFile}`);
    return lines.join('\n');
  },
};
