// The member table's records and the runtime-reconfiguration rules of
// SEMANTICS.md: what a MemberAdd/Remove/Update/Promote must pass before it is
// proposed, each refusal being etcd's own error.
import { formatId, parseId } from '../common/ids.js';
import {
  ErrMemberBadURLs,
  ErrMemberExist,
  ErrMemberNotFound,
  ErrMemberNotLearner,
  ErrNotEnoughStartedMembers,
  ErrPeerURLExist,
  ErrTooManyLearners,
  ErrUnhealthy,
  type MemberError,
} from '../common/memberErrors.js';
import type { Member } from '../kv/types.js';
import { isValidMemberUrl } from '../common/urls.js';

/** A member as the KV's member table holds it; `name` is empty until it has started. */
export type MemberRecord = Member;

/** What a conf-change entry carries: the member as it should be after the change, and the proposal's request ID. */
export function encodeMemberContext(m: MemberRecord, reqId: bigint): Uint8Array {
  return Buffer.from(
    JSON.stringify({ id: formatId(m.id), name: m.name, peerURLs: m.peerURLs, clientURLs: m.clientURLs, isLearner: m.isLearner, req: formatId(reqId) }),
  );
}

export function decodeMemberContext(b: Uint8Array): { member: MemberRecord; reqId: bigint } {
  const j = JSON.parse(Buffer.from(b).toString('utf8')) as {
    id: string;
    name?: string;
    peerURLs?: string[];
    clientURLs?: string[];
    isLearner?: boolean;
    req?: string;
  };
  return {
    member: { id: parseId(j.id), name: j.name ?? '', peerURLs: j.peerURLs ?? [], clientURLs: j.clientURLs ?? [], isLearner: !!j.isLearner },
    reqId: j.req ? parseId(j.req) : 0n,
  };
}

export function isStarted(m: MemberRecord): boolean {
  return m.name !== '';
}

function quorum(n: number): number {
  return Math.floor(n / 2) + 1;
}

export function checkAdd(members: MemberRecord[], peerURLs: string[], newId: bigint, isLearner: boolean, maxLearners: number): MemberError | undefined {
  if (peerURLs.length === 0 || !peerURLs.every(isValidMemberUrl)) return ErrMemberBadURLs;
  if (members.some((m) => m.id === newId)) return ErrMemberExist;
  if (members.some((m) => m.peerURLs.some((u) => peerURLs.includes(u)))) return ErrPeerURLExist;
  if (isLearner && members.filter((m) => m.isLearner).length >= maxLearners) return ErrTooManyLearners;
  return undefined;
}

export function checkUpdate(members: MemberRecord[], id: bigint, peerURLs: string[]): MemberError | undefined {
  if (peerURLs.length === 0 || !peerURLs.every(isValidMemberUrl)) return ErrMemberBadURLs;
  if (!members.some((m) => m.id === id)) return ErrMemberNotFound;
  if (members.some((m) => m.id !== id && m.peerURLs.some((u) => peerURLs.includes(u)))) return ErrPeerURLExist;
  return undefined;
}

export function checkPromote(members: MemberRecord[], id: bigint): MemberError | undefined {
  const m = members.find((x) => x.id === id);
  if (!m) return ErrMemberNotFound;
  if (!m.isLearner) return ErrMemberNotLearner;
  return undefined;
}

/**
 * The strict reconfiguration check for a change that adds a voter (an add or a
 * promote): enough started voters for the enlarged quorum, and the member
 * handling it connected to a quorum of the voters after the change for the
 * last 5 s. A one-member cluster may always add.
 */
export function strictAddCheck(members: MemberRecord[], addsVoter: boolean, connected: (id: bigint) => boolean, self: bigint): MemberError | undefined {
  const voters = members.filter((m) => !m.isLearner);
  if (voters.length === 1 && voters[0].id === self) return undefined;
  if (addsVoter) {
    const started = voters.filter(isStarted).length;
    if (started < quorum(voters.length + 1)) return ErrNotEnoughStartedMembers;
  }
  // A learner does not enlarge the voters; a new voter is not yet connected.
  const after = voters.length + (addsVoter ? 1 : 0);
  const reachable = voters.filter((m) => m.id === self || connected(m.id)).length;
  if (reachable < quorum(after)) return ErrUnhealthy;
  return undefined;
}

/**
 * Removing a voter: the started voters that remain must form a quorum of the
 * remaining voters; a member that is down may always go, otherwise the members
 * connected for the last 5 s, less the one removed, must still be a quorum.
 */
export function strictRemoveCheck(members: MemberRecord[], id: bigint, connected: (id: bigint) => boolean, self: bigint): MemberError | undefined {
  const target = members.find((m) => m.id === id);
  if (!target) return ErrMemberNotFound;
  if (target.isLearner) return undefined;
  const voters = members.filter((m) => !m.isLearner);
  const remaining = voters.filter((m) => m.id !== id);
  if (remaining.filter(isStarted).length < quorum(remaining.length)) return ErrNotEnoughStartedMembers;
  if (id !== self && !connected(id)) return undefined;
  const active = voters.filter((m) => m.id === self || connected(m.id)).length;
  if (active - 1 < quorum(remaining.length)) return ErrUnhealthy;
  return undefined;
}
