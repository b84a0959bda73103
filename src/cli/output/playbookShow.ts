// `playbook show` and `playbook list` as text and JSON: a playbook's variables
// and steps, and the shipped playbooks one per line.
import { formatDuration } from '../../common/durations.js';
import type { PlaybookListing } from '../../playbook/locate.js';
import type { PlanNode, Playbook, VariableDef } from '../../playbook/schema.js';
import { formatValue } from '../../playbook/values.js';

function validationText(v: VariableDef): string {
  const parts: string[] = [];
  const show = (n: number) => (v.type === 'duration' ? formatDuration(n) : String(n));
  if (v.validation.pattern) parts.push(`pattern ${v.validation.pattern.source}`);
  if (v.validation.min !== undefined) parts.push(`${v.type === 'list' ? 'at least' : 'min'} ${show(v.validation.min)}${v.type === 'list' ? ' items' : ''}`);
  if (v.validation.max !== undefined) parts.push(`${v.type === 'list' ? 'at most' : 'max'} ${show(v.validation.max)}${v.type === 'list' ? ' items' : ''}`);
  if (v.validation.choices) parts.push(`one of ${v.validation.choices.map((c) => formatValue(c, v.type)).join(', ')}`);
  return parts.join('; ');
}

function typeText(v: VariableDef): string {
  return v.type === 'list' ? `list of ${v.items ?? 'string'}` : v.type;
}

function yamlish(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

export function formatShow(pb: Playbook): string {
  const lines = [`Playbook ${pb.name}: ${pb.description}`, `File: ${pb.absPath}`, `sha256: ${pb.sha256}`, '', 'Variables:'];
  if (pb.variables.length === 0) lines.push('  (none)');
  for (const v of pb.variables) {
    const rules = validationText(v);
    lines.push(`  ${v.name} (${typeText(v)}) ${v.hasDefault ? `default ${formatValue(v.default, v.type, v.items)}` : 'required'}${rules ? `; ${rules}` : ''}`);
    if (v.prompt) lines.push(`      prompt: ${v.prompt}`);
    if (v.description) lines.push(`      ${v.description}`);
  }
  lines.push('', 'Steps:');
  const walk = (nodes: PlanNode[], indent: string, prefix: string) => {
    nodes.forEach((n, i) => {
      const num = `${prefix}${i + 1}`;
      if (n.kind === 'step') {
        lines.push(`${indent}${num}. ${n.id} [${n.type}]${n.name ? ` ${n.name}` : ''}`);
        for (const [k, p] of Object.entries(n.with)) lines.push(`${indent}     ${k}: ${yamlish(p.value)}`);
      } else {
        lines.push(`${indent}${num}. ${n.id}: for each ${n.as} in ${yamlish(n.forEach.value)}${n.name ? ` — ${n.name}` : ''}`);
        walk(n.steps, `${indent}   `, `${num}.`);
      }
    });
  };
  walk(pb.steps, '  ', '');
  return lines.join('\n');
}

export function showJson(pb: Playbook): unknown {
  const node = (n: PlanNode): unknown =>
    n.kind === 'step'
      ? {
          id: n.id,
          type: n.type,
          ...(n.name ? { name: n.name } : {}),
          with: Object.fromEntries(Object.entries(n.with).map(([k, p]) => [k, p.value])),
          line: n.origin.line,
        }
      : { id: n.id, forEach: n.forEach.value, as: n.as, ...(n.name ? { name: n.name } : {}), steps: n.steps.map(node), line: n.origin.line };
  return {
    name: pb.name,
    description: pb.description,
    file: pb.absPath,
    sha256: pb.sha256,
    variables: pb.variables.map((v) => ({
      name: v.name,
      type: v.type,
      ...(v.items ? { items: v.items } : {}),
      ...(v.hasDefault ? { default: v.default } : {}),
      ...(v.prompt ? { prompt: v.prompt } : {}),
      ...(v.description ? { description: v.description } : {}),
      validation: {
        ...(v.validation.pattern ? { pattern: v.validation.pattern.source } : {}),
        ...(v.validation.min !== undefined ? { min: v.validation.min } : {}),
        ...(v.validation.max !== undefined ? { max: v.validation.max } : {}),
        ...(v.validation.choices ? { choices: v.validation.choices } : {}),
      },
    })),
    steps: pb.steps.map(node),
  };
}

export function formatList(list: PlaybookListing[]): string {
  if (list.length === 0) return 'No shipped playbooks found.';
  const width = Math.max(...list.map((p) => p.name.length));
  return list.map((p) => `${p.name.padEnd(width)}  ${p.error ? `(invalid: ${p.error})` : p.description.trim().replace(/\s+/g, ' ')}`).join('\n');
}
