// `backup verify`'s result for people, and reading its --identity-file flags.
import fs from 'node:fs';
import type { VerifyResult } from '../../backup/verify.js';
import { InputError } from '../../common/errors.js';

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

/** The age identities in the files given (AGE-SECRET-KEY-1… lines; comments and blank lines skipped). The keys are never shown. */
export function readIdentityFiles(files: readonly string[]): string[] {
  const out: string[] = [];
  for (const f of files) {
    let text: string;
    try {
      text = fs.readFileSync(f, 'utf8');
    } catch (e) {
      throw new InputError(`--identity-file ${f}: cannot read it (${(e as NodeJS.ErrnoException).code ?? 'unreadable'}); give the age identity file`);
    }
    const keys = text
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l.startsWith('AGE-SECRET-KEY-1'));
    if (keys.length === 0)
      throw new InputError(`--identity-file ${f} holds no age identity (a line starting AGE-SECRET-KEY-1); give the file age-keygen wrote`);
    out.push(...keys);
  }
  return out;
}
