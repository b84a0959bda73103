// The caller's side of the core, as etcd's rawnode.go: a RawNode holds the protocol
// (raft.ts's Raft) and is what the member, the simulator and the tests drive. Local
// requests go in as messages to step(); what stepping produced comes out as one Ready
// (what to persist, send and apply) and advance() records that the caller did it. At
// most one Ready is outstanding; it carries hard and soft state only when they
// changed. Also the log as the caller sees it: compaction and snapshot metadata.
import { decodeConfChange } from './confChange.js';
import { invariant } from './invariant.js';
import type { RaftKnobs } from './knobs.js';
import type { RaftLog } from './log.js';
import type { Outbox, TrafficCounts } from './outbox.js';
import { localMessage, Raft } from './raft.js';
import {
  EntryType,
  MessageType,
  StateType,
  type ConfChange,
  type Entry,
  type HardState,
  type Message,
  type NodeId,
  type PersistedState,
  type RaftConfig,
  type RaftStatus,
  type Ready,
  type Snapshot,
  type SnapshotMeta,
  type SoftState,
} from './types.js';

export type { TrafficCounts } from './outbox.js';

/** Messages a leader may send before its own write is durable (thesis §10.2.1). */
const SEND_BEFORE_PERSIST = new Set([MessageType.App, MessageType.Heartbeat, MessageType.Snap, MessageType.TimeoutNow]);

export class RawNode {
  readonly id: NodeId;
  private readonly raft: Raft;
  // The protocol's log and outbox, held here too: ready() and hasReady() read them at every turn.
  private readonly log: RaftLog;
  private readonly outbox: Outbox;
  private readonly knobs: RaftKnobs;
  /**
   * Cap on the bytes of committed entries one Ready hands out (at least one entry;
   * etcd's MaxCommittedSizePerReady, which defaults to its MaxSizePerMsg as this
   * does): a member far behind applies in steps, and the driver's turns between
   * them answer its peers, so its leader keeps hearing from it.
   */
  private readonly maxCommittedBytes: number;
  // What the last Ready reported (or the state at construction).
  private prevSoft: SoftState;
  private prevHard: HardState;
  private outstanding: Ready | undefined;

  constructor(config: RaftConfig, persisted: PersistedState, knobs: RaftKnobs = {}) {
    this.raft = new Raft(config, persisted, knobs);
    this.id = config.id;
    this.log = this.raft.log;
    this.outbox = this.raft.outbox;
    this.knobs = knobs;
    this.maxCommittedBytes = config.maxSizePerMsg;
    // The state at construction counts as reported.
    this.prevHard = this.raft.hardState();
    this.prevSoft = this.raft.softState();
  }

  // ---- inputs -------------------------------------------------------------

  step(m: Message): void {
    this.raft.step(m);
  }

  tick(): void {
    this.raft.tick();
  }

  /** Starts an election now (as a timeout would). */
  campaign(): void {
    this.raft.step(localMessage(MessageType.Hup, this.id));
  }

  propose(data: Uint8Array): void {
    this.raft.step({ ...localMessage(MessageType.Prop, this.id), entries: [{ term: 0, index: 0, type: EntryType.Normal, data }] });
  }

  /** Proposes one membership change; only the leader accepts one (callers forward to it). */
  proposeConfChange(cc: ConfChange): void {
    this.raft.proposeConfChange(cc);
  }

  readIndex(context: Uint8Array): void {
    this.raft.step({ ...localMessage(MessageType.ReadIndex, this.id), entries: [{ term: 0, index: 0, type: EntryType.Normal, data: context }] });
  }

  /** Asks the leader to hand leadership to `to` (a voter); a follower forwards the request. */
  transferLeader(to: NodeId): void {
    this.raft.transferLeader(to);
  }

  reportUnreachable(id: NodeId): void {
    this.raft.step({ ...localMessage(MessageType.Unreachable, this.id), from: id });
  }

  reportSnapshot(id: NodeId, ok: boolean): void {
    this.raft.step({ ...localMessage(MessageType.SnapStatus, this.id), from: id, reject: !ok });
  }

  /** Sends the commit index to every follower it is owed to (lazyCommit). */
  sendOwedCommits(): void {
    this.raft.sendOwedCommits();
  }

  // ---- state ----------------------------------------------------------------

  status(): RaftStatus {
    return this.raft.status();
  }

  /** The current term, as status().term without building the whole status (every response header carries it). */
  currentTerm(): number {
    return this.raft.term;
  }

  /** Whether `id` is a learner in the configuration in force. */
  isLearner(id: NodeId): boolean {
    return this.raft.trk.learners.has(id);
  }

  /** A leader whose commit index some follower in Replicate has not been sent (lazyCommit). */
  hasOwedCommits(): boolean {
    return this.raft.hasOwedCommits();
  }

  /** Counts of messages saved (appends and acks folded, commit updates not acknowledged) since the last call. */
  takeTrafficCounts(): TrafficCounts {
    return this.outbox.takeTrafficCounts();
  }

  // ---- outputs ------------------------------------------------------------

  hasReady(): boolean {
    if (this.outstanding) return false;
    return (
      !this.outbox.isEmpty() ||
      this.log.pendingSnapshot !== undefined ||
      this.log.stable < this.log.lastIndex() ||
      this.log.committed > this.log.applying ||
      this.softChanged() ||
      this.hardChanged()
    );
  }

  ready(): Ready {
    invariant(this.outstanding === undefined, 'ready() called again before advance()');
    const hard = this.raft.hardState();
    const soft = this.raft.softState();
    const termOrVoteChanged = hard.term !== this.prevHard.term || hard.vote !== this.prevHard.vote;
    const entries = this.log.unstableEntries();
    const messages: Message[] = [];
    const after: Message[] = [];
    for (const m of this.outbox.msgs) {
      // The leader's appends may leave before its own write is durable; anything that
      // promises persisted state (acks, votes) or follows a term change waits for it.
      const early =
        (!termOrVoteChanged && soft.state === StateType.Leader && SEND_BEFORE_PERSIST.has(m.type)) ||
        (this.knobs.plantedBug === 'vote-not-persisted' && (m.type === MessageType.Vote || m.type === MessageType.VoteResp));
      (early ? messages : after).push(m);
    }
    const rd: Ready = {
      entries,
      snapshot: this.log.pendingSnapshot,
      messages,
      messagesAfterPersist: after,
      committedEntries: this.log.nextCommitted(this.maxCommittedBytes),
      readStates: this.outbox.readStates,
      droppedProposals: this.outbox.dropped,
      mustSync: termOrVoteChanged || entries.length > 0 || this.log.pendingSnapshot !== undefined,
    };
    if (this.softChanged()) rd.softState = soft;
    if (this.hardChanged()) rd.hardState = hard;
    this.outbox.clear();
    if (rd.committedEntries.length > 0) this.log.applying = rd.committedEntries[rd.committedEntries.length - 1].index;
    this.outstanding = rd;
    return rd;
  }

  advance(rd: Ready): void {
    invariant(rd === this.outstanding, 'advance() with a Ready that is not the outstanding one');
    this.outstanding = undefined;
    if (rd.softState) this.prevSoft = rd.softState;
    if (rd.hardState) this.prevHard = rd.hardState;
    if (rd.snapshot) {
      if (this.log.pendingSnapshot === rd.snapshot) this.log.pendingSnapshot = undefined;
      this.raft.snapshotData = rd.snapshot.data;
      this.log.appliedTo(rd.snapshot.meta.index);
    }
    this.log.stableTo(rd.entries);
    for (const e of rd.committedEntries) {
      this.log.appliedTo(e.index);
      if (e.type === EntryType.ConfChange) this.raft.applyConfChange(decodeConfChange(e.data), e.index);
    }
    this.raft.afterAdvance();
  }

  // ---- the log ------------------------------------------------------------

  /**
   * Records that the application holds a snapshot of its state at `index`
   * (<= applied), and drops the log up to it. `data` is what a lagging follower
   * will be sent.
   */
  compact(index: number, data: Uint8Array): void {
    if (index === this.log.snapshot.index) {
      // After a restart the core knows the snapshot's metadata but not its data.
      this.raft.snapshotData = data;
      return;
    }
    if (index < this.log.snapshot.index) return;
    invariant(index <= this.log.applied, `snapshot at ${index} beyond applied ${this.log.applied}`);
    const term = this.log.term(index);
    invariant(term !== undefined, `no term for snapshot index ${index}`);
    this.log.compact({ index, term, conf: this.raft.confAt(index) });
    this.raft.snapshotData = data;
    this.raft.compacted(index);
  }

  /** Metadata for a snapshot of the application's state at `index` (term and conf in force). */
  snapshotMetaAt(index: number): SnapshotMeta | undefined {
    const term = this.log.term(index);
    if (term === undefined || index > this.log.applied) return undefined;
    return { index, term, conf: this.raft.confAt(index) };
  }

  termAt(index: number): number | undefined {
    return this.log.term(index);
  }

  /** Entries in [lo, hi) still held in memory (undefined if lo was compacted). */
  entries(lo: number, hi: number): Entry[] | undefined {
    return this.log.slice(lo, hi);
  }

  snapshotMeta(): SnapshotMeta {
    return this.log.snapshot;
  }

  /** A snapshot from the leader that is accepted and not yet persisted (advance() clears it). */
  pendingSnapshot(): Snapshot | undefined {
    return this.log.pendingSnapshot;
  }

  private hardChanged(): boolean {
    const hard = this.raft.hardState();
    return hard.term !== this.prevHard.term || hard.vote !== this.prevHard.vote || hard.commit !== this.prevHard.commit;
  }

  private softChanged(): boolean {
    const soft = this.raft.softState();
    return soft.lead !== this.prevSoft.lead || soft.state !== this.prevSoft.state;
  }
}
