// The retained raft log in memory: entries after `base`, the (index, term) of the
// entry just before them (the snapshot's, or the last compacted one).

import type { Entry } from '../raft/types.js';

export class MemLog {
  private base: { index: number; term: number };
  private ents: Entry[] = [];

  constructor(baseIndex: number, baseTerm: number) {
    this.base = { index: baseIndex, term: baseTerm };
  }

  get baseIndex(): number {
    return this.base.index;
  }
  get baseTerm(): number {
    return this.base.term;
  }
  firstIndex(): number {
    return this.base.index + 1;
  }
  lastIndex(): number {
    return this.base.index + this.ents.length;
  }
  lastTerm(): number {
    return this.ents.length > 0 ? this.ents[this.ents.length - 1].term : this.base.term;
  }

  /** The term of entry `index`, for baseIndex <= index <= lastIndex; undefined outside. */
  term(index: number): number | undefined {
    if (index === this.base.index) return this.base.term;
    return this.ents[index - this.base.index - 1]?.term;
  }

  /** Entries [lo, hi), within the retained range. */
  slice(lo: number, hi: number): Entry[] {
    return this.ents.slice(lo - this.base.index - 1, hi - this.base.index - 1);
  }

  all(): Entry[] {
    return this.ents.slice();
  }

  /** Drops the entries after `index` (baseIndex <= index <= lastIndex). */
  truncate(index: number): void {
    if (index < this.base.index || index > this.lastIndex())
      throw new RangeError(`truncate ${index} outside the log [${this.base.index}, ${this.lastIndex()}]`);
    this.ents.length = index - this.base.index;
  }

  /** Appends one entry, first dropping any entries at or after its index (a conflicting suffix). */
  put(e: Entry): void {
    const pos = e.index - this.base.index - 1;
    if (pos < 0 || pos > this.ents.length) throw new RangeError(`entry ${e.index} does not fit log (${this.base.index}, ${this.lastIndex()}]`);
    if (pos < this.ents.length) this.ents.length = pos;
    this.ents.push(e);
  }

  /** A snapshot replaces the whole log. */
  reset(index: number, term: number): void {
    this.base = { index, term };
    this.ents = [];
  }

  /** Forgets entries up to `index` (baseIndex <= index <= lastIndex). */
  compact(index: number): void {
    if (index <= this.base.index) return;
    const term = this.term(index);
    if (term === undefined) throw new RangeError(`compact ${index} beyond last index ${this.lastIndex()}`);
    this.ents = this.ents.slice(index - this.base.index);
    this.base = { index, term };
  }
}
