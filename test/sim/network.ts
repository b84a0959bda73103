// The simulated network: messages wait in per-tick buckets (delay = reordering
// across ticks; a random pick within a bucket = reordering within one), and a
// partition decides at delivery time whether a message gets through, so messages
// already in flight when a partition starts are lost like on a real cut link.
import type { Message, NodeId } from '../../src/raft/index.js';
import { node } from './trace.js';
import type { Rng } from './rng.js';

export interface Envelope {
  m: Message;
  /** The second copy of a duplicated message. */
  dup: boolean;
}

export class Network {
  now = 0;
  private buckets = new Map<number, Envelope[]>();
  private inFlight = 0;
  /** Symmetric partition: node -> group number; nodes not listed are in group 0. */
  private groups: Map<NodeId, number> | undefined;
  /** One-way cuts, "from>to". */
  private cuts = new Set<string>();
  /** Human description of the current partition, for the trace. */
  describe = '';

  send(m: Message, delay: number, dup = false): void {
    const at = this.now + Math.max(0, delay);
    let b = this.buckets.get(at);
    if (!b) this.buckets.set(at, (b = []));
    b.push({ m, dup });
    this.inFlight++;
  }

  /** Messages due now (including those left over from earlier ticks). */
  dueCount(): number {
    return this.buckets.get(this.now)?.length ?? 0;
  }

  size(): number {
    return this.inFlight;
  }

  /** Removes and returns a random due message. */
  takeDue(rng: Rng): Envelope | undefined {
    const b = this.buckets.get(this.now);
    if (!b || b.length === 0) return undefined;
    const i = rng.int(b.length);
    const e = b[i];
    b[i] = b[b.length - 1];
    b.pop();
    this.inFlight--;
    return e;
  }

  /** Moves to the next tick; anything still due is carried over, not lost. */
  advanceTo(t: number): void {
    const left = this.buckets.get(this.now);
    this.buckets.delete(this.now);
    this.now = t;
    if (left && left.length > 0) {
      const b = this.buckets.get(t);
      if (b) b.push(...left);
      else this.buckets.set(t, left);
    }
  }

  /** Every queued message, oldest bucket first (for hand-driven scenarios). */
  queued(): Envelope[] {
    const keys = [...this.buckets.keys()].sort((a, b) => a - b);
    return keys.flatMap((k) => this.buckets.get(k)!);
  }

  /** Removes queued messages matching `pred` and returns them in order. */
  take(pred: (m: Message) => boolean): Envelope[] {
    const out: Envelope[] = [];
    for (const k of [...this.buckets.keys()].sort((a, b) => a - b)) {
      const b = this.buckets.get(k)!;
      const keep: Envelope[] = [];
      for (const e of b) (pred(e.m) ? out : keep).push(e);
      this.buckets.set(k, keep);
    }
    this.inFlight -= out.length;
    return out;
  }

  blocked(from: NodeId, to: NodeId): boolean {
    if (this.groups && (this.groups.get(from) ?? 0) !== (this.groups.get(to) ?? 0)) return true;
    return this.cuts.size > 0 && this.cuts.has(`${from}>${to}`);
  }

  partitioned(): boolean {
    return this.groups !== undefined || this.cuts.size > 0;
  }

  /** Symmetric partition into the given groups (nodes not listed join the first group). */
  partition(groups: NodeId[][]): void {
    this.groups = new Map();
    groups.forEach((g, i) => g.forEach((id) => this.groups!.set(id, i)));
    this.cuts.clear();
    this.describe = groups.map((g) => `{${g.map(node).join(',')}}`).join('|');
  }

  /** One-way cuts: messages from each `from` to each `to` are lost; the other way works. */
  cutOneWay(from: NodeId[], to: NodeId[]): void {
    this.groups = undefined;
    this.cuts.clear();
    for (const f of from) for (const t of to) if (f !== t) this.cuts.add(`${f}>${t}`);
    this.describe = `{${from.map(node).join(',')}}-/->{${to.map(node).join(',')}}`;
  }

  heal(): void {
    this.groups = undefined;
    this.cuts.clear();
    this.describe = '';
  }
}
