// The gRPC edge's errors: etcd's error texts and their gRPC status codes, and the
// one table mapping the store's and the member's errors (src/kv/errors.ts,
// src/common/errors.ts) to them, as etcd's api/v3rpc/util.go. Clients (clientv3,
// etcdctl, npm etcd3) recognise these errors by the exact message text, so
// nothing else in Lifeboat spells them: import the constant.
// Source: etcd v3.4 etcdserver/api/v3rpc/rpctypes/error.go.
import { KvError, type KvErrorKind } from '../kv/errors.js';
import { MemberError, type MemberErrorKind } from '../common/memberErrors.js';
import { AuthError, type AuthErrorKind } from '../kv/authErrors.js';
import { GrpcCode } from '../net/grpcCode.js';

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
export const ErrEmptyKey = e(GrpcCode.InvalidArgument, 'etcdserver: key is not provided');
export const ErrKeyNotFound = e(GrpcCode.InvalidArgument, 'etcdserver: key not found');
export const ErrValueProvided = e(GrpcCode.InvalidArgument, 'etcdserver: value is provided');
export const ErrLeaseProvided = e(GrpcCode.InvalidArgument, 'etcdserver: lease is provided');
export const ErrTooManyOps = e(GrpcCode.InvalidArgument, 'etcdserver: too many operations in txn request');
export const ErrDuplicateKey = e(GrpcCode.InvalidArgument, 'etcdserver: duplicate key given in txn request');
export const ErrRequestTooLarge = e(GrpcCode.InvalidArgument, 'etcdserver: request is too large');
export const ErrTooManyRequests = e(GrpcCode.ResourceExhausted, 'etcdserver: too many requests');

// MVCC
export const ErrCompacted = e(GrpcCode.OutOfRange, 'etcdserver: mvcc: required revision has been compacted');
export const ErrFutureRev = e(GrpcCode.OutOfRange, 'etcdserver: mvcc: required revision is a future revision');
export const ErrNoSpace = e(GrpcCode.ResourceExhausted, 'etcdserver: mvcc: database space exceeded');

// Leases
export const ErrLeaseNotFound = e(GrpcCode.NotFound, 'etcdserver: requested lease not found');
export const ErrLeaseExist = e(GrpcCode.FailedPrecondition, 'etcdserver: lease already exists');
export const ErrLeaseTTLTooLarge = e(GrpcCode.OutOfRange, 'etcdserver: too large lease TTL');

// Cluster health
export const ErrCorrupt = e(GrpcCode.DataLoss, 'etcdserver: corrupt cluster');

// Membership and leadership (SEMANTICS.md; etcd v3.4 rpctypes)
export const ErrMemberNotFound = e(GrpcCode.NotFound, 'etcdserver: member not found');
export const ErrMemberExist = e(GrpcCode.FailedPrecondition, 'etcdserver: member ID already exist');
export const ErrPeerURLExist = e(GrpcCode.FailedPrecondition, 'etcdserver: Peer URLs already exists');
export const ErrMemberBadURLs = e(GrpcCode.InvalidArgument, 'etcdserver: given member URLs are invalid');
export const ErrTooManyLearners = e(GrpcCode.FailedPrecondition, 'etcdserver: too many learner members in cluster');
export const ErrMemberNotLearner = e(GrpcCode.FailedPrecondition, 'etcdserver: can only promote a learner member');
export const ErrLearnerNotReady = e(GrpcCode.FailedPrecondition, 'etcdserver: can only promote a learner member which is in sync with leader');
export const ErrNotEnoughStartedMembers = e(GrpcCode.FailedPrecondition, 'etcdserver: re-configuration failed due to not enough started members');
export const ErrUnhealthy = e(GrpcCode.Unavailable, 'etcdserver: unhealthy cluster');
export const ErrNotLeader = e(GrpcCode.FailedPrecondition, 'etcdserver: not leader');
export const ErrNoLeader = e(GrpcCode.Unavailable, 'etcdserver: no leader');
export const ErrBadLeaderTransferee = e(GrpcCode.FailedPrecondition, 'etcdserver: bad leader transferee');
export const ErrLearnerNotSupported = e(GrpcCode.Unavailable, 'etcdserver: rpc not supported for learner');
export const ErrTimeout = e(GrpcCode.Unavailable, 'etcdserver: request timed out');
export const ErrTimeoutLeaderTransfer = e(GrpcCode.Unavailable, 'etcdserver: request timed out, leader transfer took too long');
export const ErrStopped = e(GrpcCode.Unavailable, 'etcdserver: server stopped');
export const ErrLeaderChanged = e(GrpcCode.Unavailable, 'etcdserver: leader changed');
export const ErrNotCapable = e(GrpcCode.Unavailable, 'etcdserver: not capable');
/** Lifeboat: a second membership change while one is still being applied. */
export const ErrConfChangePending = e(GrpcCode.FailedPrecondition, 'etcdserver: a membership change is already in progress; retry when it is applied');

// Auth (etcd v3.4 rpctypes: ErrGRPCRootUserNotExist ... ErrGRPCAuthOldRevision)
export const ErrRootUserNotExist = e(GrpcCode.FailedPrecondition, 'etcdserver: root user does not exist');
export const ErrRootRoleNotExist = e(GrpcCode.FailedPrecondition, 'etcdserver: root user does not have root role');
export const ErrUserAlreadyExist = e(GrpcCode.FailedPrecondition, 'etcdserver: user name already exists');
export const ErrUserEmpty = e(GrpcCode.InvalidArgument, 'etcdserver: user name is empty');
export const ErrUserNotFound = e(GrpcCode.FailedPrecondition, 'etcdserver: user name not found');
export const ErrRoleAlreadyExist = e(GrpcCode.FailedPrecondition, 'etcdserver: role name already exists');
export const ErrRoleNotFound = e(GrpcCode.FailedPrecondition, 'etcdserver: role name not found');
export const ErrRoleEmpty = e(GrpcCode.InvalidArgument, 'etcdserver: role name is empty');
export const ErrAuthFailed = e(GrpcCode.InvalidArgument, 'etcdserver: authentication failed, invalid user ID or password');
export const ErrPermissionDenied = e(GrpcCode.PermissionDenied, 'etcdserver: permission denied');
export const ErrRoleNotGranted = e(GrpcCode.FailedPrecondition, 'etcdserver: role is not granted to the user');
export const ErrPermissionNotGranted = e(GrpcCode.FailedPrecondition, 'etcdserver: permission is not granted to the role');
export const ErrAuthNotEnabled = e(GrpcCode.FailedPrecondition, 'etcdserver: authentication is not enabled');
export const ErrInvalidAuthToken = e(GrpcCode.Unauthenticated, 'etcdserver: invalid auth token');
export const ErrInvalidAuthMgmt = e(GrpcCode.InvalidArgument, 'etcdserver: invalid auth management');
export const ErrAuthOldRevision = e(GrpcCode.InvalidArgument, 'etcdserver: revision of auth store is old');

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
  noPasswordUser: e(GrpcCode.Unknown, 'auth: authentication failed, password was given for no password user'),
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
