// The member's watchers: every watch on every client stream, fed from the MVCC
// store's history after each apply. There is one path for events, live or old: a
// watcher holds the next revision it must deliver (`nextRev`), and the hub reads
// the store's history from there, in batches that never split a revision, and
// advances it past what it sent. So a watcher delivers each event once, in
// revision order, whatever happens around it:
//
// - Leader changes do not touch it: events come from this member's own applies.
// - A slow client is never buffered for. Once a stream has more than its budget of
//   bytes unsent (STREAM_HIGH_WATER), the hub stops writing to it; its watchers
//   fall behind, their place kept as a revision, and when the client has read the
//   backlog down (STREAM_LOW_WATER) they catch up from history, batch by batch.
//   Memory per stream is bounded by the budget plus one batch. Only if a compaction
//   passes a watcher's next revision meanwhile is the watch cancelled, with
//   compact_revision set (as etcd does), and the client relists.
// - A snapshot installed from the leader replaces the store with the leader's,
//   whose history holds every revision since the last compaction: watchers resume
//   from it at their next revision; one whose revision was compacted on the leader
//   is cancelled as compacted. Nothing is skipped silently.
// - A store restored with `--bump-revision N --mark-compacted` counts everything
//   before its new revision as compacted, so a client resuming from an old revision
//   gets its watch cancelled as compacted and relists.
import { ErrCompacted } from '../api/errors.js';
import type { WatchCreate, WatchEventOut, WatchSession, WatchSink } from '../api/watchService.js';
import { keyRange, type KeyRange } from '../kv/index.js';
import { EventType, type HistoryBatch, type KeyValue } from '../kv/types.js';
import type { Logger } from './logger.js';

/** What the hub reads: the member's current store (it changes when a snapshot is installed). */
export interface WatchHistory {
  currentRevision(): number;
  /** etcd's compactMainRev: -1 until the first compaction. */
  compactRevision(): number;
  history(range: KeyRange | null, from: number, to: number, limits: { rows: number; bytes: number }): HistoryBatch;
  keyAt(key: Buffer, rev: number): KeyValue | undefined;
}

/** One history read: at most this many events or bytes (a revision is never split). */
export const HISTORY_BATCH = { rows: 1000, bytes: 512 * 1024 };
/** Events delivered per turn of the event loop before the hub yields to other work. */
const EVENTS_PER_TURN = 20_000;
/** etcd's default progress notification interval (--experimental-watch-progress-notify-interval). */
export const DEFAULT_PROGRESS_INTERVAL_MS = 10 * 60 * 1000;

export const ErrWatcherRangeEmpty = 'mvcc: watcher range is empty';
export const ErrWatcherDuplicateId = 'mvcc: duplicate watch ID provided on the WatchStream';

interface Watcher {
  readonly id: bigint;
  readonly session: Session;
  readonly range: KeyRange;
  nextRev: number;
  readonly noPut: boolean;
  readonly noDelete: boolean;
  readonly prevKv: boolean;
  readonly fragment: boolean;
  readonly progressNotify: boolean;
  /** Events went out since the last progress tick (no progress notification then). */
  sentSinceTick: boolean;
}

class Session implements WatchSession {
  readonly watchers = new Map<bigint, Watcher>();
  private nextAutoId = 0n;
  closed = false;

  constructor(
    private readonly hub: WatchHub,
    readonly sink: WatchSink,
  ) {}

  /** etcd's watchStream.Watch: 0 asks for an ID; a taken one is refused. */
  takeId(wanted: bigint): bigint | undefined {
    if (wanted !== 0n) return this.watchers.has(wanted) ? undefined : wanted;
    while (this.watchers.has(this.nextAutoId)) this.nextAutoId++;
    return this.nextAutoId++;
  }

  create(r: WatchCreate): void {
    this.hub.create(this, r);
  }

  cancel(watchId: bigint): void {
    this.hub.cancel(this, watchId);
  }

  progress(): void {
    this.hub.progress(this);
  }

  drained(): void {
    this.hub.schedule();
  }

  close(): void {
    this.hub.closeSession(this);
  }
}

function inRange(r: KeyRange, key: Buffer): boolean {
  return Buffer.compare(key, r.key) >= 0 && (r.end === null || Buffer.compare(key, r.end) < 0);
}

export interface WatchStats {
  streams: number;
  watchers: number;
  /** Watchers behind the store's current revision (catching up, or blocked by their client). */
  slowWatchers: number;
  /** Bytes written to watch streams and not yet sent, over all streams / the largest one. */
  pendingBytes: number;
  maxStreamPendingBytes: number;
  eventsSent: number;
  compactedCancels: number;
}

export class WatchHub {
  private readonly sessions = new Set<Session>();
  private scheduled = false;
  private readonly progressTimer: NodeJS.Timeout;
  private eventsSent = 0;
  private compactedCancels = 0;

  constructor(
    private readonly source: () => WatchHistory,
    private readonly log: Logger,
    progressIntervalMs = DEFAULT_PROGRESS_INTERVAL_MS,
  ) {
    this.progressTimer = setInterval(() => this.progressTick(), progressIntervalMs);
    this.progressTimer.unref();
  }

  open(sink: WatchSink): WatchSession {
    const s = new Session(this, sink);
    this.sessions.add(s);
    return s;
  }

  /** New revisions were applied: deliver them (soon, batched with whatever follows). */
  notify(): void {
    if (this.sessions.size > 0) this.schedule();
  }

  /** The store was replaced by a snapshot from the leader: watchers continue from its history. */
  storeReplaced(): void {
    const src = this.source();
    let watchers = 0;
    for (const s of this.sessions) watchers += s.watchers.size;
    if (watchers > 0) {
      this.log.info(
        { watchers, revision: src.currentRevision(), compactRevision: src.compactRevision() },
        "watchers resume from the installed snapshot's history",
      );
    }
    this.schedule();
  }

  stop(): void {
    clearInterval(this.progressTimer);
    for (const s of this.sessions) s.closed = true;
    this.sessions.clear();
  }

  stats(): WatchStats {
    const cur = this.source().currentRevision();
    const st: WatchStats = {
      streams: this.sessions.size,
      watchers: 0,
      slowWatchers: 0,
      pendingBytes: 0,
      maxStreamPendingBytes: 0,
      eventsSent: this.eventsSent,
      compactedCancels: this.compactedCancels,
    };
    for (const s of this.sessions) {
      const p = s.sink.pendingBytes();
      st.pendingBytes += p;
      st.maxStreamPendingBytes = Math.max(st.maxStreamPendingBytes, p);
      for (const w of s.watchers.values()) {
        st.watchers++;
        if (w.nextRev <= cur) st.slowWatchers++;
      }
    }
    return st;
  }

  // ---- session requests ------------------------------------------------------

  create(s: Session, r: WatchCreate): void {
    const cur = this.source().currentRevision();
    // etcd: an empty key is "\0", the smallest key.
    const range = keyRange(r.key.length === 0 ? Buffer.from([0]) : r.key, r.rangeEnd);
    if (range.end !== null && Buffer.compare(range.key, range.end) >= 0) {
      s.sink.send({ watchId: -1n, revision: cur, created: true, canceled: true, cancelReason: ErrWatcherRangeEmpty, events: [] }, false);
      return;
    }
    const id = s.takeId(r.watchId);
    if (id === undefined) {
      s.sink.send({ watchId: -1n, revision: cur, created: true, canceled: true, cancelReason: ErrWatcherDuplicateId, events: [] }, false);
      return;
    }
    const w: Watcher = {
      id,
      session: s,
      range,
      nextRev: r.startRevision > 0 ? r.startRevision : cur + 1,
      noPut: r.noPut,
      noDelete: r.noDelete,
      prevKv: r.prevKv,
      fragment: r.fragment,
      progressNotify: r.progressNotify,
      sentSinceTick: false,
    };
    s.watchers.set(id, w);
    // As etcd: "created" first, with the revision the stream is at; history follows.
    s.sink.send({ watchId: id, revision: cur, created: true, events: [] }, false);
    if (w.nextRev <= cur) this.schedule();
  }

  cancel(s: Session, id: bigint): void {
    if (!s.watchers.delete(id)) return;
    s.sink.send({ watchId: id, revision: this.source().currentRevision(), canceled: true, events: [] }, false);
  }

  /**
   * A progress request: one response for the whole stream (watch_id -1, as etcd
   * 3.4) whose revision every watch on it has delivered all events up to.
   */
  progress(s: Session): void {
    const cur = this.source().currentRevision();
    let rev = cur;
    for (const w of s.watchers.values()) rev = Math.min(rev, w.nextRev - 1);
    s.sink.send({ watchId: -1n, revision: Math.max(rev, 0), events: [] }, false);
  }

  closeSession(s: Session): void {
    s.closed = true;
    s.watchers.clear();
    this.sessions.delete(s);
  }

  // ---- delivery ----------------------------------------------------------------

  schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      try {
        this.pump();
      } catch (e) {
        this.log.error({ error: (e as Error).message }, 'watch delivery failed');
      }
    });
  }

  /**
   * Delivers history to every watcher behind the current revision whose stream has
   * room. Watchers at the same next revision share one read (the common case: all
   * of them in sync, right after an apply); a lone one reads only its key range.
   */
  private pump(): void {
    const src = this.source();
    const cur = src.currentRevision();
    const compacted = src.compactRevision();
    let budget = EVENTS_PER_TURN;
    for (;;) {
      const groups = new Map<number, Watcher[]>();
      for (const s of this.sessions) {
        if (!s.sink.writable()) continue;
        for (const w of s.watchers.values()) {
          if (w.nextRev > cur) continue;
          if (w.nextRev < compacted) {
            this.cancelCompacted(w, cur, compacted);
            continue;
          }
          const g = groups.get(w.nextRev);
          if (g) g.push(w);
          else groups.set(w.nextRev, [w]);
        }
      }
      if (groups.size === 0) return;
      for (const [from, ws] of groups) {
        const batch = src.history(ws.length === 1 ? ws[0].range : null, from, cur, HISTORY_BATCH);
        budget -= batch.events.length + 1;
        for (const w of ws) {
          if (w.session.closed || !w.session.sink.writable() || w.session.watchers.get(w.id) !== w) continue;
          this.deliver(src, w, batch);
        }
      }
      if (budget <= 0) {
        this.schedule();
        return;
      }
    }
  }

  private deliver(src: WatchHistory, w: Watcher, batch: HistoryBatch): void {
    const events: WatchEventOut[] = [];
    for (const e of batch.events) {
      if (e.kv.modRevision < w.nextRev || !inRange(w.range, e.kv.key)) continue;
      if (e.type === EventType.Put ? w.noPut : w.noDelete) continue;
      const out: WatchEventOut = { type: e.type, kv: e.kv };
      // prev_kv is the key as of the revision before the event (etcd); a first put has none.
      if (w.prevKv && !(e.type === EventType.Put && e.kv.version === 1)) {
        const prev = src.keyAt(e.kv.key, e.kv.modRevision - 1);
        if (prev) out.prevKv = prev;
      }
      events.push(out);
    }
    if (batch.through + 1 > w.nextRev) w.nextRev = batch.through + 1;
    if (events.length === 0) return;
    w.sentSinceTick = true;
    this.eventsSent += events.length;
    // One response per revision, as etcd sends a watcher in sync: some clients
    // (npm etcd3's election observer) read a response as one revision.
    let from = 0;
    for (let i = 1; i <= events.length; i++) {
      if (i < events.length && events[i].kv.modRevision === events[from].kv.modRevision) continue;
      const rev = events[from].kv.modRevision;
      w.session.sink.send({ watchId: w.id, revision: rev, events: events.slice(from, i) }, w.fragment);
      from = i;
    }
  }

  private cancelCompacted(w: Watcher, cur: number, compacted: number): void {
    w.session.watchers.delete(w.id);
    this.compactedCancels++;
    w.session.sink.send({ watchId: w.id, revision: cur, canceled: true, compactRevision: compacted, cancelReason: ErrCompacted.message, events: [] }, false);
  }

  /**
   * etcd's progress notification: a watch that asked for it and has had no events
   * for a whole interval gets an empty response at the current revision, if it is
   * in sync (a watch still catching up gets its events instead).
   */
  private progressTick(): void {
    const cur = this.source().currentRevision();
    for (const s of this.sessions) {
      for (const w of s.watchers.values()) {
        if (!w.progressNotify) continue;
        if (!w.sentSinceTick && w.nextRev === cur + 1 && s.sink.writable()) {
          s.sink.send({ watchId: w.id, revision: cur, events: [] }, false);
        }
        w.sentSinceTick = false;
      }
    }
  }
}
