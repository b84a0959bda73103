// Durations as the flags take them ("2s", "500ms", "1m30s", Go-style) and as
// messages print them.
import { InputError } from './errors.js';

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** "2s" → 2000, "500ms" → 500, "1m30s" → 90000. A unit is required; the result is > 0. */
export function parseDuration(text: string, what = 'duration'): number {
  const s = text.trim();
  const re = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(s)) !== null) {
    total += Number(m[1]) * UNIT_MS[m[2]];
    consumed = re.lastIndex;
  }
  if (s === '' || consumed !== s.length) {
    throw new InputError(`invalid ${what} "${text}": expected a number with a unit, e.g. 2s or 500ms`);
  }
  if (!(total > 0)) throw new InputError(`invalid ${what} "${text}": must be greater than zero`);
  return Math.ceil(total);
}

/** 2000 → "2s", 500 → "500ms", 1500 → "1.5s", 90000 → "1m30s". */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  if (ms < 60_000) return `${+(ms / 1000).toFixed(3)}s`;
  const m = Math.floor(ms / 60_000);
  const rest = ms - m * 60_000;
  return rest === 0 ? `${m}m` : `${m}m${+(rest / 1000).toFixed(3)}s`;
}

/** Like Go's time.Duration.String() for a measured time in milliseconds: "850µs", "2.345ms", "1.2s". */
export function formatElapsed(ms: number): string {
  if (ms < 1) return `${+(ms * 1000).toFixed(3)}µs`;
  if (ms < 1000) return `${+ms.toFixed(6)}ms`;
  return `${+(ms / 1000).toFixed(6)}s`;
}
