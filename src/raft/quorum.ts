// Quorum arithmetic over the voters of a configuration. Learners never count.
import type { NodeId } from './types.js';

export function quorumSize(voters: number): number {
  return Math.floor(voters / 2) + 1;
}

/** The highest index that a quorum of voters has matched. */
export function committedIndex(voters: Iterable<NodeId>, matchOf: (id: NodeId) => number): number {
  const matches: number[] = [];
  for (const id of voters) matches.push(matchOf(id));
  if (matches.length === 0) return 0;
  matches.sort((a, b) => b - a);
  return matches[quorumSize(matches.length) - 1];
}

/** Whether the voters for which `yes` holds make a quorum. */
export function isQuorum(voters: ReadonlySet<NodeId>, yes: (id: NodeId) => boolean): boolean {
  let n = 0;
  for (const id of voters) if (yes(id)) n++;
  return n >= quorumSize(voters.size);
}

export type VoteResult = 'won' | 'lost' | 'pending';

/** Tally of an election among voters: granted and rejected votes seen so far. */
export function tallyVotes(voters: ReadonlySet<NodeId>, votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  let granted = 0;
  let rejected = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === true) granted++;
    else if (v === false) rejected++;
  }
  const q = quorumSize(voters.size);
  if (granted >= q) return 'won';
  if (rejected > voters.size - q) return 'lost';
  return 'pending';
}
