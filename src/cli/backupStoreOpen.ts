// The flags every backup command shares to reach its store (--store and the
// S3 settings, the timeout and retries of store calls) as plain data
// (flagParser.ts), the store they open (behind the retrying wrapper), and the
// exit codes of store errors. Each flag is also read from LIFEBOAT_<FLAG>. No
// oclif here: `backup run` parses them without it (backupRunMain.ts);
// backupStoreFlags.ts builds oclif's flags from the same table.
import { InputError } from '../common/errors.js';
import { ObjectLocked, StoreUnavailable, type ObjectStore, type S3StoreOptions } from '../backup/objectStore.js';
import { openStore } from '../backup/openStore.js';
import { RetryingStore, DEFAULT_RETRY_POLICY, type RetryEvent, type RetryPolicy } from '../backup/retryingStore.js';
import { EXIT } from './exitCodes.js';
import { envName, type FlagSpec } from './flagParser.js';

const env = (name: string) => [envName('LIFEBOAT', name)];

export const STORE_FLAG_SPECS = {
  store: { type: 'string', description: 'the backup store: file:///absolute/dir or s3://bucket/prefix', env: env('store') },
  's3-endpoint': {
    type: 'string',
    description: 'S3: the service URL of a non-AWS store (MinIO, Ceph RGW, R2, ...), e.g. https://minio.example:9000; path-style addressing then',
    env: env('s3-endpoint'),
  },
  's3-region': { type: 'string', description: 'S3: the region (default: AWS_REGION, else us-east-1)', env: env('s3-region') },
  's3-path-style': {
    type: 'boolean',
    description: 'S3: path-style addressing (https://host/bucket/key) even without --s3-endpoint',
    default: false,
    env: env('s3-path-style'),
  },
  's3-ca-file': { type: 'string', description: "S3: verify the https endpoint's certificate with this CA bundle (PEM)", env: env('s3-ca-file') },
  's3-imds': {
    type: 'boolean',
    description: 'S3: let the credential chain ask the EC2 instance metadata service (never asked otherwise)',
    default: false,
    env: env('s3-imds'),
  },
  'store-timeout': {
    type: 'duration',
    description: 'limit of one store call (a file upload gets 1s more per MiB)',
    default: DEFAULT_RETRY_POLICY.timeoutMs,
    defaultHelp: '30s',
    env: env('store-timeout'),
  },
  'store-attempts': {
    type: 'integer',
    description: 'attempts of a store call before it fails',
    default: DEFAULT_RETRY_POLICY.attempts,
    env: env('store-attempts'),
  },
  'store-retry-for': {
    type: 'duration',
    description: 'no new attempt of a store call after this long',
    default: DEFAULT_RETRY_POLICY.totalMs,
    defaultHelp: '2m',
    env: env('store-retry-for'),
  },
} as const satisfies Record<string, FlagSpec>;

export interface StoreFlagValues {
  store?: string;
  's3-endpoint'?: string;
  's3-region'?: string;
  's3-path-style'?: boolean;
  's3-ca-file'?: string;
  's3-imds'?: boolean;
  'store-timeout': number;
  'store-attempts': number;
  'store-retry-for': number;
}

/** The store's URL from the positional STORE or --store (one of them, or both the same). */
export function storeUrlOf(flags: Pick<StoreFlagValues, 'store'>, positional?: string): string {
  if (positional !== undefined && flags.store !== undefined && positional !== flags.store)
    throw new InputError(`STORE ${positional} and --store ${flags.store} differ; give the store once`);
  const url = positional ?? flags.store;
  if (!url) throw new InputError('no store given: give STORE or --store (file:///absolute/dir or s3://bucket/prefix)');
  return url;
}

export function s3OptionsOf(flags: StoreFlagValues): S3StoreOptions {
  return {
    ...(flags['s3-endpoint'] ? { endpoint: flags['s3-endpoint'] } : {}),
    ...(flags['s3-region'] ? { region: flags['s3-region'] } : {}),
    ...(flags['s3-path-style'] ? { pathStyle: true } : {}),
    ...(flags['s3-ca-file'] ? { caFile: flags['s3-ca-file'] } : {}),
    ...(flags['s3-imds'] ? { imds: true } : {}),
    timeoutMs: flags['store-timeout'],
  };
}

export function retryPolicyOf(flags: StoreFlagValues): RetryPolicy {
  if (flags['store-attempts'] < 1) throw new InputError(`--store-attempts ${flags['store-attempts']}: give at least 1`);
  return { ...DEFAULT_RETRY_POLICY, timeoutMs: flags['store-timeout'], attempts: flags['store-attempts'], totalMs: flags['store-retry-for'] };
}

/** The store at `url` as the flags say, every call with the timeout and retries of the flags (a store that refuses to open exits as tagStoreError says). Close it when done. */
export async function openBackupStore(url: string, flags: StoreFlagValues, onRetry?: (e: RetryEvent) => void): Promise<RetryingStore & ObjectStore> {
  const policy = retryPolicyOf(flags);
  try {
    return new RetryingStore(await openStore(url, s3OptionsOf(flags)), policy, onRetry);
  } catch (e) {
    tagStoreError(e);
    throw e;
  }
}

/**
 * Exit codes of store errors, for a backup command's catch: a store that refused
 * us for good (credentials, permissions, no bucket) or an object lock → 3; an
 * unreachable store → 1 (the default).
 */
export function tagStoreError(err: unknown): void {
  if ((err instanceof StoreUnavailable && !err.retryable) || err instanceof ObjectLocked)
    (err as Error & { oclif?: { exit?: number } }).oclif = { exit: EXIT.REFUSED };
}
