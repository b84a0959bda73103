// The caller's side of the core, as etcd's rawnode.go: local requests go in as
// messages to step(); what stepping produced comes out as one Ready (what to
// persist, send and apply) and advance() records that the caller did it. At most
// one Ready is outstanding; it carries hard and soft state only when they changed.
// Also the log as the caller sees it: compaction and snapshot metadata.
// The protocol (raft.ts) extends this class: it supplies step(), its state, and
// what must follow an advance (conf changes applied, the leader's own ack).
import { decodeConfChange } from './confChange.js';
import { invariant } from './invariant.js';
import type { RaftKnobs } from './knobs.js';
import type { RaftLog } from './log.js';
import {
  EntryType,
  MessageType,
  NONE,
  StateType,
  type ConfChange,
  type ConfState,
  type DroppedProposal,
  type Entry,
  type HardState,
  type Message,
  type NodeId,
  type ReadState,
  type Ready,
  type Snapshot,
  type SnapshotMeta,
  type SoftState,
} from './types.js';

export interface TrafficCounts {
  /** Appends folded into one already in the outbox for the same follower. */
  appendsFolded: number;
  /** Append responses folded into one already in the outbox for the same leader. */
  acksFolded: number;
  /** Commit-only appends a follower took in without acknowledging. */
  commitOnly: number;
}

/** A message still in the outbox that later ones to the same peer are folded into. */
interface OpenSlot {
  m: Message | undefined;
  /** Bytes of entry data it carries. */
  bytes: number;
  /** Its entries array is its own (not the log's slice) and may grow. */
  owned: boolean;
  epoch: number;
}

function dropMessage(slot: OpenSlot): void {
  slot.m = undefined;
}

/** Messages a leader may send before its own write is durable (thesis §10.2.1). */
const SEND_BEFORE_PERSIST = new Set([MessageType.App, MessageType.Heartbeat, MessageType.Snap, MessageType.TimeoutNow]);

export abstract class RawNode {
  // Output accumulated for the next ready().
  private msgs: Message[] = [];
  /** The last append to each peer in msgs, which a later append continuing it is folded into. */
  private openAppends = new Map<NodeId, OpenSlot>();
  /** The last successful append response to each peer in msgs, which later ones raise. */
  private openAcks = new Map<NodeId, OpenSlot>();
  /**
   * Bumped by ready(): a slot holds a message of this outbox only if it carries this
   * epoch. Slots are reused rather than the maps cleared (clearing allocates a new table
   * at every Ready, and the garbage cost the core half its speed at one proposal per Ready).
   */
  private epoch = 0;
  /** What folding saved since takeTrafficCounts() last asked (for the simulator and benchmarks). */
  private traffic: TrafficCounts = { appendsFolded: 0, acksFolded: 0, commitOnly: 0 };
  protected readStates: ReadState[] = [];
  protected dropped: DroppedProposal[] = [];
  // What the last Ready reported (or the state at construction).
  private prevSoft: SoftState = { lead: NONE, state: StateType.Follower };
  private prevHard: HardState = { term: 0, vote: NONE, commit: 0 };
  private outstanding: Ready | undefined;
  /** What a lagging follower is sent: the data of the last snapshot compacted to or applied. */
  protected snapshotData: Uint8Array = new Uint8Array(0);
  /** Configurations in force after each applied conf change, for snapshots taken below `applied`. */
  protected confHistory: { index: number; conf: ConfState }[] = [];

  protected constructor(
    readonly id: NodeId,
    protected readonly log: RaftLog,
    protected readonly knobs: RaftKnobs,
    /**
     * Cap on the bytes of committed entries one Ready hands out (at least one entry;
     * etcd's MaxCommittedSizePerReady, which defaults to its MaxSizePerMsg as this
     * does): a member far behind applies in steps, and the driver's turns between
     * them answer its peers, so its leader keeps hearing from it.
     */
    private readonly maxCommittedBytes: number,
  ) {}

  abstract step(m: Message): void;
  protected abstract hardState(): HardState;
  protected abstract softState(): SoftState;
  /** A committed conf change, applied as the caller applies its entry. */
  protected abstract applyConfChange(cc: ConfChange, index: number): void;
  /** After advance() recorded what is durable and applied. */
  protected abstract afterAdvance(): void;

  /** The state now counts as reported (at construction, before any Ready). */
  protected markReported(): void {
    this.prevHard = this.hardState();
    this.prevSoft = this.softState();
  }

  // ---- inputs -------------------------------------------------------------

  /** Starts an election now (as a timeout would). */
  campaign(): void {
    this.step(this.localMsg(MessageType.Hup));
  }

  propose(data: Uint8Array): void {
    this.proposeEntries([{ term: 0, index: 0, type: EntryType.Normal, data }]);
  }

  readIndex(context: Uint8Array): void {
    this.step({ ...this.localMsg(MessageType.ReadIndex), entries: [{ term: 0, index: 0, type: EntryType.Normal, data: context }] });
  }

  reportUnreachable(id: NodeId): void {
    this.step({ ...this.localMsg(MessageType.Unreachable), from: id });
  }

  reportSnapshot(id: NodeId, ok: boolean): void {
    this.step({ ...this.localMsg(MessageType.SnapStatus), from: id, reject: !ok });
  }

  protected proposeEntries(entries: Entry[]): void {
    this.step({ ...this.localMsg(MessageType.Prop), entries });
  }

  protected localMsg(type: MessageType): Message {
    return { type, from: this.id, to: NONE, term: 0, logTerm: 0, index: 0, entries: [], commit: 0, reject: false, rejectHint: 0 };
  }

  protected send(m: Message): void {
    invariant(m.to !== this.id, `message ${m.type} to self`);
    this.msgs.push(m);
  }

  /**
   * Folds an append (leader) into the one already in the outbox for that peer when it
   * continues it in the same term: one message per peer per Ready carries every new
   * entry and the latest commit (two appends delivered back to back, as the network
   * might anyway). Entries are folded while the message stays within maxBytes.
   * Returns the index of the last entry the outbox's message carried before (0: none),
   * or undefined if `m` does not fold (send it with sendAppendMsg).
   */
  protected foldAppend(m: Message, maxBytes: number): number | undefined {
    const open = this.openAppends.get(m.to);
    const o = open?.epoch === this.epoch ? open.m : undefined;
    if (!open || !o || o.term !== m.term) return undefined;
    const last = o.index + o.entries.length;
    const lastTerm = o.entries.length > 0 ? o.entries[o.entries.length - 1].term : o.logTerm;
    if (m.index !== last || m.logTerm !== lastTerm) return undefined;
    let bytes = 0;
    for (const e of m.entries) bytes += e.data.length;
    if (o.entries.length > 0 && m.entries.length > 0 && open.bytes + bytes > maxBytes) return undefined;
    // Entries to acknowledge now, or an append that asks for an ack: a commit-only mark no longer applies.
    if (m.entries.length > 0 || m.context === undefined) delete o.context;
    if (m.entries.length > 0) {
      if (!open.owned) {
        // The first entries may be the log's own array slice: copy before growing it.
        o.entries = o.entries.slice();
        open.owned = true;
      }
      for (const e of m.entries) o.entries.push(e);
      open.bytes += bytes;
    }
    o.commit = Math.max(o.commit, m.commit);
    this.traffic.appendsFolded++;
    return last > o.index ? last : 0;
  }

  /** Sends an append (leader) that later ones may be folded into until the next ready(). */
  protected sendAppendMsg(m: Message): void {
    invariant(m.type === MessageType.App, 'sendAppendMsg takes appends');
    let bytes = 0;
    for (const e of m.entries) bytes += e.data.length;
    this.send(m);
    const slot = this.openAppends.get(m.to);
    if (!slot) {
      this.openAppends.set(m.to, { m, bytes, owned: false, epoch: this.epoch });
      return;
    }
    slot.m = m;
    slot.bytes = bytes;
    slot.owned = false;
    slot.epoch = this.epoch;
  }

  /** The append to `to` still in the outbox that later ones would be folded into. */
  protected openAppend(to: NodeId): Message | undefined {
    const open = this.openAppends.get(to);
    return open?.epoch === this.epoch ? open.m : undefined;
  }

  /**
   * Sends a successful append response (follower). One already in the outbox to that
   * peer in this term is raised to the higher index instead: one ack per Ready. It
   * leaves after this Ready's write, which holds every entry either acknowledges, and
   * within a term the leader's log only grows, so the higher index is still held.
   */
  protected sendAck(m: Message): void {
    invariant(m.type === MessageType.AppResp && !m.reject, 'sendAck takes successful append responses');
    const slot = this.openAcks.get(m.to);
    const open = slot?.epoch === this.epoch ? slot.m : undefined;
    if (open && open.term === m.term) {
      open.index = Math.max(open.index, m.index);
      this.traffic.acksFolded++;
      return;
    }
    this.send(m);
    if (!slot) {
      this.openAcks.set(m.to, { m, bytes: 0, owned: false, epoch: this.epoch });
      return;
    }
    slot.m = m;
    slot.epoch = this.epoch;
  }

  /** A commit-only append was answered with no ack. */
  protected countUnacked(): void {
    this.traffic.commitOnly++;
  }

  /** Counts of messages saved (appends and acks folded, commit updates not acknowledged) since the last call. */
  takeTrafficCounts(): TrafficCounts {
    const t = this.traffic;
    this.traffic = { appendsFolded: 0, acksFolded: 0, commitOnly: 0 };
    return t;
  }

  // ---- outputs ------------------------------------------------------------

  hasReady(): boolean {
    if (this.outstanding) return false;
    return (
      this.msgs.length > 0 ||
      this.readStates.length > 0 ||
      this.dropped.length > 0 ||
      this.log.pendingSnapshot !== undefined ||
      this.log.stable < this.log.lastIndex() ||
      this.log.committed > this.log.applying ||
      this.softChanged() ||
      this.hardChanged()
    );
  }

  ready(): Ready {
    invariant(this.outstanding === undefined, 'ready() called again before advance()');
    const hard = this.hardState();
    const soft = this.softState();
    const termOrVoteChanged = hard.term !== this.prevHard.term || hard.vote !== this.prevHard.vote;
    const entries = this.log.unstableEntries();
    const messages: Message[] = [];
    const after: Message[] = [];
    for (const m of this.msgs) {
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
      readStates: this.readStates,
      droppedProposals: this.dropped,
      mustSync: termOrVoteChanged || entries.length > 0 || this.log.pendingSnapshot !== undefined,
    };
    if (this.softChanged()) rd.softState = soft;
    if (this.hardChanged()) rd.hardState = hard;
    this.msgs = [];
    this.epoch++;
    this.openAppends.forEach(dropMessage);
    this.openAcks.forEach(dropMessage);
    this.readStates = [];
    this.dropped = [];
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
      this.snapshotData = rd.snapshot.data;
      this.log.appliedTo(rd.snapshot.meta.index);
    }
    this.log.stableTo(rd.entries);
    for (const e of rd.committedEntries) {
      this.log.appliedTo(e.index);
      if (e.type === EntryType.ConfChange) this.applyConfChange(decodeConfChange(e.data), e.index);
    }
    this.afterAdvance();
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
      this.snapshotData = data;
      return;
    }
    if (index < this.log.snapshot.index) return;
    invariant(index <= this.log.applied, `snapshot at ${index} beyond applied ${this.log.applied}`);
    const term = this.log.term(index);
    invariant(term !== undefined, `no term for snapshot index ${index}`);
    this.log.compact({ index, term, conf: this.confAt(index) });
    this.snapshotData = data;
    this.confHistory = this.confHistory.filter((c) => c.index > index);
  }

  /** Metadata for a snapshot of the application's state at `index` (term and conf in force). */
  snapshotMetaAt(index: number): SnapshotMeta | undefined {
    const term = this.log.term(index);
    if (term === undefined || index > this.log.applied) return undefined;
    return { index, term, conf: this.confAt(index) };
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

  private confAt(index: number): ConfState {
    let conf: ConfState | undefined;
    for (const c of this.confHistory) if (c.index <= index) conf = c.conf;
    return conf ?? this.log.snapshot.conf;
  }

  private hardChanged(): boolean {
    const hard = this.hardState();
    return hard.term !== this.prevHard.term || hard.vote !== this.prevHard.vote || hard.commit !== this.prevHard.commit;
  }

  private softChanged(): boolean {
    const soft = this.softState();
    return soft.lead !== this.prevSoft.lead || soft.state !== this.prevSoft.state;
  }
}
