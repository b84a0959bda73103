// Argument parsing shared by commands, with one-line usage errors (exit 2).
import { InputError } from '../common/errors.js';

/** A non-negative integer argument or flag value, e.g. a revision. */
export function parseRevision(text: string, what = 'revision', min = 1): number {
  const t = text.trim();
  if (!/^\d+$/.test(t) || !Number.isSafeInteger(Number(t)) || Number(t) < min) {
    throw new InputError(`invalid ${what} "${text}": expected an integer ≥ ${min}, e.g. 42`);
  }
  return Number(t);
}

/** "http://a:2380,http://b:2380" → the list, each checked as an http(s) URL with a port. */
export function parsePeerUrls(text: string, flag = '--peer-urls'): string[] {
  const urls = text
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (urls.length === 0) throw new InputError(`${flag} is empty: give at least one URL, e.g. http://10.0.0.4:2380`);
  for (const u of urls) {
    let ok = false;
    try {
      const p = new URL(u);
      ok = (p.protocol === 'http:' || p.protocol === 'https:') && p.hostname !== '' && /:\d+\/?$/.test(u);
    } catch {
      ok = false;
    }
    if (!ok) throw new InputError(`invalid URL "${u}" in ${flag}: expected http(s)://host:port, e.g. http://10.0.0.4:2380`);
  }
  return urls;
}
