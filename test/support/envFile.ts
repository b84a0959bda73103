// The environment files the hand-off writes next to each member's data dir.
import fs from 'node:fs';

/** KEY=VALUE lines of a systemd EnvironmentFile (comments skipped, quotes removed). */
export function readEnvFile(file: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of fs.readFileSync(file, 'utf8').split('\n')) {
    const m = /^([A-Z_]+)=(.*)$/.exec(l);
    if (m) out[m[1]] = m[2].replace(/^"(.*)"$/, '$1');
  }
  return out;
}
