// `backup verify`'s result for people, and reading its --identity-file flags.
import type { VerifyResult } from '../../backup/verify.js';

export function backupVerifyOutput(r: VerifyResult): string {
  const lines: string[] = [];
  if (r.passed) {
    const equal = r.hashChecks.filter((h) => h.equal).length;
    lines.push(
      `backup verified: cluster ${r.clusterId} (${r.runtime}) at revision ${r.revision}, ${r.keys ?? '?'} keys, from ${r.full} and ${r.segments.length} segment${r.segments.length === 1 ? '' : 's'}; HashKV equal at ${equal} recorded point${equal === 1 ? '' : 's'}`,
    );
  } else {
    lines.push(`backup verify FAILED: ${r.failures.join('; ')}`);
  }
  lines.push(`recorded as drill ${r.runId} in ${r.auditDb}`);
  return lines.join('\n');
}

export { readIdentityFiles } from '../../backup/identityFiles.js';
