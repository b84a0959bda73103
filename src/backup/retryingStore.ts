// Every store call with a timeout and retries: what the commands and the agent
// use in front of a store (openBackupStore in src/cli/backupStoreFlags.ts).
// An attempt that takes longer than the timeout is abandoned (and aborted where
// the store takes a signal); a failed attempt is tried again after an
// exponential backoff with jitter, bounded in attempts and in total time. An
// object that is not there, one the store's object lock protects and a store
// that refused us for good (bad credentials, no bucket) are answers, not
// outages: they are never retried.
import { stat } from 'node:fs/promises';
import { ObjectLocked, ObjectMissing, StoreUnavailable, type ObjectStore, type PutOptions, type StoredObject } from './objectStore.js';

export interface RetryPolicy {
  /** one attempt's limit; a put of a file gets one more second per MiB on top */
  timeoutMs: number;
  /** attempts in all, the first included (≥ 1) */
  attempts: number;
  /** no new attempt starts after this long since the first */
  totalMs: number;
  /** the first backoff; each next one doubles, up to maxDelayMs */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { timeoutMs: 30_000, attempts: 8, totalMs: 120_000, baseDelayMs: 250, maxDelayMs: 10_000 };

export interface RetryEvent {
  op: string;
  key: string;
  /** the attempt that failed (1 = the first) */
  attempt: number;
  delayMs: number;
  error: Error;
}

const MIB = 1024 * 1024;

/** Not worth another attempt: an answer of the store, or a refusal waiting cannot mend. */
export function isFinal(e: unknown): boolean {
  return e instanceof ObjectMissing || e instanceof ObjectLocked || (e instanceof StoreUnavailable && !e.retryable);
}

export class RetryingStore implements ObjectStore {
  private retryCount = 0;

  constructor(
    readonly inner: ObjectStore,
    readonly policy: RetryPolicy = DEFAULT_RETRY_POLICY,
    /** told of every retry (the agent counts them as a metric, a command may log them) */
    private readonly onRetry?: (e: RetryEvent) => void,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
  ) {}

  get url(): string {
    return this.inner.url;
  }

  /** retries made so far, over every call */
  get retries(): number {
    return this.retryCount;
  }

  private async call<T>(op: string, key: string, run: (signal: AbortSignal) => Promise<T>, timeoutMs: number, outer?: AbortSignal): Promise<T> {
    const p = this.policy;
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.attempt(op, key, run, timeoutMs, outer);
      } catch (e) {
        const error = e instanceof Error ? e : new Error(String(e));
        if (isFinal(error) || outer?.aborted) throw error;
        const delayMs = Math.round(Math.min(p.maxDelayMs, p.baseDelayMs * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2));
        if (attempt >= p.attempts || Date.now() - started + delayMs > p.totalMs) {
          const spent = ((Date.now() - started) / 1000).toFixed(1);
          const last = error.message.startsWith(this.url) ? error.message.slice(this.url.length).replace(/^:\s*/, '') : error.message;
          throw new StoreUnavailable(`${this.url}: ${op} ${key || '(all)'} failed ${attempt} time(s) over ${spent}s; last: ${last}`);
        }
        this.retryCount++;
        this.onRetry?.({ op, key, attempt, delayMs, error });
        await this.sleep(delayMs);
      }
    }
  }

  /** One attempt, given up after timeoutMs (the store is asked to abort it through the signal). */
  private attempt<T>(op: string, key: string, run: (signal: AbortSignal) => Promise<T>, timeoutMs: number, outer?: AbortSignal): Promise<T> {
    const ac = new AbortController();
    const onOuter = () => ac.abort(outer?.reason);
    outer?.addEventListener('abort', onOuter, { once: true });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const e = new StoreUnavailable(`${this.url}: ${op} ${key} took longer than ${timeoutMs / 1000}s`);
        ac.abort(e);
        reject(e);
      }, timeoutMs);
    });
    const work = run(ac.signal);
    work.catch(() => undefined); // an abandoned attempt's late failure is nobody's
    return Promise.race([work, timeout]).finally(() => {
      clearTimeout(timer);
      outer?.removeEventListener('abort', onOuter);
    });
  }

  async put(key: string, body: Buffer | undefined, opts: PutOptions = {}): Promise<void> {
    const size = opts.file ? (await stat(opts.file)).size : (body?.length ?? 0);
    const timeoutMs = this.policy.timeoutMs + Math.ceil(size / MIB) * 1000;
    return this.call('put', key, (signal) => this.inner.put(key, body, { ...opts, signal }), timeoutMs, opts.signal);
  }

  get(key: string, signal?: AbortSignal): Promise<Buffer> {
    return this.call('get', key, (s) => this.inner.get(key, s), this.policy.timeoutMs, signal);
  }

  download(key: string, file: string, signal?: AbortSignal): Promise<number> {
    // A download's size is not known before it starts: it gets the total time as its limit.
    return this.call('download', key, (s) => this.inner.download(key, file, s), Math.max(this.policy.timeoutMs, this.policy.totalMs), signal);
  }

  head(key: string): Promise<StoredObject | undefined> {
    return this.call('head', key, () => this.inner.head(key), this.policy.timeoutMs);
  }

  list(prefix: string): Promise<StoredObject[]> {
    return this.call('list', prefix, () => this.inner.list(prefix), this.policy.timeoutMs);
  }

  delete(key: string): Promise<void> {
    return this.call('delete', key, () => this.inner.delete(key), this.policy.timeoutMs);
  }

  abortStaleUploads(olderThanMs: number): Promise<number> {
    return this.call('abort stale uploads', '', () => this.inner.abortStaleUploads(olderThanMs), this.policy.timeoutMs);
  }

  close(): void {
    this.inner.close();
  }
}
