// The auth store's refusals, as etcd's auth package says them (v3.4 auth/store.go).
// The gRPC edge (src/api/errors.ts) maps each kind to the code and text clients see
// ("etcdserver: ..."); a few maintenance calls pass the store's own text through,
// as etcd 3.4 does. The texts are spelled in src/common/etcdErrorTexts.ts.
import { AuthStoreText } from '../common/etcdErrorTexts.js';

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

export const ErrRootUserNotExist = e('rootUserNotExist', AuthStoreText.rootUserNotExist);
export const ErrRootRoleNotExist = e('rootRoleNotExist', AuthStoreText.rootRoleNotExist);
export const ErrUserAlreadyExist = e('userAlreadyExist', AuthStoreText.userAlreadyExist);
export const ErrUserEmpty = e('userEmpty', AuthStoreText.userEmpty);
export const ErrUserNotFound = e('userNotFound', AuthStoreText.userNotFound);
export const ErrRoleAlreadyExist = e('roleAlreadyExist', AuthStoreText.roleAlreadyExist);
export const ErrRoleNotFound = e('roleNotFound', AuthStoreText.roleNotFound);
export const ErrRoleEmpty = e('roleEmpty', AuthStoreText.roleEmpty);
export const ErrAuthFailed = e('authFailed', AuthStoreText.authFailed);
export const ErrNoPasswordUser = e('noPasswordUser', AuthStoreText.noPasswordUser);
export const ErrPermissionDenied = e('permissionDenied', AuthStoreText.permissionDenied);
export const ErrRoleNotGranted = e('roleNotGranted', AuthStoreText.roleNotGranted);
export const ErrPermissionNotGranted = e('permissionNotGranted', AuthStoreText.permissionNotGranted);
export const ErrAuthNotEnabled = e('authNotEnabled', AuthStoreText.authNotEnabled);
export const ErrAuthOldRevision = e('authOldRevision', AuthStoreText.authOldRevision);
export const ErrInvalidAuthToken = e('invalidAuthToken', AuthStoreText.invalidAuthToken);
export const ErrInvalidAuthMgmt = e('invalidAuthMgmt', AuthStoreText.invalidAuthMgmt);
