// `backup restore`'s result for people.
import type { MaterializeResult } from '../../backup/materialize.js';

export function backupRestoreOutput(r: MaterializeResult): string {
  const equal = r.hashChecks.filter((h) => h.equal === true);
  const atTarget = equal.some((h) => h.revision === r.revision);
  return [
    `wrote ${r.output} (${r.size} bytes): cluster ${r.clusterId} (${r.runtime}) at revision ${r.revision}, from ${r.full} and ${r.segments.length} segment${r.segments.length === 1 ? '' : 's'}`,
    ...r.skippedFulls.map((s) => `passed over ${s.object}: ${s.problem}`),
    equal.length > 0
      ? `HashKV equal to the cluster's at ${equal.length} recorded point${equal.length === 1 ? '' : 's'}${atTarget ? `, revision ${r.revision} among them` : ''}`
      : 'no hash point recorded on the way: the replay checked every revision, not a hash',
    ...(r.leasesDropped
      ? [
          `leases dropped (--drop-leases): ${r.leasesDropped.leases} leases removed, the keys of ${r.leasesDropped.revisions} stored revisions detached from theirs (they no longer expire; the file's HashKV differs from the cluster's by that)`,
        ]
      : []),
  ].join('\n');
}
