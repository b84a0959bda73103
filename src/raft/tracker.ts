// The progress tracker, as etcd's tracker/: the configuration in force (voters and
// learners), the leader's Progress for each member, and the votes of an election.
// Quorum questions (what is committed, who won, is a quorum active) are answered
// here with quorum.ts over the voters only; learners never count. It sends nothing
// and holds no term: raft.ts decides when to reset it and acts on its answers.
import { Config } from './confChange.js';
import { Progress } from './progress.js';
import { committedIndex, isQuorum, tallyVotes, type VoteResult } from './quorum.js';
import type { ConfChange, ConfState, NodeId } from './types.js';

export class ProgressTracker {
  private conf: Config;
  /** One entry per member: voters then learners at a reset, members added since at the end (the order appends go out). */
  private readonly prs = new Map<NodeId, Progress>();
  private readonly votes = new Map<NodeId, boolean>();

  constructor(
    conf: ConfState,
    private readonly maxInflight: number,
  ) {
    this.conf = Config.from(conf);
  }

  get voters(): ReadonlySet<NodeId> {
    return this.conf.voters;
  }

  get learners(): ReadonlySet<NodeId> {
    return this.conf.learners;
  }

  get progress(): ReadonlyMap<NodeId, Progress> {
    return this.prs;
  }

  confState(): ConfState {
    return this.conf.toConfState();
  }

  /** Why `cc` cannot apply to the configuration in force, or undefined if it can. */
  check(cc: ConfChange): string | undefined {
    return this.conf.check(cc);
  }

  /** `id` is the only voter. */
  isSoleVoter(id: NodeId): boolean {
    return this.conf.voters.size === 1 && this.conf.voters.has(id);
  }

  /** Replaces the configuration (from a snapshot); the progress map is left as it is. */
  restoreConfig(conf: ConfState): void {
    this.conf = Config.from(conf);
  }

  /** Applies a committed change to the configuration; false if it did not apply. */
  applyConfChange(cc: ConfChange): boolean {
    return this.conf.apply(cc);
  }

  /**
   * On the leader, after `cc` applied: the member's Progress follows the configuration.
   * True if a new member got a Progress (starting at `next`) and should be probed.
   */
  updateProgress(cc: ConfChange, next: number): boolean {
    if (cc.type === 'remove') {
      this.prs.delete(cc.nodeId);
      return false;
    }
    const pr = this.prs.get(cc.nodeId);
    if (pr) {
      pr.isLearner = this.conf.learners.has(cc.nodeId);
      return false;
    }
    this.prs.set(cc.nodeId, new Progress(next, this.maxInflight, cc.type === 'addLearner'));
    return true;
  }

  /** A fresh Progress for every member, expecting `next` next. */
  resetProgress(next: number): void {
    this.prs.clear();
    for (const id of this.conf.voters) this.prs.set(id, new Progress(next, this.maxInflight, false));
    for (const id of this.conf.learners) this.prs.set(id, new Progress(next, this.maxInflight, true));
  }

  /**
   * The highest index a quorum of voters has matched. `countLearners` is the planted
   * bug 'learner-counts-toward-commit' only.
   */
  committed(countLearners = false): number {
    const voters = new Set(this.conf.voters);
    if (countLearners) for (const l of this.conf.learners) voters.add(l);
    return committedIndex(voters, (id) => this.prs.get(id)?.match ?? 0);
  }

  /** Check-quorum: did a quorum of voters (`self` counts) answer since the last call? Starts a new round. */
  quorumActive(self: NodeId): boolean {
    const active = isQuorum(this.conf.voters, (id) => id === self || this.prs.get(id)?.recentActive === true);
    for (const pr of this.prs.values()) pr.recentActive = false;
    return active;
  }

  /** Whether `ids` (e.g. the acks of a read-index round) include a quorum of voters. */
  hasQuorum(ids: ReadonlySet<NodeId>): boolean {
    return isQuorum(this.conf.voters, (id) => ids.has(id));
  }

  resetVotes(): void {
    this.votes.clear();
  }

  /** Records `from`'s vote (the first one counts) and returns the election's result so far. */
  recordVote(from: NodeId, granted: boolean): VoteResult {
    if (!this.votes.has(from)) this.votes.set(from, granted);
    return tallyVotes(this.conf.voters, this.votes);
  }
}
