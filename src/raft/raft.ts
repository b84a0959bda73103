// The Raft state machine. It is driven, never running: the caller hands it
// messages and ticks, asks ready() for what to persist, send and apply, and
// calls advance() when done. No I/O, no clock, no randomness but config.random.
import { Config, decodeConfChange, encodeConfChange } from './confChange.js';
import { invariant } from './invariant.js';
import type { RaftKnobs } from './knobs.js';
import { RaftLog } from './log.js';
import { Progress, ProgressState } from './progress.js';
import { committedIndex, quorumSize, tallyVotes } from './quorum.js';
import { ReadOnlyQueue } from './readOnly.js';
import {
  EntryType,
  MessageType,
  NONE,
  RaftError,
  StateType,
  type ConfChange,
  type ConfState,
  type DroppedProposal,
  type Entry,
  type HardState,
  type Message,
  type NodeId,
  type PersistedState,
  type RaftConfig,
  type ReadState,
  type Ready,
  type Snapshot,
  type SnapshotMeta,
  type SoftState,
} from './types.js';

export type RaftOptions = RaftConfig;

export interface RaftStatus {
  id: NodeId;
  term: number;
  vote: NodeId;
  commit: number;
  applied: number;
  lead: NodeId;
  state: StateType;
  conf: ConfState;
  firstIndex: number;
  lastIndex: number;
  /** The leader's view of each member's replication (empty on non-leaders). */
  progress: Map<NodeId, { match: number; next: number; state: ProgressState }>;
  leadTransferee: NodeId;
}

const TRANSFER = new TextEncoder().encode('transfer');
/** Messages a leader may send before its own write is durable (thesis §10.2.1). */
const SEND_BEFORE_PERSIST = new Set([MessageType.App, MessageType.Heartbeat, MessageType.Snap, MessageType.TimeoutNow]);

function isTransfer(ctx: Uint8Array | undefined): boolean {
  return ctx !== undefined && ctx.length === TRANSFER.length && ctx.every((b, i) => b === TRANSFER[i]);
}

function voteRespType(t: MessageType): MessageType {
  return t === MessageType.Vote ? MessageType.VoteResp : MessageType.PreVoteResp;
}

export class Raft {
  readonly id: NodeId;
  private readonly cfg: RaftOptions;
  private readonly log: RaftLog;

  private term = 0;
  private vote: NodeId = NONE;
  private state = StateType.Follower;
  private lead: NodeId = NONE;

  private config: Config;
  /** Configurations in force after each applied conf change, for snapshots taken below `applied`. */
  private confHistory: { index: number; conf: ConfState }[] = [];
  private progress = new Map<NodeId, Progress>();
  private votes = new Map<NodeId, boolean>();

  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout = 0;

  /** No membership change may be proposed until `applied` reaches this index. */
  private pendingConfIndex = 0;
  private leadTransferee: NodeId = NONE;
  /** The leader removed itself: it keeps leading until every remaining voter holds its log. */
  private leaving = false;

  private readOnly = new ReadOnlyQueue();
  /** Read requests that arrived before the leader committed an entry of its term. */
  private pendingReadIndex: Message[] = [];

  private snapshotData: Uint8Array = new Uint8Array(0);

  // Output accumulated for the next ready().
  private msgs: Message[] = [];
  private readStates: ReadState[] = [];
  private dropped: DroppedProposal[] = [];
  private prevSoft: SoftState;
  private prevHard: HardState;
  private outstanding: Ready | undefined;

  constructor(
    config: RaftOptions,
    persisted: PersistedState,
    private readonly knobs: RaftKnobs = {},
  ) {
    invariant(config.id !== NONE, 'node ID 0 is reserved');
    invariant(config.heartbeatTick > 0 && config.electionTick > config.heartbeatTick, 'electionTick must exceed heartbeatTick > 0');
    invariant(config.readOnly !== 'lease' || config.checkQuorum, "readOnly 'lease' needs checkQuorum");
    this.id = config.id;
    this.cfg = config;
    const hs = persisted.hardState;
    const applied = config.applied ?? persisted.snapshot.index;
    this.log = new RaftLog(persisted.snapshot, persisted.entries, hs.commit, Math.min(applied, hs.commit));
    this.config = Config.from(persisted.snapshot.conf);
    // Conf changes the application already applied before the restart are in force.
    for (const e of persisted.entries) {
      if (e.index > this.log.applied) break;
      if (e.type === EntryType.ConfChange) this.applyConfChange(decodeConfChange(e.data), e.index);
    }
    this.term = hs.term;
    this.vote = hs.vote;
    this.becomeFollower(hs.term, NONE);
    this.prevHard = { term: hs.term, vote: hs.vote, commit: this.log.committed };
    this.prevSoft = { lead: this.lead, state: this.state };
  }

  // ---- inputs -------------------------------------------------------------

  tick(): void {
    if (this.state === StateType.Leader) this.tickHeartbeat();
    else this.tickElection();
  }

  /** Starts an election now (as a timeout would). */
  campaign(): void {
    this.step(this.localMsg(MessageType.Hup));
  }

  propose(data: Uint8Array): void {
    this.proposeEntries([{ term: 0, index: 0, type: EntryType.Normal, data }]);
  }

  /** Proposes one membership change; only the leader accepts one (callers forward to it). */
  proposeConfChange(cc: ConfChange): void {
    if (this.state !== StateType.Leader) {
      throw new RaftError('NotLeader', `not leader (leader is ${this.lead === NONE ? 'unknown' : this.lead.toString(16)})`);
    }
    if (this.pendingConfIndex > this.log.applied) {
      throw new RaftError('ConfChangePending', `a membership change is pending until index ${this.pendingConfIndex} is applied (applied ${this.log.applied})`);
    }
    const why = this.config.check(cc);
    if (why !== undefined) throw new RaftError('InvalidConfChange', why);
    this.proposeEntries([{ term: 0, index: 0, type: EntryType.ConfChange, data: encodeConfChange(cc) }]);
  }

  readIndex(context: Uint8Array): void {
    this.step({ ...this.localMsg(MessageType.ReadIndex), entries: [{ term: 0, index: 0, type: EntryType.Normal, data: context }] });
  }

  /** Asks the leader to hand leadership to `to` (a voter); a follower forwards the request. */
  transferLeader(to: NodeId): void {
    if (!this.config.voters.has(to)) throw new RaftError('BadTransferee', `node ${to.toString(16)} is not a voter`);
    if (this.state !== StateType.Leader && this.lead === NONE) throw new RaftError('NotLeader', 'no leader to transfer from');
    // By convention the request names the transferee as its sender.
    this.step({ ...this.localMsg(MessageType.TransferLeader), from: to });
  }

  reportUnreachable(id: NodeId): void {
    this.step({ ...this.localMsg(MessageType.Unreachable), from: id });
  }

  reportSnapshot(id: NodeId, ok: boolean): void {
    this.step({ ...this.localMsg(MessageType.SnapStatus), from: id, reject: !ok });
  }

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

  step(m: Message): void {
    if (m.term === 0) {
      // Local or forwarded requests carry no term.
    } else if (m.term > this.term) {
      if (m.type === MessageType.Vote || m.type === MessageType.PreVote) {
        // Check-quorum: a follower that heard from a leader within the election
        // timeout ignores campaigns, unless a leader transfer asked for it.
        const inLease = this.cfg.checkQuorum && this.lead !== NONE && this.electionElapsed < this.cfg.electionTick;
        if (inLease && !isTransfer(m.context)) return;
      }
      if (m.type === MessageType.PreVote) {
        // A pre-vote never changes our term.
      } else if (m.type === MessageType.PreVoteResp && !m.reject) {
        // The term is raised when the pre-election is won.
      } else if (m.type === MessageType.App || m.type === MessageType.Heartbeat || m.type === MessageType.Snap) {
        this.becomeFollower(m.term, m.from);
      } else {
        this.becomeFollower(m.term, NONE);
      }
    } else if (m.term < this.term) {
      if ((this.cfg.checkQuorum || this.cfg.preVote) && (m.type === MessageType.Heartbeat || m.type === MessageType.App)) {
        // A stale leader (e.g. after a partition) learns our term and steps down.
        this.send({ ...this.msg(MessageType.AppResp, m.from) });
      } else if (m.type === MessageType.PreVote) {
        this.send({ ...this.msg(MessageType.PreVoteResp, m.from), reject: true });
      } else if (m.type === MessageType.Vote) {
        // As the Raft paper's RequestVote reply: the refusal carries our term, so a
        // candidate stuck in an old term learns it (etcd's raft stays silent; without
        // pre-vote that can leave the only electable candidate forever behind).
        this.send({ ...this.msg(MessageType.VoteResp, m.from), reject: true });
      }
      return;
    }

    switch (m.type) {
      case MessageType.Hup:
        this.hup(false);
        return;
      case MessageType.Vote:
      case MessageType.PreVote:
        this.handleVoteRequest(m);
        return;
      case MessageType.PropReject:
        this.dropped.push({ entries: m.entries, reason: new TextDecoder().decode(m.context ?? new Uint8Array(0)) });
        return;
    }
    switch (this.state) {
      case StateType.Leader:
        this.stepLeader(m);
        break;
      case StateType.Candidate:
      case StateType.PreCandidate:
        this.stepCandidate(m);
        break;
      case StateType.Follower:
        this.stepFollower(m);
        break;
    }
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
    const termOrVoteChanged = hard.term !== this.prevHard.term || hard.vote !== this.prevHard.vote;
    const entries = this.log.unstableEntries();
    const messages: Message[] = [];
    const after: Message[] = [];
    for (const m of this.msgs) {
      // The leader's appends may leave before its own write is durable; anything that
      // promises persisted state (acks, votes) or follows a term change waits for it.
      const early =
        (!termOrVoteChanged && this.state === StateType.Leader && SEND_BEFORE_PERSIST.has(m.type)) ||
        (this.knobs.plantedBug === 'vote-not-persisted' && (m.type === MessageType.Vote || m.type === MessageType.VoteResp));
      (early ? messages : after).push(m);
    }
    const rd: Ready = {
      entries,
      snapshot: this.log.pendingSnapshot,
      messages,
      messagesAfterPersist: after,
      committedEntries: this.log.nextCommitted(),
      readStates: this.readStates,
      droppedProposals: this.dropped,
      mustSync: termOrVoteChanged || entries.length > 0 || this.log.pendingSnapshot !== undefined,
    };
    if (this.softChanged()) rd.softState = { lead: this.lead, state: this.state };
    if (this.hardChanged()) rd.hardState = hard;
    this.msgs = [];
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
    if (this.state === StateType.Leader) {
      // The leader counts itself toward a commit only once its own write is durable.
      const self = this.progress.get(this.id);
      if (self && self.maybeUpdate(this.log.stable) && this.maybeCommit()) this.bcastAppend();
    }
  }

  status(): RaftStatus {
    const progress = new Map<NodeId, { match: number; next: number; state: ProgressState }>();
    if (this.state === StateType.Leader) {
      for (const [id, pr] of this.progress) progress.set(id, { match: pr.match, next: pr.next, state: pr.state });
    }
    return {
      id: this.id,
      term: this.term,
      vote: this.vote,
      commit: this.log.committed,
      applied: this.log.applied,
      lead: this.lead,
      state: this.state,
      conf: this.config.toConfState(),
      firstIndex: this.log.firstIndex(),
      lastIndex: this.log.lastIndex(),
      progress,
      leadTransferee: this.leadTransferee,
    };
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

  /** Metadata for a snapshot of the application's state at `index` (term and conf in force). */
  snapshotMetaAt(index: number): SnapshotMeta | undefined {
    const term = this.log.term(index);
    if (term === undefined || index > this.log.applied) return undefined;
    return { index, term, conf: this.confAt(index) };
  }

  // ---- roles --------------------------------------------------------------

  private becomeFollower(term: number, lead: NodeId): void {
    this.reset(term);
    this.state = StateType.Follower;
    this.lead = lead;
  }

  private becomePreCandidate(): void {
    invariant(this.state !== StateType.Leader, 'leader cannot become pre-candidate');
    // Neither the term nor the vote changes: a pre-election disturbs no one.
    this.votes.clear();
    this.state = StateType.PreCandidate;
    this.lead = NONE;
  }

  private becomeCandidate(): void {
    invariant(this.state !== StateType.Leader, 'leader cannot become candidate');
    this.reset(this.term + 1);
    this.vote = this.id;
    this.state = StateType.Candidate;
  }

  private becomeLeader(): void {
    invariant(this.state === StateType.Candidate, 'only a candidate can become leader');
    this.reset(this.term);
    this.state = StateType.Leader;
    this.lead = this.id;
    const self = this.progress.get(this.id);
    if (self) {
      self.becomeReplicate();
      self.match = this.log.stable;
      self.next = this.log.lastIndex() + 1;
    }
    // No membership change until everything up to here is applied: a change
    // committed under the previous leader may still be unapplied on this one.
    this.pendingConfIndex = this.log.lastIndex();
    this.appendEntries([{ term: 0, index: 0, type: EntryType.Normal, data: new Uint8Array(0) }]);
  }

  private reset(term: number): void {
    if (this.term !== term) {
      invariant(term > this.term, `term going backwards ${this.term} -> ${term}`);
      this.term = term;
      this.vote = NONE;
    }
    this.lead = NONE;
    this.electionElapsed = 0;
    this.heartbeatElapsed = 0;
    this.resetRandomizedElectionTimeout();
    this.leadTransferee = NONE;
    this.votes.clear();
    this.progress.clear();
    const last = this.log.lastIndex();
    for (const id of this.config.voters) this.progress.set(id, new Progress(last + 1, this.cfg.maxInflightMsgs, false));
    for (const id of this.config.learners) this.progress.set(id, new Progress(last + 1, this.cfg.maxInflightMsgs, true));
    const self = this.progress.get(this.id);
    if (self) self.match = this.log.stable;
    this.pendingConfIndex = 0;
    this.leaving = false;
    this.readOnly.clear();
    this.pendingReadIndex = [];
  }

  private resetRandomizedElectionTimeout(): void {
    const e = this.cfg.electionTick;
    this.randomizedElectionTimeout = e + Math.floor(this.cfg.random() * e);
  }

  private promotable(): boolean {
    return this.config.voters.has(this.id);
  }

  private tickElection(): void {
    this.electionElapsed++;
    const sole = this.config.voters.size === 1 && this.promotable();
    if (this.promotable() && (sole || this.electionElapsed >= this.randomizedElectionTimeout)) {
      this.electionElapsed = 0;
      this.hup(false);
    }
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.cfg.electionTick) {
      this.electionElapsed = 0;
      if (this.cfg.checkQuorum && !this.quorumActive()) {
        this.becomeFollower(this.term, NONE);
        return;
      }
      // A transfer that did not finish within an election timeout is abandoned.
      this.leadTransferee = NONE;
    }
    if (this.heartbeatElapsed >= this.cfg.heartbeatTick) {
      this.heartbeatElapsed = 0;
      if (this.leaving && this.remainingVotersCaughtUp()) {
        // They have been told the commit by the last round; nothing keeps us now.
        this.becomeFollower(this.term, NONE);
        return;
      }
      this.bcastHeartbeat(this.readOnly.lastContext());
    }
  }

  /** Every voter holds our whole log and has been sent a commit covering it. */
  private remainingVotersCaughtUp(): boolean {
    for (const id of this.config.voters) {
      const pr = this.progress.get(id);
      if (!pr || pr.match < this.log.lastIndex() || this.log.committed < this.log.lastIndex()) return false;
    }
    return true;
  }

  /** Check-quorum: did a quorum of voters answer during the last election timeout? */
  private quorumActive(): boolean {
    let active = 0;
    for (const id of this.config.voters) {
      const pr = this.progress.get(id);
      if (id === this.id || pr?.recentActive) active++;
    }
    for (const pr of this.progress.values()) pr.recentActive = false;
    return active >= quorumSize(this.config.voters.size);
  }

  private hup(transfer: boolean): void {
    if (this.state === StateType.Leader || !this.promotable()) return;
    // Conf changes committed but not yet applied might change who may vote.
    for (const e of this.log.slice(this.log.applied + 1, this.log.committed + 1) ?? []) {
      if (e.type === EntryType.ConfChange) return;
    }
    if (this.cfg.preVote && !transfer) this.startElection(true, false);
    else this.startElection(false, transfer);
  }

  private startElection(pre: boolean, transfer: boolean): void {
    let term: number;
    let type: MessageType;
    if (pre) {
      this.becomePreCandidate();
      type = MessageType.PreVote;
      term = this.term + 1;
    } else {
      this.becomeCandidate();
      type = MessageType.Vote;
      term = this.term;
    }
    if (this.poll(this.id, true) === 'won') {
      if (pre) this.startElection(false, transfer);
      else this.becomeLeader();
      return;
    }
    for (const id of this.config.voters) {
      if (id === this.id) continue;
      this.send({
        ...this.msg(type, id),
        term,
        index: this.log.lastIndex(),
        logTerm: this.log.lastTerm(),
        context: transfer ? TRANSFER : undefined,
      });
    }
  }

  private poll(from: NodeId, granted: boolean): 'won' | 'lost' | 'pending' {
    if (!this.votes.has(from)) this.votes.set(from, granted);
    return tallyVotes(this.config.voters, this.votes);
  }

  private handleVoteRequest(m: Message): void {
    // We may vote for whoever we voted for already; for anyone if we have no vote
    // and no leader; and in a pre-vote for any future term.
    const canVote = this.vote === m.from || (this.vote === NONE && this.lead === NONE) || (m.type === MessageType.PreVote && m.term > this.term);
    const grant = canVote && this.log.isUpToDate(m.index, m.logTerm);
    // A pre-vote answer carries the term it was asked in, so the candidate can count it.
    const term = m.type === MessageType.PreVote ? m.term : this.term;
    this.send({ ...this.msg(voteRespType(m.type), m.from), term, reject: !grant });
    if (grant && m.type === MessageType.Vote) {
      this.electionElapsed = 0;
      this.vote = m.from;
    }
  }

  // ---- leader -------------------------------------------------------------

  private stepLeader(m: Message): void {
    switch (m.type) {
      case MessageType.Beat:
        this.bcastHeartbeat(undefined);
        return;
      case MessageType.Prop:
        this.leaderPropose(m);
        return;
      case MessageType.ReadIndex:
        this.leaderReadIndex(m);
        return;
      case MessageType.TransferLeader:
        this.leaderTransfer(m.from);
        return;
    }
    const pr = this.progress.get(m.from);
    if (!pr) return;
    switch (m.type) {
      case MessageType.AppResp:
        pr.recentActive = true;
        this.handleAppendResponse(m, pr);
        return;
      case MessageType.HeartbeatResp:
        pr.recentActive = true;
        pr.probeSent = false;
        if (pr.state === ProgressState.Replicate && pr.inflights.full()) pr.inflights.freeFirst();
        if (pr.match < this.log.lastIndex()) this.sendAppend(m.from, true);
        if (m.context && m.context.length > 0) this.handleReadAck(m.from, m.context);
        return;
      case MessageType.SnapStatus:
        if (pr.state !== ProgressState.Snapshot) return;
        if (m.reject) pr.pendingSnapshot = 0;
        pr.becomeProbe();
        // Wait for a heartbeat response before probing again.
        pr.probeSent = true;
        return;
      case MessageType.Unreachable:
        if (pr.state === ProgressState.Replicate) pr.becomeProbe();
        return;
    }
  }

  private leaderPropose(m: Message): void {
    invariant(m.entries.length > 0, 'empty proposal');
    let reason: string | undefined;
    if (this.leaving || !this.config.voters.has(this.id)) reason = 'this node is leaving the cluster';
    else if (this.leadTransferee !== NONE) reason = `leadership transfer to ${this.leadTransferee.toString(16)} in progress`;
    if (reason !== undefined) {
      if (m.to === NONE) throw new RaftError(this.leadTransferee !== NONE ? 'TransferInProgress' : 'ProposalDropped', reason);
      this.send({ ...this.msg(MessageType.PropReject, m.from), entries: m.entries, context: new TextEncoder().encode(reason) });
      return;
    }
    for (const e of m.entries) {
      if (e.type === EntryType.ConfChange) {
        // Forwarded conf changes are not accepted: a follower's caller could not be told why.
        invariant(m.from === this.id, 'conf change forwarded by a follower');
        this.pendingConfIndex = this.log.lastIndex() + m.entries.indexOf(e) + 1;
      }
    }
    this.appendEntries(m.entries);
    this.bcastAppend();
  }

  private appendEntries(entries: Entry[]): void {
    let index = this.log.lastIndex();
    const stamped = entries.map((e) => ({ ...e, term: this.term, index: ++index }));
    this.log.append(stamped);
    // The leader's own match advances in advance(), once these are durable.
    const self = this.progress.get(this.id);
    if (self) self.next = this.log.lastIndex() + 1;
  }

  private handleAppendResponse(m: Message, pr: Progress): void {
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

    if (this.maybeCommit()) this.bcastAppend();
    else if (wasPaused) this.sendAppend(m.from, true);
    // Fill the in-flight window.
    for (let i = 0; i < this.cfg.maxInflightMsgs && this.sendAppend(m.from, false); i++);
    if (m.from === this.leadTransferee && pr.match === this.log.lastIndex()) {
      this.send(this.msg(MessageType.TimeoutNow, m.from));
    }
  }

  private maybeCommit(): boolean {
    const voters = new Set(this.config.voters);
    if (this.knobs.plantedBug === 'learner-counts-toward-commit') for (const l of this.config.learners) voters.add(l);
    const mci = committedIndex(voters, (id) => this.progress.get(id)?.match ?? 0);
    if (mci <= this.log.committed) return false;
    // Only an entry of the current term is committed by counting (Raft §5.4.2).
    if (this.knobs.plantedBug !== 'commit-previous-term-by-counting' && this.log.term(mci) !== this.term) return false;
    this.log.commitTo(mci);
    if (this.pendingReadIndex.length > 0 && this.log.term(this.log.committed) === this.term) {
      const waiting = this.pendingReadIndex;
      this.pendingReadIndex = [];
      for (const r of waiting) this.leaderReadIndex(r);
    }
    return true;
  }

  /** Sends the next append (or a snapshot) to a follower; false if nothing was sent. */
  private sendAppend(to: NodeId, sendIfEmpty: boolean): boolean {
    const pr = this.progress.get(to);
    if (!pr || to === this.id || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = this.log.term(prevIndex);
    const entries = this.log.slice(pr.next, this.log.lastIndex() + 1, this.cfg.maxSizePerMsg);
    if (prevTerm === undefined || entries === undefined) {
      // The follower needs what we compacted away: send a snapshot.
      if (!pr.recentActive) return false;
      const snapshot: Snapshot = { meta: this.log.snapshot, data: this.snapshotData };
      pr.becomeSnapshot(snapshot.meta.index);
      this.send({ ...this.msg(MessageType.Snap, to), snapshot });
      return true;
    }
    if (entries.length === 0 && !sendIfEmpty) return false;
    this.send({ ...this.msg(MessageType.App, to), index: prevIndex, logTerm: prevTerm, entries, commit: this.log.committed });
    if (entries.length > 0) {
      const last = entries[entries.length - 1].index;
      if (pr.state === ProgressState.Replicate) {
        pr.next = last + 1;
        pr.inflights.add(last);
      } else if (pr.state === ProgressState.Probe) {
        pr.probeSent = true;
      }
    } else if (pr.state === ProgressState.Probe) {
      pr.probeSent = true;
    }
    return true;
  }

  private bcastAppend(): void {
    for (const id of this.progress.keys()) if (id !== this.id) this.sendAppend(id, true);
  }

  private bcastHeartbeat(context: Uint8Array | undefined): void {
    for (const [id, pr] of this.progress) {
      if (id === this.id) continue;
      // Never tell a follower to commit past what it is known to hold.
      this.send({ ...this.msg(MessageType.Heartbeat, id), commit: Math.min(pr.match, this.log.committed), context });
    }
  }

  private leaderReadIndex(m: Message): void {
    const context = m.entries[0]?.data ?? new Uint8Array(0);
    // Until an entry of this term commits, our commit index may be behind the
    // cluster's (even alone: a learner may have applied more before a restart).
    if (this.log.term(this.log.committed) !== this.term) {
      this.pendingReadIndex.push(m);
      return;
    }
    if (this.config.voters.size === 1 && this.config.voters.has(this.id)) {
      this.respondRead(m.from, this.log.committed, context);
      return;
    }
    if (this.cfg.readOnly === 'lease') {
      this.respondRead(m.from, this.log.committed, context);
      return;
    }
    this.readOnly.add(this.log.committed, context, m.from, this.id);
    this.bcastHeartbeat(context);
  }

  private handleReadAck(from: NodeId, context: Uint8Array): void {
    const acks = this.readOnly.ack(from, context);
    if (!acks) return;
    let n = 0;
    for (const id of this.config.voters) if (acks.has(id)) n++;
    if (n < quorumSize(this.config.voters.size)) return;
    for (const r of this.readOnly.release(context)) this.respondRead(r.from, r.index, r.context);
  }

  private respondRead(to: NodeId, index: number, context: Uint8Array): void {
    if (to === this.id || to === NONE) this.readStates.push({ index, context });
    else this.send({ ...this.msg(MessageType.ReadIndexResp, to), index, entries: [{ term: 0, index: 0, type: EntryType.Normal, data: context }] });
  }

  private leaderTransfer(transferee: NodeId): void {
    if (!this.config.voters.has(transferee) || transferee === this.id) return;
    if (this.leadTransferee === transferee) return;
    this.leadTransferee = transferee;
    this.electionElapsed = 0;
    const pr = this.progress.get(transferee);
    if (pr && pr.match === this.log.lastIndex()) this.send(this.msg(MessageType.TimeoutNow, transferee));
    else this.sendAppend(transferee, true);
  }

  // ---- candidate and follower --------------------------------------------

  private stepCandidate(m: Message): void {
    const myResp = this.state === StateType.PreCandidate ? MessageType.PreVoteResp : MessageType.VoteResp;
    switch (m.type) {
      case MessageType.Prop:
        this.dropProposal(m, 'no leader (an election is in progress)');
        return;
      case MessageType.App:
        this.becomeFollower(m.term, m.from);
        this.handleAppend(m);
        return;
      case MessageType.Heartbeat:
        this.becomeFollower(m.term, m.from);
        this.handleHeartbeat(m);
        return;
      case MessageType.Snap:
        this.becomeFollower(m.term, m.from);
        this.handleSnapshot(m);
        return;
      case myResp: {
        const result = this.poll(m.from, !m.reject);
        if (result === 'won') {
          if (this.state === StateType.PreCandidate) this.startElection(false, false);
          else {
            this.becomeLeader();
            this.bcastAppend();
          }
        } else if (result === 'lost') {
          this.becomeFollower(this.term, NONE);
        }
        return;
      }
      case MessageType.ReadIndex:
        if (m.to === NONE) throw new RaftError('NotLeader', 'no leader (an election is in progress)');
        return;
    }
  }

  private stepFollower(m: Message): void {
    switch (m.type) {
      case MessageType.Prop:
        if (this.lead === NONE) {
          this.dropProposal(m, 'no leader');
          return;
        }
        this.send({ ...m, from: this.id, to: this.lead, term: 0 });
        return;
      case MessageType.App:
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleAppend(m);
        return;
      case MessageType.Heartbeat:
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleHeartbeat(m);
        return;
      case MessageType.Snap:
        this.electionElapsed = 0;
        this.lead = m.from;
        this.handleSnapshot(m);
        return;
      case MessageType.TransferLeader:
        // Forwarded on to the leader; with none known the request lapses.
        if (this.lead !== NONE) this.send({ ...m, to: this.lead, term: 0 });
        return;
      case MessageType.TimeoutNow:
        // The leader asked us to take over: campaign at once, skipping the pre-vote.
        this.hup(true);
        return;
      case MessageType.ReadIndex:
        if (this.lead === NONE) {
          if (m.to === NONE) throw new RaftError('NotLeader', 'no leader to serve a read index');
          return;
        }
        this.send({ ...m, to: this.lead, term: 0 });
        return;
      case MessageType.ReadIndexResp:
        this.readStates.push({ index: m.index, context: m.entries[0]?.data ?? new Uint8Array(0) });
        return;
    }
  }

  private dropProposal(m: Message, reason: string): void {
    // A local request (addressed to no one) fails at once; a forwarded one is sent back.
    if (m.to === NONE) throw new RaftError('ProposalDropped', `proposal dropped: ${reason}`);
    if (m.from === this.id) {
      this.dropped.push({ entries: m.entries, reason });
      return;
    }
    this.send({ ...this.msg(MessageType.PropReject, m.from), entries: m.entries, context: new TextEncoder().encode(reason) });
  }

  private handleAppend(m: Message): void {
    if (m.index < this.log.committed) {
      this.send({ ...this.msg(MessageType.AppResp, m.from), index: this.log.committed });
      return;
    }
    const lastNew = this.log.maybeAppend(m.index, m.logTerm, m.commit, m.entries, this.knobs.plantedBug === 'skip-log-consistency-check');
    if (lastNew !== undefined) {
      this.send({ ...this.msg(MessageType.AppResp, m.from), index: lastNew });
      return;
    }
    // Fast backtracking: point the leader at the last entry that could match.
    const hint = this.log.findConflictByTerm(Math.min(m.index, this.log.lastIndex()), m.logTerm);
    this.send({
      ...this.msg(MessageType.AppResp, m.from),
      index: m.index,
      reject: true,
      rejectHint: hint,
      logTerm: this.log.term(hint) ?? 0,
    });
  }

  private handleHeartbeat(m: Message): void {
    this.log.commitTo(Math.min(m.commit, this.log.lastIndex()));
    this.send({ ...this.msg(MessageType.HeartbeatResp, m.from), context: m.context });
  }

  private handleSnapshot(m: Message): void {
    const s = m.snapshot;
    invariant(s !== undefined, 'snapshot message without a snapshot');
    if (this.restore(s)) this.send({ ...this.msg(MessageType.AppResp, m.from), index: this.log.lastIndex() });
    else this.send({ ...this.msg(MessageType.AppResp, m.from), index: this.log.committed });
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
    this.config = Config.from(s.meta.conf);
    this.confHistory = [];
    return true;
  }

  // ---- membership -----------------------------------------------------------

  private applyConfChange(cc: ConfChange, index: number): void {
    if (!this.config.apply(cc)) return;
    this.confHistory.push({ index, conf: this.config.toConfState() });
    if (cc.type === 'update') return;
    if (this.state === StateType.Leader) {
      if (cc.type === 'remove') {
        this.progress.delete(cc.nodeId);
        if (cc.nodeId === this.leadTransferee) this.leadTransferee = NONE;
      } else if (!this.progress.has(cc.nodeId)) {
        this.progress.set(cc.nodeId, new Progress(this.log.lastIndex() + 1, this.cfg.maxInflightMsgs, cc.type === 'addLearner'));
        // Start probing the new member now rather than at the next heartbeat.
        this.sendAppend(cc.nodeId, true);
      } else {
        this.progress.get(cc.nodeId)!.isLearner = this.config.learners.has(cc.nodeId);
      }
      if (!this.config.voters.has(this.id)) {
        // The leader removed itself. Stepping down at once could strand the others:
        // if none of them knows the removal is committed, they still need this
        // node's vote. It leads on, without counting itself or taking proposals,
        // until every remaining voter holds its whole log (tickHeartbeat).
        this.leaving = true;
        this.bcastAppend();
        return;
      }
      // A smaller quorum may commit more now.
      if (this.maybeCommit()) this.bcastAppend();
    }
  }

  private confAt(index: number): ConfState {
    let conf: ConfState | undefined;
    for (const c of this.confHistory) if (c.index <= index) conf = c.conf;
    return conf ?? this.log.snapshot.conf;
  }

  // ---- helpers ------------------------------------------------------------

  private proposeEntries(entries: Entry[]): void {
    this.step({ ...this.localMsg(MessageType.Prop), entries });
  }

  private localMsg(type: MessageType): Message {
    return { type, from: this.id, to: NONE, term: 0, logTerm: 0, index: 0, entries: [], commit: 0, reject: false, rejectHint: 0 };
  }

  private msg(type: MessageType, to: NodeId): Message {
    return { type, from: this.id, to, term: this.term, logTerm: 0, index: 0, entries: [], commit: 0, reject: false, rejectHint: 0 };
  }

  private send(m: Message): void {
    invariant(m.to !== this.id, `message ${m.type} to self`);
    this.msgs.push(m);
  }

  private hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  private hardChanged(): boolean {
    return this.term !== this.prevHard.term || this.vote !== this.prevHard.vote || this.log.committed !== this.prevHard.commit;
  }

  private softChanged(): boolean {
    return this.lead !== this.prevSoft.lead || this.state !== this.prevSoft.state;
  }
}
