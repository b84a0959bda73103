// The retained Raft log held in memory: a snapshot point, the entries after it,
// and how much of it is durable, committed and applied. Entries are kept from
// the last compaction on; the driver compacts after each snapshot, which bounds it.
import { invariant } from './invariant.js';
import { EntryBytes } from './entryBytes.js';
import type { Entry, Snapshot, SnapshotMeta } from './types.js';

export class RaftLog {
  /** Entries with index snapshot.index+1 ... in order. */
  private ents: Entry[];
  private readonly bytes = new EntryBytes();
  snapshot: SnapshotMeta;
  /** A snapshot received from the leader and not yet persisted by the driver. */
  pendingSnapshot: Snapshot | undefined;
  /** Highest index the driver has made durable. */
  stable: number;
  committed: number;
  applied: number;
  /** Highest index handed to the driver to apply (ahead of `applied` until advance). */
  applying: number;

  constructor(snapshot: SnapshotMeta, entries: Entry[], committed: number, applied: number) {
    this.snapshot = snapshot;
    this.ents = entries.slice();
    for (let i = 0; i < this.ents.length; i++) {
      invariant(this.ents[i].index === snapshot.index + 1 + i, `log not contiguous at ${snapshot.index + 1 + i}`);
    }
    this.stable = this.lastIndex();
    this.committed = Math.max(committed, snapshot.index);
    invariant(this.committed <= this.lastIndex(), `commit ${this.committed} beyond last index ${this.lastIndex()}`);
    this.applied = Math.max(applied, snapshot.index);
    invariant(this.applied <= this.committed, `applied ${this.applied} beyond commit ${this.committed}`);
    this.applying = this.applied;
  }

  firstIndex(): number {
    return this.snapshot.index + 1;
  }

  lastIndex(): number {
    return this.snapshot.index + this.ents.length;
  }

  lastTerm(): number {
    return this.ents.length > 0 ? this.ents[this.ents.length - 1].term : this.snapshot.term;
  }

  /** Term of the entry at index, or undefined when compacted away or not yet written. */
  term(index: number): number | undefined {
    if (index === this.snapshot.index) return this.snapshot.term;
    if (index < this.snapshot.index || index > this.lastIndex()) return undefined;
    return this.ents[index - this.snapshot.index - 1].term;
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** Entries in [lo, hi), capped at maxBytes (at least one entry). Undefined if lo is compacted. */
  slice(lo: number, hi: number, maxBytes = Infinity): Entry[] | undefined {
    if (lo <= this.snapshot.index) return undefined;
    hi = Math.min(hi, this.lastIndex() + 1);
    const out: Entry[] = [];
    let bytes = 0;
    for (let i = lo; i < hi; i++) {
      const e = this.ents[i - this.snapshot.index - 1];
      bytes += e.data.length;
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(e);
    }
    return out;
  }

  /** Raft §5.4.1: is a log ending at (lastTerm, lastIndex) at least as up to date as ours? */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const ourTerm = this.lastTerm();
    return lastTerm > ourTerm || (lastTerm === ourTerm && lastIndex >= this.lastIndex());
  }

  /** Appends entries, overwriting any suffix from entries[0].index on. */
  append(entries: Entry[]): void {
    if (entries.length === 0) return;
    const first = entries[0].index;
    invariant(first > this.committed, `truncating committed entry ${first} (commit ${this.committed})`);
    invariant(first <= this.lastIndex() + 1, `gap appending ${first} after ${this.lastIndex()}`);
    this.ents.length = first - this.snapshot.index - 1;
    for (const e of entries) this.ents.push(this.bytes.keep(e));
    // What was persisted from `first` on has been replaced and must be written again.
    if (this.stable >= first) this.stable = first - 1;
  }

  /**
   * Follower side of AppendEntries: if our log has (prevIndex, prevTerm), append what
   * conflicts or is new and return the index of the last new entry; else undefined.
   */
  maybeAppend(prevIndex: number, prevTerm: number, leaderCommit: number, entries: Entry[], skipCheck = false): number | undefined {
    if (skipCheck ? prevIndex > this.lastIndex() : !this.matchTerm(prevIndex, prevTerm)) return undefined;
    const lastNew = prevIndex + entries.length;
    const conflict = this.findConflict(entries);
    if (conflict !== 0) {
      if (!skipCheck) invariant(conflict > this.committed, `conflict at committed index ${conflict}`);
      if (conflict > this.committed) this.append(entries.slice(conflict - entries[0].index));
    }
    this.commitTo(Math.min(leaderCommit, lastNew, this.lastIndex()));
    return lastNew;
  }

  /** Index of the first entry that is new or disagrees with ours; 0 when all match. */
  private findConflict(entries: Entry[]): number {
    for (const e of entries) {
      if (!this.matchTerm(e.index, e.term)) return e.index;
    }
    return 0;
  }

  /**
   * For fast backtracking: the largest index <= index whose term is <= term. Entries
   * above it cannot match a leader whose entry at that position has `term`.
   */
  findConflictByTerm(index: number, term: number): number {
    index = Math.min(index, this.lastIndex());
    for (; index > this.snapshot.index; index--) {
      const t = this.term(index);
      if (t !== undefined && t <= term) return index;
    }
    return index;
  }

  commitTo(index: number): void {
    if (index > this.committed) {
      invariant(index <= this.lastIndex(), `commit ${index} beyond last index ${this.lastIndex()}`);
      this.committed = index;
    }
  }

  unstableEntries(): Entry[] {
    return this.stable >= this.lastIndex() ? [] : this.ents.slice(this.stable - this.snapshot.index);
  }

  /**
   * The driver persisted `written` (contiguous). Messages stepped while the write was
   * in flight may have replaced a suffix of them: what is still in the log (a prefix,
   * by log matching) is stable, if nothing before it was replaced too.
   */
  stableTo(written: readonly Entry[]): void {
    if (written.length === 0 || this.stable < written[0].index - 1) return;
    for (let i = written.length - 1; i >= 0; i--) {
      const e = written[i];
      if (!this.matchTerm(e.index, e.term)) continue;
      if (e.index > this.stable) this.stable = e.index;
      return;
    }
  }

  /** Committed entries not yet handed out for applying: the first, and more while their data stays within maxBytes. */
  nextCommitted(maxBytes: number): Entry[] {
    const lo = Math.max(this.applying, this.snapshot.index) + 1;
    if (lo > this.committed) return [];
    return this.slice(lo, this.committed + 1, maxBytes) ?? [];
  }

  appliedTo(index: number): void {
    invariant(index <= this.committed, `applied ${index} beyond commit ${this.committed}`);
    if (index > this.applied) this.applied = index;
    if (this.applying < this.applied) this.applying = this.applied;
  }

  /** Replace the whole log with a snapshot from the leader. */
  restore(s: Snapshot): void {
    this.snapshot = s.meta;
    this.ents = [];
    this.pendingSnapshot = s;
    this.committed = s.meta.index;
    this.stable = s.meta.index;
    this.applying = s.meta.index;
  }

  /** Drop entries up to index; the caller has a snapshot of the state at index. */
  compact(meta: SnapshotMeta): void {
    invariant(meta.index <= this.applied, `compacting ${meta.index} past applied ${this.applied}`);
    if (meta.index <= this.snapshot.index) return;
    this.ents = this.ents.slice(meta.index - this.snapshot.index);
    this.snapshot = meta;
  }
}
