// The Raft protocol. It is driven, never running: RawNode (rawNode.ts), which holds
// a Raft, hands it messages and ticks and turns what it produced into Readys. No
// I/O, no clock, no randomness but config.random. This file holds the state and
// steps each message through the roles (term checks, role changes, proposals, leader
// transfer, membership); the jobs it hands them to live beside it: elections.ts
// (campaigns and votes), replication.ts (appends and snapshots, both ends, and the
// commit index), readOnly.ts (the leader's read index), tracker.ts (the leader's view
// of the members); what a step produced for the next Ready waits in outbox.ts.
import { decodeConfChange, encodeConfChange } from './confChange.js';
import { Elections, isTransfer } from './elections.js';
import { invariant } from './invariant.js';
import type { RaftKnobs } from './knobs.js';
import { RaftLog } from './log.js';
import { ProgressState } from './progress.js';
import { Outbox } from './outbox.js';
import { LeaderReads } from './readOnly.js';
import { Replication } from './replication.js';
import { ProgressTracker } from './tracker.js';
import {
  EntryType,
  MessageType,
  NONE,
  RaftError,
  StateType,
  type ConfChange,
  type ConfState,
  type HardState,
  type Message,
  type NodeId,
  type PersistedState,
  type RaftConfig,
  type RaftStatus,
  type SoftState,
} from './types.js';

export type RaftOptions = RaftConfig;

/** A request made on this node (addressed to no one, carrying no term). */
export function localMessage(type: MessageType, from: NodeId): Message {
  return { type, from, to: NONE, term: 0, logTerm: 0, index: 0, entries: [], commit: 0, reject: false, rejectHint: 0 };
}

// What elections.ts, replication.ts and readOnly.ts use (their Host interfaces) is
// public: RawNode, not this, is the caller's interface (src/raft/index.ts exports no Raft).
export class Raft {
  readonly id: NodeId;
  readonly log: RaftLog;
  readonly outbox: Outbox;

  term = 0;
  vote: NodeId = NONE;
  state = StateType.Follower;
  lead: NodeId = NONE;

  readonly trk: ProgressTracker;
  private readonly repl: Replication;
  private readonly elections: Elections;

  private electionElapsed = 0;
  private heartbeatElapsed = 0;
  private randomizedElectionTimeout = 0;

  /** No membership change may be proposed until `applied` reaches this index. */
  private pendingConfIndex = 0;
  leadTransferee: NodeId = NONE;
  /** The leader removed itself: it keeps leading until every remaining voter holds its log. */
  private leaving = false;

  private readonly reads: LeaderReads;

  /** What a lagging follower is sent: the data of the last snapshot compacted to or applied. */
  snapshotData: Uint8Array = new Uint8Array(0);
  /** Configurations in force after each applied conf change, for snapshots taken below `applied`. */
  private confHistory: { index: number; conf: ConfState }[] = [];

  constructor(
    readonly cfg: RaftOptions,
    persisted: PersistedState,
    readonly knobs: RaftKnobs = {},
  ) {
    invariant(cfg.id !== NONE, 'node ID 0 is reserved');
    invariant(cfg.heartbeatTick > 0 && cfg.electionTick > cfg.heartbeatTick, 'electionTick must exceed heartbeatTick > 0');
    invariant(cfg.readOnly !== 'lease' || cfg.checkQuorum, "readOnly 'lease' needs checkQuorum");
    const hs = persisted.hardState;
    const applied = cfg.applied ?? persisted.snapshot.index;
    this.id = cfg.id;
    this.log = new RaftLog(persisted.snapshot, persisted.entries, hs.commit, Math.min(applied, hs.commit));
    this.outbox = new Outbox(cfg.id);
    this.trk = new ProgressTracker(persisted.snapshot.conf, cfg.maxInflightMsgs);
    this.repl = new Replication(this);
    this.elections = new Elections(this);
    this.reads = new LeaderReads(this, (ctx) => this.repl.bcastHeartbeat(ctx));
    // Conf changes the application already applied before the restart are in force.
    for (const e of persisted.entries) {
      if (e.index > this.log.applied) break;
      if (e.type === EntryType.ConfChange) this.applyConfChange(decodeConfChange(e.data), e.index);
    }
    this.term = hs.term;
    this.vote = hs.vote;
    this.becomeFollower(hs.term, NONE);
  }

  // ---- inputs -------------------------------------------------------------

  tick(): void {
    if (this.state === StateType.Leader) this.tickHeartbeat();
    else this.tickElection();
  }

  /** Proposes one membership change; only the leader accepts one (callers forward to it). */
  proposeConfChange(cc: ConfChange): void {
    if (this.state !== StateType.Leader) {
      throw new RaftError('NotLeader', `not leader (leader is ${this.lead === NONE ? 'unknown' : this.lead.toString(16)})`);
    }
    if (this.pendingConfIndex > this.log.applied) {
      throw new RaftError('ConfChangePending', `a membership change is pending until index ${this.pendingConfIndex} is applied (applied ${this.log.applied})`);
    }
    const why = this.trk.check(cc);
    if (why !== undefined) throw new RaftError('InvalidConfChange', why);
    this.step({ ...localMessage(MessageType.Prop, this.id), entries: [{ term: 0, index: 0, type: EntryType.ConfChange, data: encodeConfChange(cc) }] });
  }

  /** Asks the leader to hand leadership to `to` (a voter); a follower forwards the request. */
  transferLeader(to: NodeId): void {
    if (!this.trk.voters.has(to)) throw new RaftError('BadTransferee', `node ${to.toString(16)} is not a voter`);
    if (this.state !== StateType.Leader && this.lead === NONE) throw new RaftError('NotLeader', 'no leader to transfer from');
    // By convention the request names the transferee as its sender.
    this.step({ ...localMessage(MessageType.TransferLeader, this.id), from: to });
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
        this.outbox.send({ ...this.msg(MessageType.AppResp, m.from) });
      } else if (m.type === MessageType.PreVote) {
        this.outbox.send({ ...this.msg(MessageType.PreVoteResp, m.from), reject: true });
      } else if (m.type === MessageType.Vote) {
        // As the Raft paper's RequestVote reply: the refusal carries our term, so a
        // candidate stuck in an old term learns it (etcd's raft stays silent; without
        // pre-vote that can leave the only electable candidate forever behind).
        this.outbox.send({ ...this.msg(MessageType.VoteResp, m.from), reject: true });
      }
      return;
    }

    if ((m.type === MessageType.VoteResp || m.type === MessageType.PreVoteResp) && m.reject) this.elections.learnCommit(m);

    switch (m.type) {
      case MessageType.Hup:
        this.elections.hup(false);
        return;
      case MessageType.Vote:
      case MessageType.PreVote:
        this.elections.handleVoteRequest(m);
        return;
      case MessageType.PropReject:
        this.outbox.dropped.push({ entries: m.entries, reason: new TextDecoder().decode(m.context ?? new Uint8Array(0)) });
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

  /** After the caller's advance() recorded what is durable and applied. */
  afterAdvance(): void {
    if (this.state === StateType.Leader) {
      // The leader counts itself toward a commit only once its own write is durable.
      const self = this.trk.progress.get(this.id);
      if (self && self.maybeUpdate(this.log.stable) && this.repl.maybeCommit()) this.repl.bcastCommit();
    }
  }

  hardState(): HardState {
    return { term: this.term, vote: this.vote, commit: this.log.committed };
  }

  softState(): SoftState {
    return { lead: this.lead, state: this.state };
  }

  /** The configuration in force after `index` was applied (index <= applied). */
  confAt(index: number): ConfState {
    let conf: ConfState | undefined;
    for (const c of this.confHistory) if (c.index <= index) conf = c.conf;
    return conf ?? this.log.snapshot.conf;
  }

  /** A leader's snapshot replaced the log and the configuration. */
  snapshotRestored(): void {
    this.confHistory = [];
  }

  /** The log was compacted to `index`: configurations before it are not asked for again. */
  compacted(index: number): void {
    this.confHistory = this.confHistory.filter((c) => c.index > index);
  }

  status(): RaftStatus {
    const progress = new Map<NodeId, { match: number; next: number; state: ProgressState }>();
    if (this.state === StateType.Leader) {
      for (const [id, pr] of this.trk.progress) progress.set(id, { match: pr.match, next: pr.next, state: pr.state });
    }
    return {
      id: this.id,
      term: this.term,
      vote: this.vote,
      commit: this.log.committed,
      applied: this.log.applied,
      lead: this.lead,
      state: this.state,
      conf: this.trk.confState(),
      firstIndex: this.log.firstIndex(),
      lastIndex: this.log.lastIndex(),
      progress,
      leadTransferee: this.leadTransferee,
    };
  }

  // ---- roles --------------------------------------------------------------

  private becomeFollower(term: number, lead: NodeId): void {
    this.reset(term);
    this.state = StateType.Follower;
    this.lead = lead;
  }

  becomePreCandidate(): void {
    invariant(this.state !== StateType.Leader, 'leader cannot become pre-candidate');
    // Neither the term nor the vote changes: a pre-election disturbs no one.
    this.trk.resetVotes();
    this.state = StateType.PreCandidate;
    this.lead = NONE;
  }

  becomeCandidate(): void {
    invariant(this.state !== StateType.Leader, 'leader cannot become candidate');
    this.reset(this.term + 1);
    this.vote = this.id;
    this.state = StateType.Candidate;
  }

  becomeLeader(): void {
    invariant(this.state === StateType.Candidate, 'only a candidate can become leader');
    this.reset(this.term);
    this.state = StateType.Leader;
    this.lead = this.id;
    const self = this.trk.progress.get(this.id);
    if (self) {
      self.becomeReplicate();
      self.match = this.log.stable;
      self.next = this.log.lastIndex() + 1;
    }
    // No membership change until everything up to here is applied: a change
    // committed under the previous leader may still be unapplied on this one.
    this.pendingConfIndex = this.log.lastIndex();
    this.repl.appendEntries([{ term: 0, index: 0, type: EntryType.Normal, data: new Uint8Array(0) }]);
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
    this.trk.resetVotes();
    this.trk.resetProgress(this.log.lastIndex() + 1);
    const self = this.trk.progress.get(this.id);
    if (self) self.match = this.log.stable;
    this.pendingConfIndex = 0;
    this.leaving = false;
    this.reads.reset();
  }

  private resetRandomizedElectionTimeout(): void {
    const e = this.cfg.electionTick;
    this.randomizedElectionTimeout = e + Math.floor(this.cfg.random() * e);
  }

  promotable(): boolean {
    return this.trk.voters.has(this.id);
  }

  grantVote(from: NodeId): void {
    this.electionElapsed = 0;
    this.vote = from;
  }

  private tickElection(): void {
    this.electionElapsed++;
    const sole = this.trk.isSoleVoter(this.id);
    if (this.promotable() && (sole || this.electionElapsed >= this.randomizedElectionTimeout)) {
      this.electionElapsed = 0;
      this.elections.hup(false);
    }
  }

  private tickHeartbeat(): void {
    this.heartbeatElapsed++;
    this.electionElapsed++;
    if (this.electionElapsed >= this.cfg.electionTick) {
      this.electionElapsed = 0;
      if (this.cfg.checkQuorum && !this.trk.quorumActive(this.id)) {
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
      this.repl.bcastHeartbeat(this.reads.lastContext());
    }
  }

  /** Every voter holds our whole log and has been sent a commit covering it. */
  private remainingVotersCaughtUp(): boolean {
    for (const id of this.trk.voters) {
      const pr = this.trk.progress.get(id);
      if (!pr || pr.match < this.log.lastIndex() || this.log.committed < this.log.lastIndex()) return false;
    }
    return true;
  }

  // ---- leader -------------------------------------------------------------

  private stepLeader(m: Message): void {
    switch (m.type) {
      case MessageType.Beat:
        this.repl.bcastHeartbeat(undefined);
        return;
      case MessageType.Prop:
        this.leaderPropose(m);
        return;
      case MessageType.ReadIndex:
        this.reads.request(m);
        return;
      case MessageType.TransferLeader:
        this.leaderTransfer(m.from);
        return;
    }
    const pr = this.trk.progress.get(m.from);
    if (!pr) return;
    switch (m.type) {
      case MessageType.AppResp:
        pr.recentActive = true;
        this.repl.handleAppendResponse(m, pr);
        return;
      case MessageType.HeartbeatResp:
        pr.recentActive = true;
        pr.probeSent = false;
        if (pr.state === ProgressState.Replicate && pr.inflights.full()) pr.inflights.freeFirst();
        if (pr.match < this.log.lastIndex()) this.repl.sendAppend(m.from, true);
        if (m.context && m.context.length > 0) this.reads.ack(m.from, m.context);
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
    if (this.leaving || !this.trk.voters.has(this.id)) reason = 'this node is leaving the cluster';
    else if (this.leadTransferee !== NONE) reason = `leadership transfer to ${this.leadTransferee.toString(16)} in progress`;
    if (reason !== undefined) {
      if (m.to === NONE) throw new RaftError(this.leadTransferee !== NONE ? 'TransferInProgress' : 'ProposalDropped', reason);
      this.outbox.send({ ...this.msg(MessageType.PropReject, m.from), entries: m.entries, context: new TextEncoder().encode(reason) });
      return;
    }
    for (const e of m.entries) {
      if (e.type === EntryType.ConfChange) {
        // Forwarded conf changes are not accepted: a follower's caller could not be told why.
        invariant(m.from === this.id, 'conf change forwarded by a follower');
        this.pendingConfIndex = this.log.lastIndex() + m.entries.indexOf(e) + 1;
      }
    }
    this.repl.appendEntries(m.entries);
    if (m.from !== this.id) {
      const pr = this.trk.progress.get(m.from);
      if (pr) pr.forwarded = this.log.lastIndex();
    }
    this.repl.bcastAppend();
  }

  /** Whether some follower in Replicate has not been sent the commit index (lazyCommit). */
  hasOwedCommits(): boolean {
    return this.state === StateType.Leader && this.repl.hasOwedCommits();
  }

  /** Sends the commit index to every follower it is owed to (lazyCommit). */
  sendOwedCommits(): void {
    if (this.state === StateType.Leader) this.repl.sendOwedCommits();
  }

  /** The commit index moved: reads that waited for an entry of this term to commit go on. */
  committed(): void {
    this.reads.committed();
  }

  private leaderTransfer(transferee: NodeId): void {
    if (!this.trk.voters.has(transferee) || transferee === this.id) return;
    if (this.leadTransferee === transferee) return;
    this.leadTransferee = transferee;
    this.electionElapsed = 0;
    const pr = this.trk.progress.get(transferee);
    if (pr && pr.match === this.log.lastIndex()) this.outbox.send(this.msg(MessageType.TimeoutNow, transferee));
    else this.repl.sendAppend(transferee, true);
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
        this.repl.handleAppend(m);
        return;
      case MessageType.Heartbeat:
        this.becomeFollower(m.term, m.from);
        this.repl.handleHeartbeat(m);
        return;
      case MessageType.Snap:
        this.becomeFollower(m.term, m.from);
        this.repl.handleSnapshot(m);
        return;
      case myResp: {
        const result = this.elections.poll(m.from, !m.reject);
        if (result === 'won') {
          if (this.state === StateType.PreCandidate) this.elections.startElection(false, false);
          else {
            this.becomeLeader();
            this.repl.bcastAppend();
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
        this.outbox.send({ ...m, from: this.id, to: this.lead, term: 0 });
        return;
      case MessageType.App:
        this.electionElapsed = 0;
        this.lead = m.from;
        this.repl.handleAppend(m);
        return;
      case MessageType.Heartbeat:
        this.electionElapsed = 0;
        this.lead = m.from;
        this.repl.handleHeartbeat(m);
        return;
      case MessageType.Snap:
        this.electionElapsed = 0;
        this.lead = m.from;
        this.repl.handleSnapshot(m);
        return;
      case MessageType.TransferLeader:
        // Forwarded on to the leader; with none known the request lapses.
        if (this.lead !== NONE) this.outbox.send({ ...m, to: this.lead, term: 0 });
        return;
      case MessageType.TimeoutNow:
        // The leader asked us to take over: campaign at once, skipping the pre-vote.
        this.elections.hup(true);
        return;
      case MessageType.ReadIndex:
        if (this.lead === NONE) {
          if (m.to === NONE) throw new RaftError('NotLeader', 'no leader to serve a read index');
          return;
        }
        this.outbox.send({ ...m, to: this.lead, term: 0 });
        return;
      case MessageType.ReadIndexResp:
        this.outbox.readStates.push({ index: m.index, context: m.entries[0]?.data ?? new Uint8Array(0) });
        return;
    }
  }

  private dropProposal(m: Message, reason: string): void {
    // A local request (addressed to no one) fails at once; a forwarded one is sent back.
    if (m.to === NONE) throw new RaftError('ProposalDropped', `proposal dropped: ${reason}`);
    if (m.from === this.id) {
      this.outbox.dropped.push({ entries: m.entries, reason });
      return;
    }
    this.outbox.send({ ...this.msg(MessageType.PropReject, m.from), entries: m.entries, context: new TextEncoder().encode(reason) });
  }

  // ---- membership -----------------------------------------------------------

  /** A committed conf change, applied as the caller applies its entry. */
  applyConfChange(cc: ConfChange, index: number): void {
    if (!this.trk.applyConfChange(cc)) return;
    this.confHistory.push({ index, conf: this.trk.confState() });
    if (cc.type === 'update') return;
    if (this.state === StateType.Leader) {
      if (this.trk.updateProgress(cc, this.log.lastIndex() + 1)) {
        // Start probing the new member now rather than at the next heartbeat.
        this.repl.sendAppend(cc.nodeId, true);
      } else if (cc.type === 'remove' && cc.nodeId === this.leadTransferee) {
        this.leadTransferee = NONE;
      }
      if (!this.trk.voters.has(this.id)) {
        // The leader removed itself. Stepping down at once could strand the others:
        // if none of them knows the removal is committed, they still need this
        // node's vote. It leads on, without counting itself or taking proposals,
        // until every remaining voter holds its whole log (tickHeartbeat).
        this.leaving = true;
        this.repl.bcastAppend();
        return;
      }
      // A smaller quorum may commit more now.
      if (this.repl.maybeCommit()) this.repl.bcastCommit();
    }
  }

  // ---- helpers ------------------------------------------------------------

  msg(type: MessageType, to: NodeId): Message {
    return { type, from: this.id, to, term: this.term, logTerm: 0, index: 0, entries: [], commit: 0, reject: false, rejectHint: 0 };
  }
}
