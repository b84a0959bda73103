// A reference model of what the raft storage should hold, for the crash tests:
// the log's terms after a base, and the hard state. A batch becomes a list of
// model states, one per record, since a crash may keep any prefix of its records.

import type { Entry, HardState, PersistedState } from '../../src/raft/types.js';
import { isGenuine } from './fixtures.js';

export class LogModel {
  constructor(
    public baseIndex: number,
    public baseTerm: number,
    public terms: number[],
    public hs: HardState,
  ) {}

  static from(state: PersistedState): LogModel {
    return new LogModel(
      state.snapshot.index,
      state.snapshot.term,
      state.entries.map((e) => e.term),
      { ...state.hardState },
    );
  }

  clone(): LogModel {
    return new LogModel(this.baseIndex, this.baseTerm, this.terms.slice(), { ...this.hs });
  }

  last(): number {
    return this.baseIndex + this.terms.length;
  }

  term(i: number): number | undefined {
    return i === this.baseIndex ? this.baseTerm : this.terms[i - this.baseIndex - 1];
  }

  put(e: Entry): void {
    this.terms.length = e.index - this.baseIndex - 1;
    this.terms.push(e.term);
  }

  reset(index: number, term: number): void {
    this.baseIndex = index;
    this.baseTerm = term;
    this.terms = [];
  }

  compact(index: number): void {
    if (index <= this.baseIndex) return;
    this.baseTerm = this.term(index)!;
    this.terms = this.terms.slice(index - this.baseIndex);
    this.baseIndex = index;
  }

  /** The states after each record of a save() batch, in write order. */
  batchStates(batch: { snapshot?: { index: number; term: number }; entries: Entry[]; hardState?: HardState }): LogModel[] {
    const m = this.clone();
    const out: LogModel[] = [];
    if (batch.snapshot) {
      m.reset(batch.snapshot.index, batch.snapshot.term);
      out.push(m.clone());
    }
    const first = batch.entries[0]?.index;
    if (!batch.snapshot && first !== undefined && first <= m.last()) {
      m.terms.length = first - m.baseIndex - 1; // the Truncate record
      out.push(m.clone());
    }
    for (const e of batch.entries) {
      m.put(e);
      out.push(m.clone());
    }
    if (batch.hardState) {
      m.hs = { ...batch.hardState };
      out.push(m.clone());
    }
    return out.length > 0 ? out : [m];
  }

  /** Why `r` is not what a restart from this state should give, or undefined if it is. */
  mismatch(r: PersistedState): string | undefined {
    const s = r.snapshot;
    // Raft's restore: keep the log after the snapshot only if it agrees at the snapshot's index.
    const keep = this.term(s.index) === s.term && s.index <= this.last();
    const want = keep ? this.terms.slice(s.index - this.baseIndex) : [];
    const got = r.entries.map((e) => e.term);
    if (want.length !== got.length || want.some((t, i) => t !== got[i])) {
      return `log after snapshot ${s.index}: want terms [${want.join(',')}], got [${got.join(',')}]`;
    }
    const hs = { ...this.hs, commit: Math.max(this.hs.commit, s.index) };
    if (hs.term !== r.hardState.term || hs.vote !== r.hardState.vote || hs.commit !== r.hardState.commit) {
      return `hard state: want ${JSON.stringify(hs, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))}, got ${JSON.stringify(r.hardState, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))}`;
    }
    return undefined;
  }
}

/** Checks a recovered state against every state a crash could have left; returns a failure description or undefined. */
export function checkRecovered(r: PersistedState, candidates: readonly LogModel[]): string | undefined {
  r.entries.forEach((e, i) => {
    if (e.index !== r.snapshot.index + 1 + i) throw new Error(`entries not contiguous after snapshot ${r.snapshot.index}`);
  });
  const fake = r.entries.find((e) => !isGenuine(e));
  if (fake) return `entry ${fake.index} term ${fake.term} has content that was never written`;
  const reasons: string[] = [];
  for (const c of candidates) {
    const why = c.mismatch(r);
    if (why === undefined) return undefined;
    reasons.push(why);
  }
  return `recovered state matches none of ${candidates.length} possible states; e.g. ${reasons.at(-1)}`;
}
