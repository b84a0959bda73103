// Reading etcd's own files: a read-only bbolt reader (and the one in-place edit of a scratch copy, emptyBoltBuckets), etcd's bucket encodings, the
// figures `etcdctl snapshot status` prints, the sha256 trailer. (The import of an
// etcd backend into a Lifeboat KV is recovery's: src/recovery/etcdImport.ts.)

export { BoltDb, type BoltOpenOptions } from './boltDb.js';
export { emptyBoltBuckets } from './boltEmptyBuckets.js';
export { detachBoltLeases } from './boltDetachLeases.js';
export { BoltFormatError, EtcdDataError, isEtcdFileError } from './boltErrors.js';
export type { BoltEntry, BucketRef } from './bucketCursor.js';
export { scanEtcdDb, type EtcdDbSummary, type EtcdRevision, type ScanOptions } from './etcdDbScan.js';
export { boltTruncation, looksLikeBolt } from './metaPage.js';
export { checkTrailer, hasTrailer, requireTrailer, TRAILER_SIZE, TrailerError, type TrailerCheck } from './shaTrailer.js';
export type { EtcdAlarm, EtcdLease, EtcdMember } from './etcdBuckets.js';
export { etcdDataDirLock, isEtcdDataDir, readEtcdDataDir, type EtcdDataDirOptions, type EtcdDataDirSummary } from './etcdDataDir.js';
export type { LockHolder } from './etcdLock.js';
export { kvText, type EntryDescription, type EntryKind } from './walEntryKinds.js';
export { EtcdWalError } from './walErrors.js';
