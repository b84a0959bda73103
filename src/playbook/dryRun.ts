// The dry-run: every step in the order it would run (for-each expanded), with
// its parameters resolved and what it says it would change. Nothing runs and
// nothing is recorded in the audit log.
import type { Playbook } from './schema.js';
import type { RunPlan } from './plan.js';
import { formatBound, type BoundVariables } from './variables.js';
import { formatValue } from './values.js';

export function formatDryRun(pb: Playbook, bound: BoundVariables, plan: RunPlan): string {
  const lines = [
    `Dry run of playbook ${pb.name} (${pb.absPath}, sha256 ${pb.sha256.slice(0, 12)}…): nothing is changed, nothing is recorded.`,
    '',
    'Variables:',
    ...(pb.variables.length ? formatBound(pb, bound).map((l) => `  ${l}`) : ['  (none)']),
    '',
    'Steps:',
  ];
  for (const e of plan.entries) {
    const indent = '  '.repeat(e.depth + 1);
    if (e.kind === 'for-each') {
      const items =
        e.items === null
          ? `the list ${e.source} is known when the run gets here; its steps run once per item`
          : `${e.items.length} item${e.items.length === 1 ? '' : 's'}`;
      lines.push(`${indent}for-each ${e.stableId}: for each ${e.node.as} in ${e.source} (${items})`);
      continue;
    }
    lines.push(`${indent}${e.ordinal ?? '?'}. ${e.stableId} [${e.node.type}]${e.title !== e.node.type ? ` ${e.title}` : ''}`);
    if (e.params) {
      for (const [k, v] of Object.entries(e.params)) lines.push(`${indent}     ${k}: ${formatValue(v, e.types[k])}`);
      for (const d of e.describe) lines.push(`${indent}     → ${d}`);
    } else {
      const shown = e.partialParams ?? Object.fromEntries(Object.entries(e.node.with).map(([k, p]) => [k, p.value]));
      for (const [k, v] of Object.entries(shown)) lines.push(`${indent}     ${k}: ${typeof v === 'number' ? formatValue(v, e.types[k]) : formatValue(v)}`);
      lines.push(`${indent}     → known at run time (uses ${e.runTimeRefs.join(', ')})`);
    }
  }
  return lines.join('\n');
}

export function dryRunJson(pb: Playbook, bound: BoundVariables, plan: RunPlan): unknown {
  return {
    dryRun: true,
    playbook: pb.name,
    file: pb.absPath,
    sha256: pb.sha256,
    variables: bound.values,
    variableSources: bound.sources,
    steps: plan.entries.map((e) =>
      e.kind === 'for-each'
        ? { kind: 'for-each', id: e.stableId, as: e.node.as, source: e.source, items: e.items }
        : {
            kind: 'step',
            ordinal: e.ordinal,
            id: e.stableId,
            type: e.node.type,
            title: e.title,
            ...(e.params ? { params: e.params, describe: e.describe } : { runTimeRefs: e.runTimeRefs }),
          },
    ),
  };
}
