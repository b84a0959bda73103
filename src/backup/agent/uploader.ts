// Drains the spool into the store, oldest entry first: the data object, then its
// manifest (the commit marker readers go by), then the spool's copy is dropped.
// A failure is retried for as long as it takes, with a backoff from 1 s to 30 s:
// a spooled entry is a committed revision and is never dropped.
import { manifestKeyOf } from '../layout.js';
import { serializeManifest, type Manifest } from '../manifest.js';
import type { ObjectStore } from '../objectStore.js';
import type { Spool, SpoolEntry } from './spool.js';

export interface UploadEvents {
  uploaded(entry: SpoolEntry, manifest: Manifest): void;
  failed(entry: SpoolEntry, error: Error, retryInMs: number): void;
}

const MIN_BACKOFF_MS = 1000;
const MAX_BACKOFF_MS = 30_000;

export class Uploader {
  private wake?: () => void;
  private stopping = false;
  private running?: Promise<void>;
  private backoffMs = MIN_BACKOFF_MS;
  /** aborts the upload in flight when stopping (a store that is down would hold the stop for its whole retry time) */
  private readonly abort = new AbortController();
  /** the store failed on its last attempt (cleared by the next success) */
  failing = false;

  constructor(
    private readonly store: ObjectStore,
    private readonly spool: Spool,
    private readonly events: UploadEvents,
  ) {}

  start(): void {
    this.running ??= this.loop();
  }

  /** Something was spooled: upload it now. */
  kick(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.wake = undefined;
        resolve();
      }, ms);
      this.wake = () => (clearTimeout(t), resolve());
    });
  }

  private async loop(): Promise<void> {
    while (!this.stopping) {
      const e = this.spool.first();
      if (!e) {
        await this.sleep(60_000);
        continue;
      }
      try {
        await this.upload(e);
        this.failing = false;
        this.backoffMs = MIN_BACKOFF_MS;
        await this.spool.remove(e);
        this.events.uploaded(e, e.manifest);
      } catch (err) {
        if (this.stopping) break;
        this.failing = true;
        this.events.failed(e, err as Error, this.backoffMs);
        await this.sleep(this.backoffMs);
        this.backoffMs = Math.min(MAX_BACKOFF_MS, this.backoffMs * 2);
      }
    }
  }

  private async upload(e: SpoolEntry): Promise<void> {
    const signal = this.abort.signal;
    if (e.key && e.dataFile) await this.store.put(e.key, undefined, { file: e.dataFile, signal });
    await this.store.put(e.manifestKey ?? manifestKeyOf(e.key ?? ''), serializeManifest(e.manifest), { signal });
  }

  /** Wait (up to `timeoutMs`) for the spool to empty, then stop. Returns what is left in the spool. */
  async stop(timeoutMs: number): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (this.spool.first() && Date.now() < deadline && !this.failing) {
      this.kick();
      await new Promise((r) => setTimeout(r, 50));
    }
    this.stopping = true;
    this.abort.abort();
    this.kick();
    await this.running;
    return this.spool.pending().length;
  }
}
