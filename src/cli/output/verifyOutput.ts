// `lifeboat audit verify`'s output: intact (rows, head), or one line naming the
// first bad row and why.
import type { Renderer } from '../baseCommand.js';
import { GENESIS_HASH } from '../../audit/hashChain.js';
import type { VerifyResult } from '../../audit/types.js';

export type VerifyReport = VerifyResult & { auditDb: string; expectedHead: string | null };

export const verifyOutput: Renderer<VerifyReport> = {
  simple: (r) => {
    if (!r.ok) return verifyMessage(r.auditDb, r.firstBad);
    if (r.rows === 0) return `audit log ${r.auditDb} is empty (head ${GENESIS_HASH})`;
    const matches = r.expectedHead ? ' (matches --head)' : '';
    return `audit log ${r.auditDb} is intact: ${r.rows} rows, head ${r.head}${matches}`;
  },
};

/** The one line naming the first bad row and why. */
export function verifyMessage(auditDb: string, bad: { seq: number | null; reason: string }): string {
  return bad.seq === null
    ? `audit log ${auditDb} was tampered with: ${bad.reason}`
    : `audit log ${auditDb} fails verification at row ${bad.seq}: ${bad.reason}`;
}
