// The KV store's public surface; the files behind it are internal.

export { KvStore, type KvEntry, type KvOpenOptions, type KvWriter } from './kvStore.js';
export type { ClusterMetaReader, ClusterMetaWriter } from './clusterMeta.js';
export type { KvSnapshotInfo } from './types.js';
export type { KvSnapshotSource } from './snapshotSource.js';
export {
  moveSnapshotIntoPlaceSync,
  restoreSnapshot,
  snapshotTrailerStripped,
  stripSnapshotTrailerSync,
  verifySnapshot,
  writeSnapshotSync,
} from './snapshotFile.js';
export { detachLeasesInDb } from './leaseDetach.js';
export { KvDamagedError } from './kvSchema.js';
export { ErrCompacted, ErrFutureRev, ErrKeyNotFound, ErrLeaseNotFound, KvError, type KvErrorKind } from './errors.js';
export {
  decodeKvRequest,
  decodeRequest,
  decodeServerRequest,
  encodeKvRequest,
  encodeRequest,
  encodeServerRequest,
  type DecodedEntryRequest,
  type DecodedRequest,
  type ServerRequest,
} from './requestCodec.js';
export { keyRange } from './mvccTxn.js';
export type { KeyRange } from './revisionTables.js';
export { encodeKeyValue, revisionKey, type StoredRevision } from './keyValueCodec.js';
export * from './types.js';
export * from './authErrors.js';
export {
  AuthState,
  applyAuthRequest,
  decodeRole,
  decodeUser,
  importEtcdAuth,
  ROOT_ROLE,
  ROOT_USER,
  type AuthApplyResult,
  type AuthRole,
  type AuthUser,
} from './authStore.js';
export { PermType, type AuthInfo, type AuthRequest, type Permission } from './authRequestCodec.js';
export { kvRequestRefusal, leaseRevokeRefusal } from './kvAuthorization.js';
export { fsyncFile } from './fsyncFile.js';
