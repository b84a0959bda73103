// s3://bucket/prefix: a backup store in any S3-compatible service (AWS, MinIO,
// Ceph RGW, R2, GCS's XML API) through the official SDK. Loaded only by
// openStore.ts's dynamic import, so only backup commands pay for the SDK.
//
// - Credentials: the SDK's standard chain (environment, profile, web identity,
//   SSO, credential process), but the EC2 instance metadata service only with
//   --s3-imds: anywhere else a request to 169.254.169.254 hangs until a timeout.
// - A non-AWS endpoint (--s3-endpoint) is addressed path-style and sent request
//   checksums only where the API requires them (many services reject the SDK's
//   default trailing checksums).
// - Large files go up as multipart uploads with parallel parts (lib-storage);
//   what a killed writer left half done is aborted by abortStaleUploads.
// - Errors become one line naming what is wrong and what to do, never a secret:
//   StoreUnavailable (retryable: unreachable, throttled, 5xx; final: refused
//   credentials, no such bucket), ObjectMissing, ObjectLocked.
import { createReadStream, createWriteStream } from 'node:fs';
import { readFile, rename, rm, stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import {
  AbortMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  GetObjectLegalHoldCommand,
  GetObjectRetentionCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { InputError } from '../common/errors.js';
import { ObjectLocked, ObjectMissing, StoreUnavailable, type ObjectStore, type PutOptions, type S3StoreOptions, type StoredObject } from './objectStore.js';

const MIB = 1024 * 1024;
/** files up to this size go up in one PutObject; larger ones in parts */
const SINGLE_PUT_MAX = 16 * MIB;
const DEFAULT_PART_SIZE = 16 * MIB;
const PARALLEL_PARTS = 4;

interface SdkError {
  name?: string;
  code?: string;
  message?: string;
  $metadata?: { httpStatusCode?: number };
  Code?: string;
}

const CREDENTIAL_HINT = 'set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN (on EC2, --s3-imds)';

export class S3Store implements ObjectStore {
  private constructor(
    readonly url: string,
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly prefix: string,
    /** what the messages call the service: the endpoint, or AWS's in the region */
    private readonly where: string,
  ) {}

  static async open(url: string, bucket: string, prefix: string, o: S3StoreOptions): Promise<ObjectStore> {
    // The SDK's chain reads this switch before it would ask the metadata service.
    process.env.AWS_EC2_METADATA_DISABLED = o.imds ? 'false' : 'true';
    // Lifeboat supports Node 20 (package.json engines): the SDK's warning that it will not is noise to an operator.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
    const region = o.region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1';
    let ca: Buffer | undefined;
    if (o.caFile) {
      try {
        ca = await readFile(o.caFile);
      } catch (e) {
        throw new InputError(`--s3-ca-file ${o.caFile}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}; give a readable PEM CA bundle`);
      }
    }
    if (o.endpoint !== undefined && !/^https?:\/\/[^/\s]+\/?$/.test(o.endpoint))
      throw new InputError(`--s3-endpoint ${o.endpoint}: not a service URL; give http(s)://host[:port]`);
    const timeoutMs = o.timeoutMs ?? 30_000;
    const config: S3ClientConfig = {
      region,
      ...(o.endpoint ? { endpoint: o.endpoint } : {}),
      forcePathStyle: Boolean(o.pathStyle || o.endpoint),
      // retryingStore.ts retries (and counts) every call: one attempt each here.
      maxAttempts: 1,
      requestHandler: {
        connectionTimeout: Math.min(timeoutMs, 10_000),
        ...(ca ? { httpsAgent: { ca, keepAlive: true } } : {}),
      },
      ...(o.endpoint ? { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' } : {}),
    };
    const where = o.endpoint ?? `AWS S3 in ${region}`;
    return new S3Store(url, new S3Client(config), bucket, prefix, where);
  }

  private keyOf(key: string): string {
    return `${this.prefix}${key}`;
  }

  /** An SDK failure as one of the store's errors, in one line with no secret in it. */
  private failure(op: string, key: string, e: unknown): Error {
    if (e instanceof InputError || e instanceof StoreUnavailable || e instanceof ObjectMissing || e instanceof ObjectLocked) return e;
    const err = (e ?? {}) as SdkError;
    const name = err.name ?? err.code ?? 'Error';
    const status = err.$metadata?.httpStatusCode;
    const what = `${this.url}: ${op}${key ? ` ${key}` : ''}`;
    if (name === 'NoSuchKey' || name === 'NotFound' || (status === 404 && name !== 'NoSuchBucket')) return new ObjectMissing(this.url, key);
    if (name === 'CredentialsProviderError' || /Could not load credentials/i.test(err.message ?? ''))
      return new StoreUnavailable(`${what}: no S3 credentials found; ${CREDENTIAL_HINT}`, false);
    if (['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'InvalidToken', 'ExpiredToken', 'TokenRefreshRequired', 'AuthorizationHeaderMalformed'].includes(name))
      return new StoreUnavailable(`${what}: ${this.where} refused the credentials (${name}); check them: ${CREDENTIAL_HINT}`, false);
    if (name === 'AccessDenied' || status === 403)
      return new StoreUnavailable(`${what}: ${this.where} denied access (${name}); give credentials allowed to use bucket ${this.bucket}`, false);
    if (name === 'NoSuchBucket')
      return new StoreUnavailable(`${what}: bucket ${this.bucket} does not exist at ${this.where}; create it or fix the store URL`, false);
    if (name === 'PermanentRedirect' || status === 301)
      return new StoreUnavailable(`${what}: bucket ${this.bucket} is in another region than ${this.where}; give its region (--s3-region)`, false);
    const errno = err.code ?? (e as NodeJS.ErrnoException).code;
    if (errno && /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|ETIMEDOUT|EHOSTUNREACH|ENETUNREACH|EPIPE)$/.test(errno))
      return new StoreUnavailable(`${what}: cannot reach ${this.where} (${errno}); check --s3-endpoint and that the service is up`);
    if (name === 'TimeoutError' || name === 'AbortError') return new StoreUnavailable(`${what}: ${this.where} did not answer in time (${name})`);
    if (/certificate|self[- ]signed|UNABLE_TO_VERIFY|CERT_/i.test(`${errno ?? ''} ${err.message ?? ''}`))
      return new StoreUnavailable(`${what}: the certificate of ${this.where} is not trusted (${errno ?? name}); give its CA bundle with --s3-ca-file`, false);
    const detail = (err.message ?? '').split('\n', 1)[0].slice(0, 200);
    return new StoreUnavailable(`${what}: ${this.where} answered ${name}${status ? ` (HTTP ${status})` : ''}${detail && detail !== name ? `: ${detail}` : ''}`);
  }

  private async send<T>(op: string, key: string, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (e) {
      throw this.failure(op, key, e);
    }
  }

  async put(key: string, body: Buffer | undefined, opts: PutOptions = {}): Promise<void> {
    const Key = this.keyOf(key);
    const abortSignal = opts.signal;
    if (!opts.file) {
      const Body = body ?? Buffer.alloc(0);
      await this.send('put', key, () =>
        this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key, Body, ContentLength: Body.length }), { abortSignal }),
      );
      return;
    }
    const file = opts.file;
    const size = (await stat(file)).size;
    if (size <= SINGLE_PUT_MAX) {
      await this.send('put', key, () =>
        this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key, Body: createReadStream(file), ContentLength: size }), { abortSignal }),
      );
      return;
    }
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key, Body: createReadStream(file) },
      partSize: Math.max(5 * MIB, opts.partSize ?? DEFAULT_PART_SIZE),
      queueSize: PARALLEL_PARTS,
      leavePartsOnError: false,
    });
    const onAbort = () => void upload.abort().catch(() => undefined);
    abortSignal?.addEventListener('abort', onAbort, { once: true });
    try {
      await this.send('put', key, () => upload.done());
    } finally {
      abortSignal?.removeEventListener('abort', onAbort);
    }
  }

  async get(key: string, signal?: AbortSignal): Promise<Buffer> {
    return this.send('get', key, async () => {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.keyOf(key) }), { abortSignal: signal });
      return Buffer.from(await out.Body!.transformToByteArray());
    });
  }

  async download(key: string, file: string, signal?: AbortSignal): Promise<number> {
    const part = `${file}.part`;
    try {
      await this.send('download', key, async () => {
        const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.keyOf(key) }), { abortSignal: signal });
        await pipeline(out.Body as Readable, createWriteStream(part), { signal });
      });
      await rename(part, file);
    } catch (e) {
      await rm(part, { force: true });
      throw e;
    }
    return (await stat(file)).size;
  }

  async head(key: string): Promise<StoredObject | undefined> {
    try {
      const out = await this.send('head', key, () => this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.keyOf(key) })));
      return { key, size: out.ContentLength ?? 0, lastModified: out.LastModified ?? new Date(0) };
    } catch (e) {
      if (e instanceof ObjectMissing) return undefined;
      throw e;
    }
  }

  async list(prefix: string): Promise<StoredObject[]> {
    const out: StoredObject[] = [];
    let token: string | undefined;
    // Bounded: 1000 keys a page, at most 100 000 pages.
    for (let page = 0; page < 100_000; page++) {
      const res = await this.send('list', prefix, () =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.keyOf(prefix), ContinuationToken: token })),
      );
      for (const o of res.Contents ?? []) {
        if (!o.Key?.startsWith(this.prefix)) continue;
        out.push({ key: o.Key.slice(this.prefix.length), size: o.Size ?? 0, lastModified: o.LastModified ?? new Date(0) });
      }
      if (!res.IsTruncated || !res.NextContinuationToken) break;
      token = res.NextContinuationToken;
    }
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  }

  async delete(key: string): Promise<void> {
    try {
      await this.send('delete', key, () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.keyOf(key) })));
    } catch (e) {
      // Object lock answers a delete with AccessDenied: say why when the store tells us.
      if (e instanceof StoreUnavailable && !e.retryable && /denied access/.test(e.message)) throw new ObjectLocked(this.url, key, await this.lockOf(key));
      throw e;
    }
  }

  /** What holds `key`: its retention or legal hold, as far as these credentials may read them. */
  private async lockOf(key: string): Promise<string> {
    const Key = this.keyOf(key);
    const held: string[] = [];
    try {
      const r = await this.client.send(new GetObjectRetentionCommand({ Bucket: this.bucket, Key }));
      if (r.Retention?.Mode) held.push(`retention ${r.Retention.Mode} until ${r.Retention.RetainUntilDate?.toISOString() ?? '?'}`);
    } catch {
      // not readable with these credentials, or no retention
    }
    try {
      const h = await this.client.send(new GetObjectLegalHoldCommand({ Bucket: this.bucket, Key }));
      if (h.LegalHold?.Status === 'ON') held.push('legal hold');
    } catch {
      // not readable, or no legal hold
    }
    return held.length > 0 ? held.join(', ') : 'delete denied: object lock, or credentials without s3:DeleteObject';
  }

  async abortStaleUploads(olderThanMs: number): Promise<number> {
    const cutoff = Date.now() - olderThanMs;
    let aborted = 0;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (let page = 0; page < 10_000; page++) {
      let res;
      try {
        res = await this.client.send(
          new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: this.prefix || undefined, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }),
        );
      } catch (e) {
        // Services without multipart listing (s3rver) have nothing we could abort.
        if ((e as SdkError).name === 'NotImplemented') return aborted;
        throw this.failure('list multipart uploads', '', e);
      }
      for (const u of res.Uploads ?? []) {
        if (!u.Key || !u.UploadId || (u.Initiated && u.Initiated.getTime() >= cutoff)) continue;
        const key = u.Key.slice(this.prefix.length);
        await this.send('abort upload of', key, () =>
          this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: u.Key, UploadId: u.UploadId })),
        );
        aborted++;
      }
      if (!res.IsTruncated) break;
      keyMarker = res.NextKeyMarker;
      uploadIdMarker = res.NextUploadIdMarker;
    }
    return aborted;
  }

  close(): void {
    this.client.destroy();
  }
}
