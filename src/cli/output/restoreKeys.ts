// `backup restore-keys`: the plan (a dry run) and the counts of an apply.
import type { ApplyResult } from '../../backup/restoreKeys.js';
import { planCounts, type KeyAction, type RestoreKeysPlan } from '../../backup/restoreKeysPlan.js';

const MARK: Record<KeyAction, string> = { restore: '+', overwrite: '~', delete: '-', 'keep-newer': '=', same: ' ' };
const SAYS: Record<KeyAction, string> = {
  restore: 'comes back',
  overwrite: 'overwritten with the value it had',
  delete: 'created since: deleted',
  'keep-newer': 'created since: left alone (--delete-newer deletes it)',
  same: 'unchanged',
};

export function restoreKeysPlanned(p: RestoreKeysPlan): string {
  const c = planCounts(p.keys);
  const lines = p.keys
    .filter((k) => k.action !== 'same')
    .map((k) => `${MARK[k.action]} ${Buffer.from(k.key, 'base64').toString('utf8')}  ${SAYS[k.action]}${k.lease ? ` (a fresh lease of ${k.lease.ttl}s)` : ''}`);
  return [
    `plan: keys under ${p.prefixes.join(', ')} as they were at revision ${p.revision} of cluster ${p.clusterId}, against cluster ${p.liveClusterId} at revision ${p.liveRevision}`,
    ...lines,
    `${c.restore} come back, ${c.overwrite} overwritten, ${c.delete} deleted, ${c['keep-newer']} newer left alone, ${c.same} unchanged; nothing was changed (a dry run): apply with --yes, or with --plan FILE after '-w json > FILE'`,
  ].join('\n');
}

export function restoreKeysApplied(r: ApplyResult): string {
  return [
    `restored ${r.restored + r.overwritten} keys (${r.restored} came back, ${r.overwritten} overwritten), deleted ${r.deleted}, skipped ${r.skipped}, refused ${r.refused}${r.leasesGranted ? `; ${r.leasesGranted} fresh leases` : ''}`,
    ...(r.refused ? [`refused (changed since the plan, left as they are): ${r.refusedKeys.join(', ')}`] : []),
    `recorded as run ${r.runId} in ${r.auditDb}`,
  ].join('\n');
}
