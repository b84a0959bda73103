// Wording the HTML and Markdown reports share: outcomes, the cluster's change,
// values, and the chain's verdict.
import type { RunReport } from '../../audit/report.js';
import type { RunOutcome, RunRecord } from '../../audit/types.js';
import { verifyMessage } from './verifyOutput.js';

export function outcomeLabel(outcome: RunOutcome): string {
  return outcome === 'running' ? 'running (or its process died)' : outcome;
}

/** "cluster 8e9e… replaced by 2f0a", "members lost: a1", "members added: d4", in that order. */
export function clusterChange(run: RunRecord): string[] {
  const out: string[] = [];
  if (run.clusterIdBefore && run.clusterIdAfter && run.clusterIdBefore !== run.clusterIdAfter) {
    out.push(`cluster ${run.clusterIdBefore} replaced by ${run.clusterIdAfter}`);
  }
  if (run.memberIdsBefore && run.memberIdsAfter) {
    const lost = run.memberIdsBefore.filter((id) => !run.memberIdsAfter?.includes(id));
    const added = run.memberIdsAfter.filter((id) => !run.memberIdsBefore?.includes(id));
    if (lost.length > 0) out.push(`members no longer in the cluster: ${lost.join(', ')}`);
    if (added.length > 0) out.push(`members added: ${added.join(', ')}`);
  }
  return out;
}

/** A value as one line: text as is, anything else as JSON. */
export function valueText(v: unknown): string {
  return typeof v === 'string' ? v : (JSON.stringify(v) ?? String(v));
}

/** The chain's verdict in one line, as `lifeboat audit verify` says it. */
export function chainSummary(r: RunReport): string {
  if (!r.chain.ok) return verifyMessage(r.auditDb, r.chain.firstBad);
  return `audit log ${r.auditDb} is intact: ${r.rows} rows, head ${r.head}`;
}
