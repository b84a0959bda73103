// Numbers for people, as etcdctl prints them.

const SIZES = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB'];

/** go-humanize's Bytes (SI units): 20480 → "20 kB", 2500000 → "2.5 MB", 7 → "7 B". */
export function humanBytes(n: number): string {
  if (n < 10) return `${n} B`;
  const e = Math.floor(Math.log(n) / Math.log(1000));
  const val = Math.floor((n / 1000 ** e) * 10 + 0.5) / 10;
  return val < 10 ? `${val.toFixed(1)} ${SIZES[e]}` : `${roundHalfEven(val)} ${SIZES[e]}`;
}

/** Go's %.0f: halves round to even (20.5 → 20), unlike toFixed. */
function roundHalfEven(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return f % 2 === 0 ? f : f + 1;
}
