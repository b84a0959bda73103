// oclif's flags every backup command shares to reach its store, built from
// the table in backupStoreOpen.ts (which says what they are, and opens the store).
import { Args } from '#oclif-core';
import { STORE_FLAG_SPECS } from './backupStoreOpen.js';
import { oclifBoolean, oclifDuration, oclifInteger, oclifString } from './oclifFlag.js';

export { openBackupStore, retryPolicyOf, s3OptionsOf, STORE_FLAG_SPECS, storeUrlOf, tagStoreError, type StoreFlagValues } from './backupStoreOpen.js';

/** oclif flags of STORE_FLAG_SPECS: spread them into a backup command's flags. */
export const STORE_FLAGS = {
  store: oclifString('store', STORE_FLAG_SPECS.store),
  's3-endpoint': oclifString('s3-endpoint', STORE_FLAG_SPECS['s3-endpoint']),
  's3-region': oclifString('s3-region', STORE_FLAG_SPECS['s3-region']),
  's3-path-style': oclifBoolean('s3-path-style', STORE_FLAG_SPECS['s3-path-style']),
  's3-ca-file': oclifString('s3-ca-file', STORE_FLAG_SPECS['s3-ca-file']),
  's3-imds': oclifBoolean('s3-imds', STORE_FLAG_SPECS['s3-imds']),
  'store-timeout': oclifDuration('store-timeout', STORE_FLAG_SPECS['store-timeout']),
  'store-attempts': oclifInteger('store-attempts', STORE_FLAG_SPECS['store-attempts']),
  'store-retry-for': oclifDuration('store-retry-for', STORE_FLAG_SPECS['store-retry-for']),
};

/** The positional STORE of `backup list` and `backup prune` (the same as --store). */
export const STORE_ARG = {
  store: Args.string({ description: 'the backup store: file:///absolute/dir or s3://bucket/prefix (or --store)' }),
};
