// etcd's error texts as clients see them. Clients (clientv3, etcdctl, npm etcd3 and
// our own client) tell etcd's errors apart by their exact text, so this is the one
// place that spells them: the member's gRPC edge (src/api/errors.ts) pairs each with
// its status code, the auth store (src/kv/authErrors.ts) makes its errors of the
// `auth:` ones, and the client (src/client) compares answers with them.
// Sources: etcd v3.4 etcdserver/api/v3rpc/rpctypes/error.go and auth/store.go.

/** The texts of etcd's gRPC errors (rpctypes' ErrGRPC*, named without the prefix). */
export const EtcdText = {
  // Requests
  emptyKey: 'etcdserver: key is not provided',
  keyNotFound: 'etcdserver: key not found',
  valueProvided: 'etcdserver: value is provided',
  leaseProvided: 'etcdserver: lease is provided',
  tooManyOps: 'etcdserver: too many operations in txn request',
  duplicateKey: 'etcdserver: duplicate key given in txn request',
  requestTooLarge: 'etcdserver: request is too large',
  tooManyRequests: 'etcdserver: too many requests',
  // MVCC
  compacted: 'etcdserver: mvcc: required revision has been compacted',
  futureRev: 'etcdserver: mvcc: required revision is a future revision',
  noSpace: 'etcdserver: mvcc: database space exceeded',
  // Leases
  leaseNotFound: 'etcdserver: requested lease not found',
  leaseExist: 'etcdserver: lease already exists',
  leaseTTLTooLarge: 'etcdserver: too large lease TTL',
  // Cluster health
  corrupt: 'etcdserver: corrupt cluster',
  // Membership and leadership (SEMANTICS.md; etcd v3.4 rpctypes)
  memberNotFound: 'etcdserver: member not found',
  memberExist: 'etcdserver: member ID already exist',
  peerURLExist: 'etcdserver: Peer URLs already exists',
  memberBadURLs: 'etcdserver: given member URLs are invalid',
  tooManyLearners: 'etcdserver: too many learner members in cluster',
  memberNotLearner: 'etcdserver: can only promote a learner member',
  learnerNotReady: 'etcdserver: can only promote a learner member which is in sync with leader',
  notEnoughStartedMembers: 'etcdserver: re-configuration failed due to not enough started members',
  unhealthy: 'etcdserver: unhealthy cluster',
  notLeader: 'etcdserver: not leader',
  noLeader: 'etcdserver: no leader',
  badLeaderTransferee: 'etcdserver: bad leader transferee',
  learnerNotSupported: 'etcdserver: rpc not supported for learner',
  timeout: 'etcdserver: request timed out',
  timeoutLeaderTransfer: 'etcdserver: request timed out, leader transfer took too long',
  stopped: 'etcdserver: server stopped',
  leaderChanged: 'etcdserver: leader changed',
  notCapable: 'etcdserver: not capable',
  /** Lifeboat: a second membership change while one is still being applied. */
  confChangePending: 'etcdserver: a membership change is already in progress; retry when it is applied',
  // Auth (etcd v3.4 rpctypes: ErrGRPCRootUserNotExist ... ErrGRPCAuthOldRevision)
  rootUserNotExist: 'etcdserver: root user does not exist',
  rootRoleNotExist: 'etcdserver: root user does not have root role',
  userAlreadyExist: 'etcdserver: user name already exists',
  userEmpty: 'etcdserver: user name is empty',
  userNotFound: 'etcdserver: user name not found',
  roleAlreadyExist: 'etcdserver: role name already exists',
  roleNotFound: 'etcdserver: role name not found',
  roleEmpty: 'etcdserver: role name is empty',
  authFailed: 'etcdserver: authentication failed, invalid user ID or password',
  permissionDenied: 'etcdserver: permission denied',
  roleNotGranted: 'etcdserver: role is not granted to the user',
  permissionNotGranted: 'etcdserver: permission is not granted to the role',
  authNotEnabled: 'etcdserver: authentication is not enabled',
  invalidAuthToken: 'etcdserver: invalid auth token',
  invalidAuthMgmt: 'etcdserver: invalid auth management',
  authOldRevision: 'etcdserver: revision of auth store is old',
} as const;

/** The auth store's own texts (a few maintenance calls return them unconverted, as etcd 3.4 does). */
export const AuthStoreText = {
  rootUserNotExist: 'auth: root user does not exist',
  rootRoleNotExist: 'auth: root user does not have root role',
  userAlreadyExist: 'auth: user already exists',
  userEmpty: 'auth: user name is empty',
  userNotFound: 'auth: user not found',
  roleAlreadyExist: 'auth: role already exists',
  roleNotFound: 'auth: role not found',
  roleEmpty: 'auth: role name is empty',
  authFailed: 'auth: authentication failed, invalid user ID or password',
  noPasswordUser: 'auth: authentication failed, password was given for no password user',
  permissionDenied: 'auth: permission denied',
  roleNotGranted: 'auth: role is not granted to the user',
  permissionNotGranted: 'auth: permission is not granted to the role',
  authNotEnabled: 'auth: authentication is not enabled',
  authOldRevision: 'auth: revision in header is old',
  invalidAuthToken: 'auth: invalid auth token',
  invalidAuthMgmt: 'auth: invalid auth management',
} as const;
