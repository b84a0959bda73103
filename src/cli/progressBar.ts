// A one-line progress bar on stderr, drawn only when stderr is a terminal.
import { humanBytes } from './output/humanize.js';

export interface ProgressBar {
  update(done: number, total: number): void;
  finish(): void;
}

const NONE: ProgressBar = { update() {}, finish() {} };

/** `format` prints the counts (bytes by default; e.g. String for keys). */
export function progressBar(label: string, stream: NodeJS.WriteStream = process.stderr, format: (n: number) => string = humanBytes): ProgressBar {
  if (!stream.isTTY) return NONE;
  let last = 0;
  let drawn = false;
  const width = 30;
  const draw = (done: number, total: number) => {
    const frac = total > 0 ? Math.min(1, done / total) : 0;
    const filled = Math.round(frac * width);
    const bar = `${'#'.repeat(filled)}${'.'.repeat(width - filled)}`;
    stream.write(`\r${label} [${bar}] ${(frac * 100).toFixed(0).padStart(3)}% ${format(done)} / ${format(total)}\x1b[K`);
    drawn = true;
  };
  return {
    update(done, total) {
      const now = Date.now();
      if (now - last < 100 && done < total) return;
      last = now;
      draw(done, total);
    },
    finish() {
      if (drawn) stream.write('\r\x1b[K');
    },
  };
}
