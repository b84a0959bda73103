// Applies held back while kv.db cannot be written (a defragment holds its write
// lock in the store's worker). The Raft loop goes on meanwhile: entries are made
// durable, sent, acknowledged and committed, heartbeats go out, so no election
// starts; only applying them (and answering their proposers) waits, in log order,
// as etcd's clients wait while it defragments. A leader's snapshot waits too.
export class HeldBackApplies {
  private holds = 0;
  private readonly queue: Array<() => void> = [];

  /** Whether anything is held back now (or would be). */
  get holding(): boolean {
    return this.holds > 0 || this.queue.length > 0;
  }

  /** Runs apply now, or after what is held back once the last hold is released. */
  run(apply: () => void): void {
    if (this.holding) this.queue.push(apply);
    else apply();
  }

  /**
   * Holds applies back while work runs, then applies what waited, in order. An
   * apply that throws stops the rest (they stay queued): the caller's `failed`
   * is told, as the Raft loop tells its own failures (the member stops).
   */
  async during<T>(work: () => Promise<T>, failed: (e: Error) => void): Promise<T> {
    this.holds++;
    try {
      return await work();
    } finally {
      this.holds--;
      if (this.holds === 0) this.drain(failed);
    }
  }

  private drain(failed: (e: Error) => void): void {
    while (this.holds === 0 && this.queue.length > 0) {
      const apply = this.queue.shift()!;
      try {
        apply();
      } catch (e) {
        failed(e instanceof Error ? e : new Error(String(e)));
        return;
      }
    }
  }
}
