// What the interleaved before/after benches (idle, puts) share: the median of
// their rounds, and which build each variant ran.
import { spawnSync } from 'node:child_process';

export const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** The build's commit, `+` when its tree has changes not committed. */
export const commitOf = (dir: string): string => {
  const git = (args: string[]) => spawnSync('git', ['-C', dir, ...args], { encoding: 'utf8' }).stdout.trim();
  return `${git(['rev-parse', '--short', 'HEAD']) || dir}${git(['status', '--porcelain', '--untracked-files=no']) ? '+' : ''}`;
};
