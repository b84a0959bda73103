// The auth store's refusals, as etcd's auth package says them (v3.4 auth/store.go).
// The gRPC edge (src/api/errors.ts) maps each kind to the code and text clients see
// ("etcdserver: ..."); a few maintenance calls pass the store's own text through,
// as etcd 3.4 does.

export type AuthErrorKind =
  | 'rootUserNotExist'
  | 'rootRoleNotExist'
  | 'userAlreadyExist'
  | 'userEmpty'
  | 'userNotFound'
  | 'roleAlreadyExist'
  | 'roleNotFound'
  | 'roleEmpty'
  | 'authFailed'
  | 'noPasswordUser'
  | 'permissionDenied'
  | 'roleNotGranted'
  | 'permissionNotGranted'
  | 'authNotEnabled'
  | 'authOldRevision'
  | 'invalidAuthToken'
  | 'invalidAuthMgmt';

export class AuthError extends Error {
  constructor(
    readonly kind: AuthErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'AuthError';
  }
}

const e = (kind: AuthErrorKind, message: string): AuthError => Object.freeze(new AuthError(kind, message));

export const ErrRootUserNotExist = e('rootUserNotExist', 'auth: root user does not exist');
export const ErrRootRoleNotExist = e('rootRoleNotExist', 'auth: root user does not have root role');
export const ErrUserAlreadyExist = e('userAlreadyExist', 'auth: user already exists');
export const ErrUserEmpty = e('userEmpty', 'auth: user name is empty');
export const ErrUserNotFound = e('userNotFound', 'auth: user not found');
export const ErrRoleAlreadyExist = e('roleAlreadyExist', 'auth: role already exists');
export const ErrRoleNotFound = e('roleNotFound', 'auth: role not found');
export const ErrRoleEmpty = e('roleEmpty', 'auth: role name is empty');
export const ErrAuthFailed = e('authFailed', 'auth: authentication failed, invalid user ID or password');
export const ErrNoPasswordUser = e('noPasswordUser', 'auth: authentication failed, password was given for no password user');
export const ErrPermissionDenied = e('permissionDenied', 'auth: permission denied');
export const ErrRoleNotGranted = e('roleNotGranted', 'auth: role is not granted to the user');
export const ErrPermissionNotGranted = e('permissionNotGranted', 'auth: permission is not granted to the role');
export const ErrAuthNotEnabled = e('authNotEnabled', 'auth: authentication is not enabled');
export const ErrAuthOldRevision = e('authOldRevision', 'auth: revision in header is old');
export const ErrInvalidAuthToken = e('invalidAuthToken', 'auth: invalid auth token');
export const ErrInvalidAuthMgmt = e('invalidAuthMgmt', 'auth: invalid auth management');
