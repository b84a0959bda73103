// What the leader knows of one follower's log, and how fast it may send to it.
// Probe: one append at a time until the follower's position is found.
// Replicate: stream appends optimistically, bounded by the in-flight window.
// Snapshot: a snapshot is on its way; send nothing else until it is reported.

export enum ProgressState {
  Probe = 'Probe',
  Replicate = 'Replicate',
  Snapshot = 'Snapshot',
}

/** A bounded FIFO of the last indexes of appends not yet acknowledged. */
class Inflights {
  private buf: number[] = [];
  constructor(readonly cap: number) {}
  full(): boolean {
    return this.buf.length >= this.cap;
  }
  count(): number {
    return this.buf.length;
  }
  add(lastIndex: number): void {
    this.buf.push(lastIndex);
  }
  /** Forget every append up to and including index (acknowledged). */
  freeLE(index: number): void {
    let n = 0;
    while (n < this.buf.length && this.buf[n] <= index) n++;
    if (n > 0) this.buf.splice(0, n);
  }
  /** The append that ended at `old` was extended to end at `last`. */
  replaceLast(old: number, last: number): void {
    if (this.buf.length > 0 && this.buf[this.buf.length - 1] === old) this.buf[this.buf.length - 1] = last;
    else this.buf.push(last);
  }
  freeFirst(): void {
    this.buf.shift();
  }
  reset(): void {
    this.buf = [];
  }
}

export class Progress {
  match = 0;
  next: number;
  state = ProgressState.Probe;
  /** Probe: an append was sent and not yet answered. */
  probeSent = false;
  pendingSnapshot = 0;
  /** Heard from since the last check-quorum round. */
  recentActive = false;
  /** The highest commit index an append or heartbeat sent to this follower carried. */
  commitSent = 0;
  /** The last index the leader appended for a proposal this follower forwarded. */
  forwarded = 0;
  readonly inflights: Inflights;

  constructor(
    next: number,
    maxInflight: number,
    public isLearner: boolean,
  ) {
    this.next = next;
    this.inflights = new Inflights(maxInflight);
  }

  private resetState(state: ProgressState): void {
    this.probeSent = false;
    this.pendingSnapshot = 0;
    this.state = state;
    this.inflights.reset();
  }

  becomeProbe(): void {
    if (this.state === ProgressState.Snapshot) {
      const pending = this.pendingSnapshot;
      this.resetState(ProgressState.Probe);
      this.next = Math.max(this.match + 1, pending + 1);
    } else {
      this.resetState(ProgressState.Probe);
      this.next = this.match + 1;
    }
  }

  becomeReplicate(): void {
    this.resetState(ProgressState.Replicate);
    this.next = this.match + 1;
  }

  becomeSnapshot(index: number): void {
    this.resetState(ProgressState.Snapshot);
    this.pendingSnapshot = index;
  }

  /**
   * An append went out; `last` is the index of its last entry (undefined if it carried
   * none). `extended` > 0: it was folded into an unsent append that ended there, which
   * stays one message in flight.
   */
  sentAppend(last: number | undefined, extended = 0): void {
    if (this.state === ProgressState.Replicate && last !== undefined) {
      this.next = last + 1;
      if (extended > 0) this.inflights.replaceLast(extended, last);
      else this.inflights.add(last);
    } else if (this.state === ProgressState.Probe) {
      this.probeSent = true;
    }
  }

  /** An acknowledgement of index n; false if it was stale. */
  maybeUpdate(n: number): boolean {
    let updated = false;
    if (this.match < n) {
      this.match = n;
      updated = true;
      this.probeSent = false;
    }
    this.next = Math.max(this.next, n + 1);
    return updated;
  }

  /**
   * A rejection of the append after `rejected`; `hint` is where the follower
   * suggests the logs may agree. False if the rejection is stale.
   */
  maybeDecrTo(rejected: number, hint: number): boolean {
    if (this.state === ProgressState.Replicate) {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, hint + 1), this.match + 1, 1);
    this.probeSent = false;
    return true;
  }

  isPaused(): boolean {
    switch (this.state) {
      case ProgressState.Probe:
        return this.probeSent;
      case ProgressState.Replicate:
        return this.inflights.full();
      case ProgressState.Snapshot:
        return true;
    }
  }
}
