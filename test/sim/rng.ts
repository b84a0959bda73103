// The simulator's only source of randomness: a small seeded PRNG (mulberry32),
// so a run is reproducible from its seed alone. Independent streams (the driver,
// each node incarnation's election timer) are forked by mixing a salt into the seed.

/** Mixes numbers into one 32-bit seed (a murmur3-style finalizer per part). */
export function mixSeed(...parts: number[]): number {
  let h = 0x9e3779b9;
  for (const p of parts) {
    let k = Math.imul(p >>> 0, 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
    // High bits of large parts (seeds above 2^32) are not lost.
    h ^= Math.floor(p / 4294967296) | 0;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

export class Rng {
  private s: number;

  constructor(seed: number) {
    this.s = mixSeed(seed);
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.s = (this.s + 0x6d2b79f5) >>> 0;
    let t = this.s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Uniform integer in [lo, hi]. */
  between(lo: number, hi: number): number {
    return lo + this.int(hi - lo + 1);
  }

  chance(p: number): boolean {
    return p > 0 && this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('pick from an empty list');
    return items[this.int(items.length)];
  }

  /** Picks by weight; entries with weight 0 are never chosen. */
  weighted<T>(choices: readonly (readonly [T, number])[]): T | undefined {
    let total = 0;
    for (const [, w] of choices) total += w;
    if (total <= 0) return undefined;
    let r = this.next() * total;
    for (const [v, w] of choices) {
      if ((r -= w) < 0) return v;
    }
    return choices[choices.length - 1][0];
  }

  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [items[i], items[j]] = [items[j], items[i]];
    }
    return items;
  }

  /** An independent stream for `salt` (e.g. one per node incarnation). */
  fork(...salt: number[]): Rng {
    return new Rng(mixSeed(this.s, ...salt));
  }

  /** The function form RaftConfig.random wants. */
  fn(): () => number {
    return () => this.next();
  }
}
