// `snapshot save`: stream Maintenance.Snapshot into FILE.part, check the trailing
// sha256 that etcd appends (sha256 of every byte before it), fsync, rename to
// FILE, fsync the directory. A failure removes FILE.part and leaves FILE as it was.
import { createHash } from 'node:crypto';
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { EtcdClient } from './etcdClient.js';
import { EtcdClientError } from './errors.js';
import { InputError } from '../common/errors.js';
import { ALL_KEYS } from './keyRange.js';
import type { SnapshotChunk } from './types.js';

export const SHA256_LEN = 32;

export interface SnapshotSaved {
  path: string;
  endpoint: string;
  /** bytes in the file, trailer included */
  size: number;
  /** sha256 of the whole file (trailer included), hex */
  sha256: string;
  /** sha256 of the database bytes, as found in (and checked against) the trailer, hex */
  dbSha256: string;
  /** the store's revision and key count, read (one Range, count only) just before the snapshot */
  revision: number;
  keyCount: number;
  seconds: number;
  bytesPerSecond: number;
}

export interface SaveOptions {
  /** called as bytes arrive; total is the database size announced by the server */
  onProgress?: (received: number, total: number) => void;
}

/** Check the trailer rule of a whole snapshot file held in memory (tests, small files). */
export function verifySnapshotTrailer(bytes: Buffer): { ok: true; dbSha256: string } | { ok: false; reason: string } {
  if (bytes.length % 512 !== SHA256_LEN) return { ok: false, reason: `sha256 checksum not found (size ${bytes.length} is not a multiple of 512 plus 32)` };
  const db = bytes.subarray(0, bytes.length - SHA256_LEN);
  const trailer = bytes.subarray(bytes.length - SHA256_LEN);
  const digest = createHash('sha256').update(db).digest();
  if (!digest.equals(trailer)) return { ok: false, reason: `sha256 mismatch: trailer ${trailer.toString('hex')}, data ${digest.toString('hex')}` };
  return { ok: true, dbSha256: digest.toString('hex') };
}

/**
 * Incremental check of "data ‖ sha256(data)": everything but the last 32 bytes
 * seen so far goes into the data digest; the last 32 are held back as the
 * candidate trailer. Every byte is hashed once: the whole file's digest is the
 * data digest's state carried on over the trailer (Hash.copy) at the end.
 */
export class TrailerCheck {
  private readonly db = createHash('sha256');
  private held = Buffer.alloc(0);
  size = 0;

  update(chunk: Buffer): void {
    this.size += chunk.length;
    if (chunk.length >= SHA256_LEN) {
      // Whatever was held is data now; so is all of this chunk but its last 32 bytes.
      if (this.held.length > 0) this.db.update(this.held);
      this.db.update(chunk.subarray(0, chunk.length - SHA256_LEN));
      this.held = Buffer.from(chunk.subarray(chunk.length - SHA256_LEN));
      return;
    }
    const all = Buffer.concat([this.held, chunk]);
    const keep = Math.min(SHA256_LEN, all.length);
    this.db.update(all.subarray(0, all.length - keep));
    this.held = all.subarray(all.length - keep);
  }

  /** After the last chunk: the digests, or why the data is not a valid snapshot. */
  finish(): { ok: true; sha256: string; dbSha256: string } | { ok: false; reason: string } {
    const file = this.db.copy().update(this.held);
    const sha256 = file.digest('hex');
    if (this.size % 512 !== SHA256_LEN || this.held.length !== SHA256_LEN) {
      return { ok: false, reason: `sha256 checksum not found (${this.size} bytes is not a multiple of 512 plus 32)` };
    }
    const data = this.db.digest();
    if (!data.equals(this.held)) {
      return { ok: false, reason: `sha256 mismatch: the trailer says ${this.held.toString('hex')} but the data hashes to ${data.toString('hex')}` };
    }
    return { ok: true, sha256, dbSha256: data.toString('hex') };
  }
}

export async function saveSnapshot(client: EtcdClient, file: string, opts: SaveOptions = {}): Promise<SnapshotSaved> {
  if (client.endpoints.length !== 1) {
    throw new InputError(
      `snapshot save needs exactly one endpoint, got ${client.endpoints.length} (${client.endpoints.map((e) => e.text).join(', ')}); pick the member to save from with --endpoints`,
    );
  }
  const target = path.resolve(file);
  const part = `${target}.part`;
  const t0 = performance.now();

  // The revision and key count: one count-only Range just before the stream, the
  // cheapest way that works against etcd too. Writes during the stream make the
  // file newer than these numbers; the README and --help say so.
  const counted = await client.range(ALL_KEYS.key, { rangeEnd: ALL_KEYS.rangeEnd, countOnly: true });
  const endpoint = await client.activeEndpoint();

  let fh;
  try {
    fh = await open(part, 'w', 0o600);
  } catch (err) {
    throw new InputError(`cannot write ${part}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}; check the path`);
  }
  const check = new TrailerCheck();
  let ok = false;
  try {
    let received = 0;
    const flusher = new BackgroundFlush(fh);
    const chunks: AsyncIterable<SnapshotChunk> = client.snapshot();
    for await (const chunk of chunks) {
      if (chunk.blob.length === 0) continue;
      // The write runs in libuv's thread pool while this thread hashes the same bytes (both only read them).
      const written = fh.write(chunk.blob);
      check.update(chunk.blob);
      await written;
      received += chunk.blob.length;
      flusher.wrote(chunk.blob.length);
      opts.onProgress?.(received, Math.max(received, received + chunk.remainingBytes));
    }
    await flusher.done();
    const verdict = check.finish();
    if (!verdict.ok) {
      throw new EtcdClientError(
        `snapshot from ${endpoint} is not valid: ${verdict.reason}; nothing was saved: retry, or save from another member's endpoint`,
        'integrity',
        endpoint,
      );
    }
    await fh.sync();
    await fh.close();
    fh = undefined;
    await rename(part, target);
    await syncDir(path.dirname(target));
    ok = true;
    const seconds = (performance.now() - t0) / 1000;
    return {
      path: target,
      endpoint,
      size: check.size,
      sha256: verdict.sha256,
      dbSha256: verdict.dbSha256,
      revision: counted.header.revision,
      keyCount: counted.count,
      seconds,
      bytesPerSecond: seconds > 0 ? check.size / seconds : 0,
    };
  } finally {
    if (fh) await fh.close().catch(() => {});
    if (!ok) await rm(part, { force: true }).catch(() => {});
  }
}

/** Bytes written after which the file is flushed in the background while the stream goes on. */
const FLUSH_EVERY = 8 << 20;

/**
 * fdatasync every FLUSH_EVERY bytes, one at a time, in libuv's thread pool while
 * the stream goes on (the client is CPU-bound, the disk idle), so the closing
 * fsync has only the last few MiB to write. done() waits for the one in flight
 * and throws its error, if any.
 */
class BackgroundFlush {
  private unflushed = 0;
  private inFlight: Promise<void> | undefined;
  private failure: Error | undefined;

  constructor(private readonly fh: FileHandle) {}

  wrote(bytes: number): void {
    this.unflushed += bytes;
    if (this.unflushed < FLUSH_EVERY || this.inFlight) return;
    this.unflushed = 0;
    this.inFlight = this.fh.datasync().then(
      () => (this.inFlight = undefined),
      (err: Error) => ((this.failure ??= err), (this.inFlight = undefined)),
    );
  }

  async done(): Promise<void> {
    await this.inFlight;
    if (this.failure) throw this.failure;
  }
}

async function syncDir(dir: string): Promise<void> {
  const d = await open(dir, 'r');
  try {
    await d.sync();
  } finally {
    await d.close();
  }
}
