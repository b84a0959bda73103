// The loop that drives the Raft core: tick → ready → send the leader's appends →
// persist (one write, one fsync) → send acks and votes → apply → advance.
// The fsync of a batch runs in libuv's thread pool: meanwhile the event loop keeps
// taking proposals and peer messages into the core (which produces no new Ready
// until advance()), and they all go into the next batch together: group commit,
// with the loop free to serve reads, ticks and heartbeats while the disk works.
// A Ready of one entry or none (a light load: nothing to overlap) is fsynced on
// the loop itself, which spares the two thread wake-ups of the pool on the put's
// critical path, unless the disk has lately been slow: an fsync of 100 ms on the
// loop holds every heartbeat, read and request behind it (a stall).
import { type Entry, type HardState, type Message, type Ready, type Snapshot, type SoftState } from '../raft/types.js';
import type { RawNode } from '../raft/rawNode.js';
import { failpointSet } from '../common/failpoint.js';
import type { Metrics } from './metrics.js';

/** Failpoint `ack-before-fsync`, a planted bug: apply and answer without waiting for the log's fsync (the power-loss model must catch it). */
/**
 * How long a follower may be owed the commit index (RaftConfig.lazyCommit) before it
 * is sent on its own: under load the next append carries it sooner, and at one
 * client the next put's append comes within about a millisecond.
 */
export const OWED_COMMIT_MS = 2;
/** A Ready with at most this many entries is fsynced on the event loop (see above). */
export const SYNC_ON_LOOP_MAX_ENTRIES = 1;
/** An fsync slower than this keeps the next ones off the loop for SLOW_DISK_HOLD_MS. */
export const SLOW_FSYNC_MS = 10;
const SLOW_DISK_HOLD_MS = 10_000;

/** What the driver needs from the data directory's Raft storage. */
export interface LogStore {
  /** Writes the batch, without an fsync. */
  write(batch: { hardState?: HardState; entries: Entry[]; snapshot?: Snapshot }): void;
  /** Makes everything written durable, off the event loop; nothing is written until it settles. */
  sync(): Promise<void>;
  /** The same on this thread. */
  syncNow(): void;
}

export interface DriverHooks {
  send(messages: Message[]): void;
  applySnapshot(s: Snapshot): void;
  /** Apply committed entries in order; called after they are durable. */
  applyEntries(entries: Entry[]): void;
  softState(s: SoftState): void;
  readStates(rd: Ready): void;
  dropped(rd: Ready): void;
  /** After advance(): e.g. take a snapshot when the log has grown. */
  afterAdvance(): void;
  fatal(err: Error): void;
}

export class RaftDriver {
  private scheduled = false;
  private timer: NodeJS.Timeout | undefined;
  /** Sends the commit index to followers still owed it (OWED_COMMIT_MS). */
  private owedCommitTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** The fsync of the outstanding Ready, while it runs. */
  private syncing: Promise<void> | undefined;
  /** When an fsync last took over SLOW_FSYNC_MS (performance.now()). */
  private slowFsyncAt = -Infinity;

  constructor(
    readonly raft: RawNode,
    private readonly store: LogStore,
    private readonly hooks: DriverHooks,
    private readonly metrics: Metrics,
    private readonly tickMs: number,
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      this.raft.tick();
      this.kick();
    }, this.tickMs);
    this.kick();
  }

  /** Something changed in the core: process its ready soon (coalesced). */
  kick(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.process();
    });
  }

  /** Runs fn against the core and schedules the resulting work. */
  with<T>(fn: (raft: RawNode) => T): T {
    try {
      return this.metrics.spans.during('raft', () => fn(this.raft));
    } finally {
      this.kick();
    }
  }

  private process(): void {
    this.metrics.spans.during('raft', () => this.processReady());
  }

  private processReady(): void {
    if (this.stopped) return;
    if (!this.owedCommitTimer && this.raft.hasOwedCommits()) {
      this.owedCommitTimer = setTimeout(() => {
        this.owedCommitTimer = undefined;
        if (!this.stopped) this.with((r) => r.sendOwedCommits());
      }, OWED_COMMIT_MS);
    }
    if (this.syncing || !this.raft.hasReady()) return;
    let rd: Ready;
    try {
      rd = this.raft.ready();
      if (rd.softState) this.hooks.softState(rd.softState);
      this.send(rd.messages);
      if (rd.snapshot || rd.entries.length > 0 || rd.hardState) {
        this.store.write({ hardState: rd.hardState, entries: rd.entries, snapshot: rd.snapshot });
      }
    } catch (e) {
      return this.fail(e);
    }
    if (!rd.mustSync || (__LIFEBOAT_FAULTS__ && failpointSet('ack-before-fsync'))) return this.finish(rd);
    const start = process.hrtime.bigint();
    const synced = () => {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      if (seconds * 1000 > SLOW_FSYNC_MS) this.slowFsyncAt = performance.now();
      this.metrics.observeFsync(seconds, rd.entries.length);
    };
    const diskFast = performance.now() - this.slowFsyncAt > SLOW_DISK_HOLD_MS;
    if (!rd.snapshot && rd.entries.length <= SYNC_ON_LOOP_MAX_ENTRIES && diskFast) {
      try {
        this.metrics.spans.during('fsync', () => this.store.syncNow());
      } catch (e) {
        return this.fail(e);
      }
      synced();
      return this.finish(rd);
    }
    this.syncing = this.store.sync().then(
      () => {
        this.syncing = undefined;
        synced();
        // Stopped meanwhile: send nothing more; what was written is durable anyway.
        if (!this.stopped) this.finish(rd);
      },
      (e) => {
        this.syncing = undefined;
        this.fail(e);
      },
    );
  }

  /** The outstanding Ready is durable: send what promised it, apply, advance. */
  private finish(rd: Ready): void {
    try {
      this.send(rd.messagesAfterPersist);
      if (rd.snapshot) this.metrics.spans.during('snapshot', () => this.hooks.applySnapshot(rd.snapshot!));
      if (rd.committedEntries.length > 0) {
        const start = process.hrtime.bigint();
        this.metrics.spans.during('apply', () => this.hooks.applyEntries(rd.committedEntries));
        this.metrics.observeApply(Number(process.hrtime.bigint() - start) / 1e9, rd.committedEntries.length);
      }
      if (rd.readStates.length > 0) this.hooks.readStates(rd);
      if (rd.droppedProposals.length > 0) this.hooks.dropped(rd);
      this.raft.advance(rd);
      this.hooks.afterAdvance();
    } catch (e) {
      return this.fail(e);
    }
    if (this.raft.hasReady()) this.kick();
  }

  private send(messages: Message[]): void {
    if (messages.length === 0) return;
    const sent = this.metrics.raftMessagesSent;
    for (const m of messages) sent.set(m.type, (sent.get(m.type) ?? 0) + 1);
    this.hooks.send(messages);
  }

  private fail(e: unknown): void {
    void this.stop(); // its promise never rejects; fatal() is told at once, not after a write in flight settles
    this.hooks.fatal(e instanceof Error ? e : new Error(String(e)));
  }

  /** Stops the loop; resolves once a write in flight has settled (then storage may close). */
  stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.owedCommitTimer) clearTimeout(this.owedCommitTimer);
    return (this.syncing ?? Promise.resolve()).catch(() => undefined);
  }
}
