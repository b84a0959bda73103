// What makes a `member remove` dangerous, read from MemberList and Status before
// the request is sent, so the CLI can name it and ask first.
import type { Member } from './types.js';
import { hexId } from './ids.js';

export interface RemovalRisk {
  /** one clause per danger, e.g. "it is the leader (…)"; empty when the removal is routine */
  reasons: string[];
  /** the member about to be removed, if it is in the list */
  member?: Member;
}

/** Pure: decide from the member list and the leader's ID (0n when unknown). */
export function assessRemoval(members: readonly Member[], leaderId: bigint, targetId: bigint): RemovalRisk {
  const member = members.find((m) => m.id === targetId);
  if (!member) return { reasons: [] };
  const reasons: string[] = [];
  if (targetId === leaderId) {
    reasons.push('it is the leader (the cluster elects a new one; writes pause until it does)');
  }
  const voters = members.filter((m) => !m.isLearner);
  if (!member.isLearner && voters.length === 2) {
    reasons.push('the cluster has 2 voting members, so 1 remains and losing it loses the cluster');
  }
  return { reasons, member };
}

export function describeMember(m: Member | undefined, id: bigint): string {
  return m && m.name ? `${hexId(id)} (${m.name})` : hexId(id);
}

/**
 * Read what a removal needs to be judged: the member list and the leader (from
 * Status on the same endpoint), then assess.
 */
export async function planRemoval(
  client: { memberList(): Promise<{ members: Member[] }>; status(): Promise<{ leader: bigint }> },
  targetId: bigint,
): Promise<RemovalRisk & { leaderId: bigint }> {
  const [{ members }, { leader }] = await Promise.all([client.memberList(), client.status()]);
  return { ...assessRemoval(members, leader, targetId), leaderId: leader };
}
