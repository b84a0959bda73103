// `lifeboat drill`'s output: the verdict, each check, the recovery time it
// demonstrated phase by phase (with a bar each), the scratch cluster (kept or torn
// down) and the run's audit record. -w json prints the result as it is.
import type { Renderer } from '../baseCommand.js';
import type { DrillResult } from '../../drill/drill.js';

const BAR = 30;

function secs(s: number): string {
  return `${s.toFixed(s < 10 ? 2 : 1)}s`;
}

function simple(r: DrillResult): string {
  const out: string[] = [];
  const what = `${r.runtime} scratch cluster of ${r.members} member${r.members === 1 ? '' : 's'}`;
  const from = r.snapshot
    ? `${r.snapshot.given ? `snapshot ${r.snapshot.file}` : 'a snapshot taken now'} (revision ${r.snapshot.revision}, ${r.snapshot.keys} keys)`
    : r.snapshotFile
      ? `snapshot ${r.snapshotFile}`
      : 'no snapshot (none was taken)';
  out.push(`drill ${r.runId} ${r.passed ? 'PASSED' : r.outcome === 'interrupted' ? 'INTERRUPTED' : 'FAILED'}: ${what} from ${from}`);
  for (const c of r.checks) out.push(`  ${c.ok ? 'ok  ' : 'FAIL'} ${c.name.padEnd(8)} ${c.detail}`);
  for (const f of r.failures.filter((x) => !r.checks.some((c) => !c.ok && x === `${c.name}: ${c.detail}`))) out.push(`  FAIL ${f}`);
  if (r.data) out.push(`  compared by ${r.data.method === 'hashkv' ? 'HashKV' : 'sampled keys, not HashKV'}: ${r.data.why}`);
  if (r.phases.length > 0) {
    out.push('recovery time demonstrated (RTO):');
    const max = Math.max(...r.phases.map((p) => p.seconds), 0.001);
    const width = Math.max(...r.phases.map((p) => p.label.length), 'writable after'.length);
    for (const p of r.phases)
      out.push(`  ${p.label.padEnd(width)} ${secs(p.seconds).padStart(7)}  ${'#'.repeat(Math.max(1, Math.round((p.seconds / max) * BAR)))}`);
    if (r.writableSeconds !== null)
      out.push(`  ${'writable after'.padEnd(width)} ${secs(r.writableSeconds).padStart(7)}  (snapshot to the first write accepted)`);
    if (r.totalSeconds !== null && r.members > 1)
      out.push(`  ${'all members'.padEnd(width)} ${secs(r.totalSeconds).padStart(7)}  (to the last member caught up and promoted)`);
  }
  if (r.source.before && r.source.unchanged)
    out.push(
      `source cluster ${r.source.before.clusterId} unchanged: members ${r.source.before.membership.length}, alarms ${r.source.before.alarms.length || 'none'}`,
    );
  for (const w of r.warnings) out.push(`warning: ${w}`);
  if (r.scratch.kept) {
    out.push(`scratch cluster kept (cluster ${r.scratch.clusterId ?? '?'}), endpoints ${r.scratch.members.map((m) => m.clientUrl).join(',')}`);
    const pids = r.scratch.members.map((m) => m.pid).filter((p): p is number => p !== null);
    out.push(`  stop it with: kill ${pids.join(' ')} && rm -rf ${r.scratch.dir}`);
  } else out.push(`scratch cluster torn down (${r.scratch.dir} removed; member logs in ${r.scratch.logDir})`);
  if (r.prometheusFile) out.push(`metrics written to ${r.prometheusFile}`);
  out.push(`Run ID: ${r.runId}`, `Audit chain head: ${r.auditHead}`);
  return out.join('\n');
}

export const drillOutput: Renderer<DrillResult> = { simple, table: simple };
