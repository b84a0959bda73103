// Reading age identity files (--identity-file, or a playbook's identity-file):
// the keys are secrets, so only files carry them, and no message shows them.
import fs from 'node:fs';
import { InputError } from '../common/errors.js';

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
