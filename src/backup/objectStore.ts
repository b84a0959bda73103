// The store a backup lives in, as the backup code sees it: flat keys under the
// store's own prefix, whole objects written at once (a reader never sees half
// of one), listed in key order. Implementations: fileStore.ts (file:///dir) and
// s3Store.ts (s3://bucket/prefix); openStore.ts picks one from a URL.
//
// What makes an object visible to readers is not the object but its manifest,
// written last (see manifest.ts): every put here may be retried, and a data
// object whose manifest never arrived is garbage for prune to collect.

export interface StoredObject {
  /** the key under the store's prefix, "/"-separated */
  key: string;
  size: number;
  lastModified: Date;
}

export interface PutOptions {
  /** a local file to upload instead of a buffer (large fulls are never held in memory) */
  file?: string;
  /** S3: the part size and parallelism for multipart uploads; ignored by the file store */
  partSize?: number;
  signal?: AbortSignal;
}

export interface ObjectStore {
  /** the store's URL as the operator gave it, with no credentials in it (safe to print) */
  readonly url: string;
  /** Write `body` (or opts.file) as `key`, whole: a concurrent reader sees the old object or the new one. */
  put(key: string, body: Buffer | undefined, opts?: PutOptions): Promise<void>;
  /** The object's bytes; throws ObjectMissing when there is none. */
  get(key: string, signal?: AbortSignal): Promise<Buffer>;
  /** Download to a local file (written to FILE.part, renamed); returns the size. */
  download(key: string, file: string, signal?: AbortSignal): Promise<number>;
  /** undefined when there is no such object. */
  head(key: string): Promise<StoredObject | undefined>;
  /** Every object whose key starts with `prefix`, in key order. */
  list(prefix: string): Promise<StoredObject[]>;
  /** Delete; deleting what is not there is not an error. Throws ObjectLocked when the store's object lock forbids it. */
  delete(key: string): Promise<void>;
  /** Abort what a killed writer left half done (S3 multipart uploads, temp files); returns how many. */
  abortStaleUploads(olderThanMs: number): Promise<number>;
  close(): void;
}

/** What an s3:// store needs beyond its URL (flags of the backup commands). */
export interface S3StoreOptions {
  /** --s3-endpoint: a non-AWS service (Ceph RGW, MinIO, R2, s3rver); path-style addressing then */
  endpoint?: string;
  /** --s3-region (AWS_REGION otherwise; "us-east-1" when neither) */
  region?: string;
  /** --s3-path-style: force path-style addressing (the default with --s3-endpoint) */
  pathStyle?: boolean;
  /** --s3-ca-file: a CA bundle to verify an https endpoint's certificate */
  caFile?: string;
  /** --s3-imds: let the credential chain ask the EC2 instance metadata service */
  imds?: boolean;
  /** every store call gives up after this long (then the caller's retry decides) */
  timeoutMs?: number;
}

export class ObjectMissing extends Error {
  constructor(
    readonly store: string,
    readonly key: string,
  ) {
    super(`${store}: object ${key} is not there`);
    this.name = 'ObjectMissing';
  }
}

export class ObjectLocked extends Error {
  constructor(
    readonly store: string,
    readonly key: string,
    detail: string,
  ) {
    super(`${store}: object ${key} is locked by the store (${detail})`);
    this.name = 'ObjectLocked';
  }
}

/**
 * The store could not be reached or refused us (credentials, permissions): the
 * agent retries, a command fails with this one line. `retryable` is false when
 * waiting cannot help (bad credentials, no such bucket): retryingStore.ts gives
 * up at once and the CLI exits 3 (the store refused) instead of 1.
 */
export class StoreUnavailable extends Error {
  constructor(
    message: string,
    readonly retryable = true,
  ) {
    super(message);
    this.name = 'StoreUnavailable';
  }
}
