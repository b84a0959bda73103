// Sizes as operators write them in flags: "64MiB", "1GB", "4096".
import { InputError } from './errors.js';

const UNITS: Record<string, number> = { '': 1, b: 1, k: 1e3, kb: 1e3, kib: 1024, m: 1e6, mb: 1e6, mib: 1024 ** 2, g: 1e9, gb: 1e9, gib: 1024 ** 3 };

/** "64MiB", "1GB", "4096" → bytes; `flag` names it in the error. */
export function parseSize(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(text.trim());
  const unit = m ? UNITS[m[2].toLowerCase()] : undefined;
  if (!m || unit === undefined) throw new InputError(`${flag} ${text}: not a size; give bytes, or a number with KiB, MiB or GiB (e.g. 64MiB)`);
  return Math.round(Number(m[1]) * unit);
}
