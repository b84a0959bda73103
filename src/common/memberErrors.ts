// The member's refusals (src/server), as the member says them (etcd's etcdserver and
// membership packages). Shared frozen instances, compared by identity; the gRPC
// edge (src/api/errors.ts) maps each kind to the code and text clients see. Two
// kinds carry a text made at the time (Raft refusing a proposal or a membership
// change): the edge passes those texts through.
import { EtcdText } from './etcdErrorTexts.js';

export type MemberErrorKind =
  | 'noSpace'
  | 'noLeader'
  | 'notLeader'
  | 'timeout'
  /** The client's deadline (grpc-timeout) passed first. */
  | 'deadlineExceeded'
  /** The request's Raft entry is larger than --max-request-bytes. */
  | 'requestTooLarge'
  | 'timeoutLeaderTransfer'
  | 'stopped'
  | 'badLeaderTransferee'
  | 'leaseExist'
  | 'leaseTTLTooLarge'
  | 'memberNotFound'
  | 'memberExist'
  | 'peerURLExist'
  | 'memberBadURLs'
  | 'tooManyLearners'
  | 'memberNotLearner'
  | 'learnerNotReady'
  | 'notEnoughStartedMembers'
  | 'unhealthy'
  | 'confChangePending'
  /** Raft dropped or refused a proposal: unavailable for now, text as made. */
  | 'proposalRefused'
  /** Raft refused a membership change: a failed precondition, text as made. */
  | 'confChangeRefused';

export class MemberError extends Error {
  constructor(
    readonly kind: MemberErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'MemberError';
  }
}

// Typed as the class, not Object.freeze's Readonly<…>, so `throw ErrX` is an Error to the type checker.
const e = (kind: MemberErrorKind, message: string): MemberError => Object.freeze(new MemberError(kind, message));

export const ErrNoSpace = e('noSpace', 'mvcc: database space exceeded');
export const ErrNoLeader = e('noLeader', 'etcdserver: no leader');
export const ErrNotLeader = e('notLeader', 'etcdserver: not leader');
export const ErrTimeout = e('timeout', 'etcdserver: request timed out');
/** The client's deadline passed before the request was proposed or applied (Go's context.DeadlineExceeded). */
export const ErrDeadlineExceeded = e('deadlineExceeded', 'context deadline exceeded');
export const ErrRequestTooLarge = e('requestTooLarge', EtcdText.requestTooLarge);
export const ErrTimeoutLeaderTransfer = e('timeoutLeaderTransfer', 'etcdserver: request timed out, leader transfer took too long');
export const ErrStopped = e('stopped', 'etcdserver: server stopped');
export const ErrBadLeaderTransferee = e('badLeaderTransferee', 'etcdserver: bad leader transferee');
export const ErrLeaseExist = e('leaseExist', 'lease already exists');
export const ErrLeaseTTLTooLarge = e('leaseTTLTooLarge', 'too large lease TTL');
export const ErrMemberNotFound = e('memberNotFound', 'membership: member not found');
export const ErrMemberExist = e('memberExist', 'membership: ID exists');
export const ErrPeerURLExist = e('peerURLExist', 'membership: peerURL exists');
export const ErrMemberBadURLs = e('memberBadURLs', 'membership: given member URLs are invalid');
export const ErrTooManyLearners = e('tooManyLearners', 'membership: too many learner members in cluster');
export const ErrMemberNotLearner = e('memberNotLearner', 'membership: can only promote a learner member');
export const ErrLearnerNotReady = e('learnerNotReady', 'etcdserver: can only promote a learner member which is in sync with leader');
export const ErrNotEnoughStartedMembers = e('notEnoughStartedMembers', 'etcdserver: re-configuration failed due to not enough started members');
export const ErrUnhealthy = e('unhealthy', 'etcdserver: unhealthy cluster');
/** Lifeboat: a second membership change while one is still being applied. */
export const ErrConfChangePending = e('confChangePending', 'etcdserver: a membership change is already in progress; retry when it is applied');

/** Raft dropped or refused a proposal (`etcdserver: <reason>`). */
export function proposalRefused(reason: string): MemberError {
  return new MemberError('proposalRefused', `etcdserver: ${reason}`);
}

/** Raft refused a membership change (`etcdserver: <reason>`). */
export function confChangeRefused(reason: string): MemberError {
  return new MemberError('confChangeRefused', `etcdserver: ${reason}`);
}
