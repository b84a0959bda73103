// Log replication, both ends. The leader's: appending its own entries, sending each
// follower what it lacks (entries, or a snapshot once they are compacted away) within
// its in-flight window, taking in the followers' answers, and moving the commit index.
// The follower's: taking in appends, heartbeats and snapshots, and answering them.
// raft.ts owns the roles and decides when to call these.
import { invariant } from './invariant.js';
import type { RaftKnobs } from './knobs.js';
import type { RaftLog } from './log.js';
import type { Outbox } from './outbox.js';
import { ProgressState, type Progress } from './progress.js';
import type { ProgressTracker } from './tracker.js';
import { MessageType, type Entry, type Message, type NodeId, type RaftConfig, type Snapshot } from './types.js';

/**
 * Marks an append that carries only a commit index to a follower known to hold every
 * entry sent to it: its acknowledgement would tell the leader nothing, so none is sent.
 * (A member that does not know the mark ignores it and acknowledges as before.)
 */
const COMMIT_ONLY = new TextEncoder().encode('commit');

function isCommitOnly(m: Message): boolean {
  const c = m.context;
  return m.entries.length === 0 && c !== undefined && c.length === COMMIT_ONLY.length && c.every((b, i) => b === COMMIT_ONLY[i]);
}

/** What replication reads of the protocol's state (raft.ts's Raft). */
export interface ReplicationHost {
  readonly id: NodeId;
  readonly cfg: RaftConfig;
  readonly knobs: RaftKnobs;
  readonly log: RaftLog;
  readonly trk: ProgressTracker;
  readonly outbox: Outbox;
  readonly term: number;
  readonly leadTransferee: NodeId;
  /** What a lagging follower is sent: the data of the last snapshot compacted to or applied. */
  readonly snapshotData: Uint8Array;
  msg(type: MessageType, to: NodeId): Message;
  /** The commit index moved (to an entry of this term). */
  committed(): void;
  /** A leader's snapshot replaced the log and the configuration. */
  snapshotRestored(): void;
}

export class Replication {
  // The host's fixed parts, held here: the core's hot path reads them at every message.
  private readonly id: NodeId;
  private readonly cfg: RaftConfig;
  private readonly knobs: RaftKnobs;
  private readonly log: RaftLog;
  private readonly trk: ProgressTracker;
  private readonly outbox: Outbox;

  constructor(private readonly r: ReplicationHost) {
    this.id = r.id;
    this.cfg = r.cfg;
    this.knobs = r.knobs;
    this.log = r.log;
    this.trk = r.trk;
    this.outbox = r.outbox;
  }

  /** Appends the leader's own entries, stamped with its term. */
  appendEntries(entries: Entry[]): void {
    let index = this.log.lastIndex();
    const stamped = entries.map((e) => ({ ...e, term: this.r.term, index: ++index }));
    this.log.append(stamped);
    // The leader's own match advances in advance(), once these are durable.
    const self = this.trk.progress.get(this.id);
    if (self) self.next = this.log.lastIndex() + 1;
  }

  handleAppendResponse(m: Message, pr: Progress): void {
    if (m.reject) {
      let hint = m.rejectHint;
      if (m.logTerm > 0) hint = this.log.findConflictByTerm(m.rejectHint, m.logTerm);
      if (pr.maybeDecrTo(m.index, hint)) {
        if (pr.state === ProgressState.Replicate) pr.becomeProbe();
        this.sendAppend(m.from, true);
      }
      return;
    }
    const wasPaused = pr.isPaused();
    if (!pr.maybeUpdate(m.index)) return;
    if (pr.state === ProgressState.Probe) pr.becomeReplicate();
    else if (pr.state === ProgressState.Snapshot && pr.match >= pr.pendingSnapshot) {
      pr.becomeProbe();
      pr.becomeReplicate();
    } else if (pr.state === ProgressState.Replicate) pr.inflights.freeLE(m.index);
    // A commit update still unsent to this follower, which now holds all it was sent, needs no ack.
    const open = this.outbox.openAppend(m.from);
    if (open && open.term === this.r.term && open.entries.length === 0 && pr.state === ProgressState.Replicate && pr.match === open.index)
      open.context = COMMIT_ONLY;

    if (this.maybeCommit()) this.bcastCommit();
    else if (wasPaused) this.sendAppend(m.from, true);
    // Fill the in-flight window.
    for (let i = 0; i < this.cfg.maxInflightMsgs && this.sendAppend(m.from, false); i++);
    if (m.from === this.r.leadTransferee && pr.match === this.log.lastIndex()) {
      this.outbox.send(this.r.msg(MessageType.TimeoutNow, m.from));
    }
  }

  maybeCommit(): boolean {
    const mci = this.trk.committed(this.knobs.plantedBug === 'learner-counts-toward-commit');
    if (mci <= this.log.committed) return false;
    // Only an entry of the current term is committed by counting (Raft §5.4.2).
    if (this.knobs.plantedBug !== 'commit-previous-term-by-counting' && this.log.term(mci) !== this.r.term) return false;
    this.log.commitTo(mci);
    this.r.committed();
    return true;
  }

  /**
   * Sends the next append (or a snapshot) to a follower; false if nothing was sent.
   * `newCommit`: it is sent because the commit index moved, so an empty append to a
   * follower in Replicate asks for no ack even if acks of earlier appends are still on
   * their way (those acks answer for the same entries; a lost one is made up by the
   * append a heartbeat response triggers, which is acknowledged).
   */
  sendAppend(to: NodeId, sendIfEmpty: boolean, newCommit = false): boolean {
    const pr = this.trk.progress.get(to);
    if (!pr || to === this.id) return false;
    // A paused follower still gets new entries and the commit folded into the append
    // waiting for it in the outbox: that adds no message and no slot in flight.
    const foldOnly = pr.isPaused();
    if (foldOnly && (pr.state !== ProgressState.Replicate || this.outbox.openAppend(to) === undefined)) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    const entries = this.log.slice(pr.next, this.log.lastIndex() + 1, this.cfg.maxSizePerMsg);
    if (prevTerm === undefined || entries === undefined) {
      // The follower needs what we compacted away: send a snapshot.
      if (foldOnly || !pr.recentActive) return false;
      const snapshot: Snapshot = { meta: this.log.snapshot, data: this.r.snapshotData };
      pr.becomeSnapshot(snapshot.meta.index);
      this.outbox.send({ ...this.r.msg(MessageType.Snap, to), snapshot });
      return true;
    }
    if (entries.length === 0 && !sendIfEmpty) return false;
    const m: Message = { ...this.r.msg(MessageType.App, to), index: prevIndex, logTerm: prevTerm, entries, commit: this.log.committed };
    if (entries.length === 0 && pr.state === ProgressState.Replicate && (pr.match === prevIndex || newCommit)) m.context = COMMIT_ONLY;
    const extended = this.outbox.foldAppend(m, this.cfg.maxSizePerMsg);
    if (extended === undefined) {
      if (foldOnly) return false;
      this.outbox.sendAppend(m);
    }
    pr.commitSent = Math.max(pr.commitSent, m.commit);
    pr.sentAppend(entries.length > 0 ? entries[entries.length - 1].index : undefined, extended ?? 0);
    return true;
  }

  bcastAppend(): void {
    for (const id of this.trk.progress.keys()) if (id !== this.id) this.sendAppend(id, true);
  }

  /**
   * The commit index moved: every follower hears it (without acking a bare commit
   * update, see sendAppend), but with lazyCommit a follower in Replicate that
   * forwarded no entry it was not yet told is committed is owed it (sendOwedCommits);
   * one probing or taking a snapshot is handled as without lazyCommit.
   */
  bcastCommit(): void {
    for (const [id, pr] of this.trk.progress) {
      if (id === this.id || (this.cfg.lazyCommit && pr.state === ProgressState.Replicate && pr.forwarded <= pr.commitSent)) continue;
      this.sendAppend(id, true, true);
    }
  }

  /** Whether some follower in Replicate has not been sent the commit index (lazyCommit). */
  hasOwedCommits(): boolean {
    // forEach, not for-of: the driver asks after every event, and an unoptimized
    // for-of over a Map allocates an entry and a result object per member.
    let owed = false;
    this.trk.progress.forEach((pr, id) => {
      if (id !== this.id && this.owesCommit(pr)) owed = true;
    });
    return owed;
  }

  /** Sends the commit index to every follower it is owed to (lazyCommit). */
  sendOwedCommits(): void {
    for (const [id, pr] of this.trk.progress) if (id !== this.id && this.owesCommit(pr)) this.sendAppend(id, true, true);
  }

  private owesCommit(pr: Progress): boolean {
    return pr.state === ProgressState.Replicate && !pr.isPaused() && pr.commitSent < this.log.committed;
  }

  bcastHeartbeat(context: Uint8Array | undefined): void {
    this.trk.progress.forEach((pr, id) => {
      if (id === this.id) return;
      // Never tell a follower to commit past what it is known to hold.
      const m = this.r.msg(MessageType.Heartbeat, id);
      m.commit = Math.min(pr.match, this.log.committed);
      m.context = context;
      pr.commitSent = Math.max(pr.commitSent, m.commit);
      this.outbox.send(m);
    });
  }

  // ---- the follower ------------------------------------------------------

  handleAppend(m: Message): void {
    const quiet = isCommitOnly(m);
    if (quiet) this.outbox.countUnacked();
    if (m.index < this.log.committed) {
      if (!quiet) this.outbox.sendAck({ ...this.r.msg(MessageType.AppResp, m.from), index: this.log.committed });
      return;
    }
    const lastNew = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries, this.knobs.plantedBug === 'skip-log-consistency-check');
    if (lastNew !== undefined) {
      if (!quiet) this.outbox.sendAck({ ...this.r.msg(MessageType.AppResp, m.from), index: lastNew });
      return;
    }
    // Fast backtracking: point the leader at the last entry that could match.
    const hint = this.log.findConflictByTerm(Math.min(m.index, this.log.lastIndex()), m.logTerm);
    this.outbox.send({
      ...this.r.msg(MessageType.AppResp, m.from),
      index: m.index,
      reject: true,
      rejectHint: hint,
      logTerm: this.log.term(hint) ?? 0,
    });
  }

  handleHeartbeat(m: Message): void {
    this.log.commitTo(Math.min(m.commit, this.log.lastIndex()));
    this.outbox.send({ ...this.r.msg(MessageType.HeartbeatResp, m.from), context: m.context });
  }

  handleSnapshot(m: Message): void {
    const s = m.snapshot;
    invariant(s !== undefined, 'snapshot message without a snapshot');
    this.outbox.sendAck({ ...this.r.msg(MessageType.AppResp, m.from), index: this.restore(s) ? this.log.lastIndex() : this.log.committed });
  }

  private restore(s: Snapshot): boolean {
    if (s.meta.index <= this.log.committed) return false;
    // A snapshot taken before this node was added does not list it; the entries
    // that follow it will.
    if (this.log.matchTerm(s.meta.index, s.meta.term)) {
      // We hold the snapshot's last entry: only the commit index moves.
      this.log.commitTo(s.meta.index);
      return false;
    }
    this.log.restore(s);
    this.trk.restoreConfig(s.meta.conf);
    this.r.snapshotRestored();
    return true;
  }
}
