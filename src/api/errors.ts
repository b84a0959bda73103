// The gRPC edge's errors: etcd's error texts (spelled once, in
// src/common/etcdErrorTexts.ts) with their gRPC status codes, and the one table
// mapping the store's and the member's errors (src/kv/errors.ts,
// src/common/errors.ts) to them, as etcd's api/v3rpc/util.go.
// Source: etcd v3.4 etcdserver/api/v3rpc/rpctypes/error.go.
import { KvError, type KvErrorKind } from '../kv/errors.js';
import { MemberError, type MemberErrorKind } from '../common/memberErrors.js';
import { AuthError, type AuthErrorKind } from '../kv/authErrors.js';
import { GrpcCode } from '../net/grpcCode.js';
import { AuthStoreText, EtcdText } from '../common/etcdErrorTexts.js';
import { DEADLINE_EXCEEDED_DETAILS } from '../net/callDeadline.js';

/**
 * An error etcd returns to clients as a gRPC status. The instances below are shared
 * (like etcd's `rpctypes.ErrGRPC*`): they describe an outcome, not a bug, so no
 * stack trace is worth keeping. Compare with `is()`, never by identity across
 * process boundaries.
 */
export class EtcdError extends Error {
  constructor(
    readonly code: GrpcCode,
    message: string,
  ) {
    super(message);
    this.name = 'EtcdError';
  }

  /** Same etcd error (same text); works for errors rebuilt from a gRPC status. */
  is(other: { message: string }): boolean {
    return this.message === other.message;
  }
}

// Typed as EtcdError (not Readonly<EtcdError>) so that `throw ErrX` throws an Error as far as the types go; frozen all the same.
const e = (code: GrpcCode, message: string): EtcdError => Object.freeze(new EtcdError(code, message));

// Requests
export const ErrEmptyKey = e(GrpcCode.InvalidArgument, EtcdText.emptyKey);
export const ErrKeyNotFound = e(GrpcCode.InvalidArgument, EtcdText.keyNotFound);
export const ErrValueProvided = e(GrpcCode.InvalidArgument, EtcdText.valueProvided);
export const ErrLeaseProvided = e(GrpcCode.InvalidArgument, EtcdText.leaseProvided);
export const ErrTooManyOps = e(GrpcCode.InvalidArgument, EtcdText.tooManyOps);
export const ErrDuplicateKey = e(GrpcCode.InvalidArgument, EtcdText.duplicateKey);
export const ErrRequestTooLarge = e(GrpcCode.InvalidArgument, EtcdText.requestTooLarge);
export const ErrTooManyRequests = e(GrpcCode.ResourceExhausted, EtcdText.tooManyRequests);

// MVCC
export const ErrCompacted = e(GrpcCode.OutOfRange, EtcdText.compacted);
export const ErrFutureRev = e(GrpcCode.OutOfRange, EtcdText.futureRev);
export const ErrNoSpace = e(GrpcCode.ResourceExhausted, EtcdText.noSpace);

// Leases
export const ErrLeaseNotFound = e(GrpcCode.NotFound, EtcdText.leaseNotFound);
export const ErrLeaseExist = e(GrpcCode.FailedPrecondition, EtcdText.leaseExist);
export const ErrLeaseTTLTooLarge = e(GrpcCode.OutOfRange, EtcdText.leaseTTLTooLarge);

// Cluster health
export const ErrCorrupt = e(GrpcCode.DataLoss, EtcdText.corrupt);

// Membership and leadership (SEMANTICS.md; etcd v3.4 rpctypes)
export const ErrMemberNotFound = e(GrpcCode.NotFound, EtcdText.memberNotFound);
export const ErrMemberExist = e(GrpcCode.FailedPrecondition, EtcdText.memberExist);
export const ErrPeerURLExist = e(GrpcCode.FailedPrecondition, EtcdText.peerURLExist);
export const ErrMemberBadURLs = e(GrpcCode.InvalidArgument, EtcdText.memberBadURLs);
export const ErrTooManyLearners = e(GrpcCode.FailedPrecondition, EtcdText.tooManyLearners);
export const ErrMemberNotLearner = e(GrpcCode.FailedPrecondition, EtcdText.memberNotLearner);
export const ErrLearnerNotReady = e(GrpcCode.FailedPrecondition, EtcdText.learnerNotReady);
export const ErrNotEnoughStartedMembers = e(GrpcCode.FailedPrecondition, EtcdText.notEnoughStartedMembers);
export const ErrUnhealthy = e(GrpcCode.Unavailable, EtcdText.unhealthy);
export const ErrNotLeader = e(GrpcCode.FailedPrecondition, EtcdText.notLeader);
export const ErrNoLeader = e(GrpcCode.Unavailable, EtcdText.noLeader);
export const ErrBadLeaderTransferee = e(GrpcCode.FailedPrecondition, EtcdText.badLeaderTransferee);
export const ErrLearnerNotSupported = e(GrpcCode.Unavailable, EtcdText.learnerNotSupported);
export const ErrTimeout = e(GrpcCode.Unavailable, EtcdText.timeout);
/** A client's deadline (grpc-timeout) passed: etcd's ErrGRPCDeadlineExceeded. */
export const ErrDeadlineExceeded = e(GrpcCode.DeadlineExceeded, DEADLINE_EXCEEDED_DETAILS);
export const ErrTimeoutLeaderTransfer = e(GrpcCode.Unavailable, EtcdText.timeoutLeaderTransfer);
export const ErrStopped = e(GrpcCode.Unavailable, EtcdText.stopped);
export const ErrLeaderChanged = e(GrpcCode.Unavailable, EtcdText.leaderChanged);
export const ErrNotCapable = e(GrpcCode.Unavailable, EtcdText.notCapable);
/** Lifeboat: a second membership change while one is still being applied. */
export const ErrConfChangePending = e(GrpcCode.FailedPrecondition, EtcdText.confChangePending);

// Auth (etcd v3.4 rpctypes: ErrGRPCRootUserNotExist ... ErrGRPCAuthOldRevision)
export const ErrRootUserNotExist = e(GrpcCode.FailedPrecondition, EtcdText.rootUserNotExist);
export const ErrRootRoleNotExist = e(GrpcCode.FailedPrecondition, EtcdText.rootRoleNotExist);
export const ErrUserAlreadyExist = e(GrpcCode.FailedPrecondition, EtcdText.userAlreadyExist);
export const ErrUserEmpty = e(GrpcCode.InvalidArgument, EtcdText.userEmpty);
export const ErrUserNotFound = e(GrpcCode.FailedPrecondition, EtcdText.userNotFound);
export const ErrRoleAlreadyExist = e(GrpcCode.FailedPrecondition, EtcdText.roleAlreadyExist);
export const ErrRoleNotFound = e(GrpcCode.FailedPrecondition, EtcdText.roleNotFound);
export const ErrRoleEmpty = e(GrpcCode.InvalidArgument, EtcdText.roleEmpty);
export const ErrAuthFailed = e(GrpcCode.InvalidArgument, EtcdText.authFailed);
export const ErrPermissionDenied = e(GrpcCode.PermissionDenied, EtcdText.permissionDenied);
export const ErrRoleNotGranted = e(GrpcCode.FailedPrecondition, EtcdText.roleNotGranted);
export const ErrPermissionNotGranted = e(GrpcCode.FailedPrecondition, EtcdText.permissionNotGranted);
export const ErrAuthNotEnabled = e(GrpcCode.FailedPrecondition, EtcdText.authNotEnabled);
export const ErrInvalidAuthToken = e(GrpcCode.Unauthenticated, EtcdText.invalidAuthToken);
export const ErrInvalidAuthMgmt = e(GrpcCode.InvalidArgument, EtcdText.invalidAuthMgmt);
export const ErrAuthOldRevision = e(GrpcCode.InvalidArgument, EtcdText.authOldRevision);

const AUTH_ERRORS: Record<AuthErrorKind, EtcdError> = {
  rootUserNotExist: ErrRootUserNotExist,
  rootRoleNotExist: ErrRootRoleNotExist,
  userAlreadyExist: ErrUserAlreadyExist,
  userEmpty: ErrUserEmpty,
  userNotFound: ErrUserNotFound,
  roleAlreadyExist: ErrRoleAlreadyExist,
  roleNotFound: ErrRoleNotFound,
  roleEmpty: ErrRoleEmpty,
  authFailed: ErrAuthFailed,
  // Not among etcd 3.4's gRPC errors: clients see code Unknown and the store's text.
  noPasswordUser: e(GrpcCode.Unknown, AuthStoreText.noPasswordUser),
  permissionDenied: ErrPermissionDenied,
  roleNotGranted: ErrRoleNotGranted,
  permissionNotGranted: ErrPermissionNotGranted,
  authNotEnabled: ErrAuthNotEnabled,
  authOldRevision: ErrAuthOldRevision,
  invalidAuthToken: ErrInvalidAuthToken,
  invalidAuthMgmt: ErrInvalidAuthMgmt,
};

/**
 * etcd 3.4's Defragment, Snapshot, Hash and HashKV return the auth store's own error
 * unconverted: clients see code Unknown and the text "auth: permission denied" (as
 * checked against etcd 3.4.23). Lifeboat answers the same.
 */
export function unconvertedAuthError(err: unknown): unknown {
  return err instanceof AuthError ? new EtcdError(GrpcCode.Unknown, err.message) : err;
}

/** The store's errors as clients see them. */
const KV_ERRORS: Record<KvErrorKind, EtcdError> = {
  compacted: ErrCompacted,
  futureRev: ErrFutureRev,
  keyNotFound: ErrKeyNotFound,
  leaseNotFound: ErrLeaseNotFound,
};

/** The member's errors as clients see them (a bare code: the text as made, see below). */
const MEMBER_ERRORS: Record<MemberErrorKind, EtcdError | GrpcCode> = {
  noSpace: ErrNoSpace,
  noLeader: ErrNoLeader,
  notLeader: ErrNotLeader,
  timeout: ErrTimeout,
  deadlineExceeded: ErrDeadlineExceeded,
  requestTooLarge: ErrRequestTooLarge,
  timeoutLeaderTransfer: ErrTimeoutLeaderTransfer,
  stopped: ErrStopped,
  badLeaderTransferee: ErrBadLeaderTransferee,
  leaseExist: ErrLeaseExist,
  leaseTTLTooLarge: ErrLeaseTTLTooLarge,
  memberNotFound: ErrMemberNotFound,
  memberExist: ErrMemberExist,
  peerURLExist: ErrPeerURLExist,
  memberBadURLs: ErrMemberBadURLs,
  tooManyLearners: ErrTooManyLearners,
  memberNotLearner: ErrMemberNotLearner,
  learnerNotReady: ErrLearnerNotReady,
  notEnoughStartedMembers: ErrNotEnoughStartedMembers,
  unhealthy: ErrUnhealthy,
  confChangePending: ErrConfChangePending,
  // Texts made at the time (`etcdserver: <Raft's reason>`), passed through with a code.
  proposalRefused: GrpcCode.Unavailable,
  confChangeRefused: GrpcCode.FailedPrecondition,
};

/** The etcd error clients see for `e`, or undefined when it is none of ours (a bug: Unknown). */
export function toEtcdError(e: unknown): EtcdError | undefined {
  if (e instanceof EtcdError) return e;
  if (e instanceof KvError) return KV_ERRORS[e.kind];
  if (e instanceof AuthError) return AUTH_ERRORS[e.kind];
  if (e instanceof MemberError) {
    const m = MEMBER_ERRORS[e.kind];
    return m instanceof EtcdError ? m : new EtcdError(m, e.message);
  }
  return undefined;
}
