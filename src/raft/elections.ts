// Elections (Raft §5.2), with pre-vote (thesis §9.6) and the leader transfer's
// campaign (§3.10): campaigning, counting votes, answering vote requests. raft.ts
// owns the roles and the election timer, and calls these from its step and tick.
import type { RaftLog } from './log.js';
import type { Outbox } from './outbox.js';
import type { VoteResult } from './quorum.js';
import type { ProgressTracker } from './tracker.js';
import { EntryType, MessageType, NONE, StateType, type Message, type NodeId, type RaftConfig } from './types.js';

const TRANSFER = new TextEncoder().encode('transfer');

export function isTransfer(ctx: Uint8Array | undefined): boolean {
  return ctx !== undefined && ctx.length === TRANSFER.length && ctx.every((b, i) => b === TRANSFER[i]);
}

function voteRespType(t: MessageType): MessageType {
  return t === MessageType.Vote ? MessageType.VoteResp : MessageType.PreVoteResp;
}

/** What elections use of the protocol's state and roles (raft.ts's Raft). */
export interface ElectionHost {
  readonly id: NodeId;
  readonly cfg: RaftConfig;
  readonly log: RaftLog;
  readonly trk: ProgressTracker;
  readonly outbox: Outbox;
  readonly term: number;
  readonly vote: NodeId;
  readonly lead: NodeId;
  readonly state: StateType;
  msg(type: MessageType, to: NodeId): Message;
  /** Whether this node is a voter (only a voter campaigns). */
  promotable(): boolean;
  becomePreCandidate(): void;
  becomeCandidate(): void;
  becomeLeader(): void;
  /** This node voted for `from` in this term: the election timer starts over. */
  grantVote(from: NodeId): void;
}

export class Elections {
  constructor(private readonly r: ElectionHost) {}

  hup(transfer: boolean): void {
    if (this.r.state === StateType.Leader || !this.r.promotable()) return;
    // Conf changes committed but not yet applied might change who may vote.
    for (const e of this.r.log.slice(this.r.log.applied + 1, this.r.log.committed + 1) ?? []) {
      if (e.type === EntryType.ConfChange) return;
    }
    if (this.r.cfg.preVote && !transfer) this.startElection(true, false);
    else this.startElection(false, transfer);
  }

  startElection(pre: boolean, transfer: boolean): void {
    let term: number;
    let type: MessageType;
    if (pre) {
      this.r.becomePreCandidate();
      type = MessageType.PreVote;
      term = this.r.term + 1;
    } else {
      this.r.becomeCandidate();
      type = MessageType.Vote;
      term = this.r.term;
    }
    if (this.poll(this.r.id, true) === 'won') {
      if (pre) this.startElection(false, transfer);
      else this.r.becomeLeader();
      return;
    }
    for (const id of this.r.trk.voters) {
      if (id === this.r.id) continue;
      this.r.outbox.send({
        ...this.r.msg(type, id),
        term,
        index: this.r.log.lastIndex(),
        logTerm: this.r.log.lastTerm(),
        context: transfer ? TRANSFER : undefined,
      });
    }
  }

  /**
   * A voter that refused us knows `m.commit` is committed, and our entry there has the
   * term it has there: by log matching our log up to it is the committed one, so it is
   * committed here too. Without this a remaining voter that missed the commit of a
   * member's removal could wait forever for the removed member's vote, which it refuses
   * because it holds a longer log (the leader sent an entry, then crashed before writing it).
   */
  learnCommit(m: Message): void {
    if (this.r.state === StateType.Leader || m.commit <= this.r.log.committed || m.logTerm === 0) return;
    if (m.commit <= this.r.log.lastIndex() && this.r.log.matchTerm(m.commit, m.logTerm)) this.r.log.commitTo(m.commit);
  }

  poll(from: NodeId, granted: boolean): VoteResult {
    return this.r.trk.recordVote(from, granted);
  }

  handleVoteRequest(m: Message): void {
    // We may vote for whoever we voted for already; for anyone if we have no vote
    // and no leader; and in a pre-vote for any future term.
    const canVote = this.r.vote === m.from || (this.r.vote === NONE && this.r.lead === NONE) || (m.type === MessageType.PreVote && m.term > this.r.term);
    const grant = canVote && this.r.log.isUpToDate(m.index, m.logTerm);
    // A pre-vote answer carries the term it was asked in, so the candidate can count it.
    const term = m.type === MessageType.PreVote ? m.term : this.r.term;
    const resp: Message = { ...this.r.msg(voteRespType(m.type), m.from), term, reject: !grant };
    if (!grant) {
      // A refusal tells the candidate our commit index and its term: see learnCommit.
      resp.commit = this.r.log.committed;
      resp.logTerm = this.r.log.term(this.r.log.committed) ?? 0;
    }
    this.r.outbox.send(resp);
    if (grant && m.type === MessageType.Vote) this.r.grantVote(m.from);
  }
}
