// One figure per row of the report: a value for etcd and one for Lifeboat, and
// which way is better, so the ratio can be read (and drawn) the same way for all.
export interface Figure {
  id: string;
  label: string;
  unit: string;
  better: 'higher' | 'lower';
  etcd?: number;
  lifeboat?: number;
  /** a verdict to show instead of a number (check perf PASS/FAIL), per system */
  text?: { etcd?: string; lifeboat?: string };
  note?: string;
}

export class FigureSet {
  readonly figures: Figure[] = [];

  /** Set one system's value for a figure, creating the row on first use. */
  set(system: 'etcd' | 'lifeboat', row: Omit<Figure, 'etcd' | 'lifeboat' | 'text'>, value: number, text?: string): void {
    let f = this.figures.find((x) => x.id === row.id);
    if (!f) {
      f = { ...row };
      this.figures.push(f);
    }
    f[system] = value;
    if (text !== undefined) (f.text ??= {})[system] = text;
  }
}

/** Lifeboat ÷ etcd, or undefined when either is missing or etcd's is zero. */
export const ratio = (f: Figure): number | undefined =>
  Number.isFinite(f.etcd) && Number.isFinite(f.lifeboat) && f.etcd !== 0 ? f.lifeboat! / f.etcd! : undefined;

/** How much better Lifeboat is (>1) or worse (<1), whichever way the figure points. */
export const advantage = (f: Figure): number | undefined => {
  const r = ratio(f);
  if (r === undefined || r === 0) return undefined;
  return f.better === 'higher' ? r : 1 / r;
};

export function formatValue(v: number | undefined, unit: string): string {
  if (v === undefined || Number.isNaN(v)) return '—';
  const digits = Math.abs(v) >= 100 ? 0 : Math.abs(v) >= 10 ? 1 : Math.abs(v) >= 1 ? 2 : 3;
  return `${v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 })}${unit ? ` ${unit}` : ''}`;
}
