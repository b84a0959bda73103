// `snapshot save`: stream Maintenance.Snapshot into FILE.part, check the trailing
// sha256 that etcd appends (sha256 of every byte before it), fsync, rename to
// FILE, fsync the directory. A failure removes FILE.part and leaves FILE as it was.
// The calls go on one HTTP/2 connection of our own (http2Calls.ts), not through
// grpc-js, which `lifeboat snapshot save` then never loads.
import { createHash } from 'node:crypto';
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import type http2 from 'node:http2';
import path from 'node:path';
import { EtcdText } from '../common/etcdErrorTexts.js';
import { EtcdClientError, callError } from './errors.js';
import { peerPortError } from './peerPort.js';
import { InputError } from '../common/errors.js';
import { formatDuration } from '../common/durations.js';
import { ProtoReader, ProtoWriter } from '../common/protobufWire.js';
import { dialSession } from './http2Calls.js';
import { unaryCall } from '../net/grpcClient.js';
import { ALL_KEYS } from './keyRange.js';
import { readSnapshotStream, StreamStalled } from './snapshotStream.js';
import { endpointTls, type ClientTarget } from './target.js';
import type { SnapshotChunk } from './types.js';
import { monotonicMs } from '../common/clock.js';

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

export async function saveSnapshot(target: ClientTarget, file: string, opts: SaveOptions = {}): Promise<SnapshotSaved> {
  if (target.endpoints.length !== 1) {
    throw new InputError(
      `snapshot save needs exactly one endpoint, got ${target.endpoints.length} (${target.endpoints.map((e) => e.text).join(', ')}); pick the member to save from with --endpoints`,
    );
  }
  const ep = target.endpoints[0];
  const endpoint = ep.text;
  const out = path.resolve(file);
  const part = `${out}.part`;
  const t0 = monotonicMs();
  const dialStart = Date.now();
  const session = await dialSession(ep, endpointTls(target, ep), target.dialTimeoutMs).catch(async (e: Error) => {
    target.debug?.(`dial ${endpoint}: ${e.message}`);
    // A TLS failure at a member's peer port (etcd's closes a TLS connection that brings gRPC): say it is one.
    if (e instanceof EtcdClientError && e.kind === 'tls') throw (await peerPortError(ep, endpointTls(target, ep))) ?? e;
    throw e;
  });
  target.debug?.(`dial ${endpoint}: connected in ${Date.now() - dialStart}ms`);
  let fh;
  const check = new TrailerCheck();
  let ok = false;
  try {
    const metadata = await authMetadata(session, target);
    // The revision and key count: one count-only Range just before the stream, the
    // cheapest way that works against etcd too. Writes during the stream make the
    // file newer than these numbers; the README and --help say so.
    const counted = await call(target, 'KV.Range', () => unaryCall(session, '/etcdserverpb.KV/Range', COUNT_ALL, metadata, target.commandTimeoutMs)).then(
      countOf,
    );
    try {
      fh = await open(part, 'w', 0o600);
    } catch (err) {
      throw new InputError(`cannot write ${part}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}; check the path`);
    }
    let received = 0;
    const flusher = new BackgroundFlush(fh);
    const chunks: AsyncIterable<SnapshotChunk> = readSnapshotStream({ session, metadata, inactivityMs: target.commandTimeoutMs });
    target.debug?.(`→ Maintenance.Snapshot ${endpoint}`);
    try {
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
    } catch (err) {
      if (err instanceof StreamStalled) {
        throw new EtcdClientError(
          `${endpoint}: snapshot stream stalled: no data for ${formatDuration(target.commandTimeoutMs)}; raise --command-timeout or check the member`,
          'timeout',
          endpoint,
        );
      }
      throw callError(err, endpoint, target.commandTimeoutMs);
    }
    target.debug?.(`← Maintenance.Snapshot ${endpoint} OK (${Math.round(monotonicMs() - t0)}ms)`);
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
    await rename(part, out);
    await syncDir(path.dirname(out));
    ok = true;
    const seconds = (monotonicMs() - t0) / 1000;
    return {
      path: out,
      endpoint,
      size: check.size,
      sha256: verdict.sha256,
      dbSha256: verdict.dbSha256,
      revision: counted.revision,
      keyCount: counted.count,
      seconds,
      bytesPerSecond: seconds > 0 ? check.size / seconds : 0,
    };
  } finally {
    if (fh) await fh.close().catch(() => {});
    if (!ok) await rm(part, { force: true }).catch(() => {});
    session.close();
  }
}

/** RangeRequest { key = 1, range_end = 2, count_only = 9 } for every key. */
const COUNT_ALL = new ProtoWriter(16).bytes(1, ALL_KEYS.key).bytes(2, ALL_KEYS.rangeEnd).bool(9, true).finish();

/** RangeResponse { header = 1 { revision = 3 }, count = 4 }: the revision and the count. */
function countOf(message: Buffer): { revision: number; count: number } {
  let revision = 0;
  let count = 0;
  for (const r = new ProtoReader(message); !r.done;) {
    const { field, wire } = r.tag();
    if (field === 4 && wire === 0) count = r.int64Number();
    else if (field === 1 && wire === 2) {
      for (const h = new ProtoReader(r.bytes()); !h.done;) {
        const t = h.tag();
        if (t.field === 3 && t.wire === 0) revision = h.int64Number();
        else h.skip(t.wire);
      }
    } else r.skip(wire);
  }
  return { revision, count };
}

/** The call metadata: with credentials, Auth.Authenticate's token (etcd's metadata `token`), as EtcdClient sends it. */
async function authMetadata(session: http2.ClientHttp2Session, target: ClientTarget): Promise<Record<string, string>> {
  const creds = target.credentials;
  if (!creds) return {};
  const password = typeof creds.password === 'string' ? creds.password : await creds.password();
  // AuthenticateRequest { name = 1, password = 2 } → AuthenticateResponse { header = 1, token = 2 }
  const request = new ProtoWriter(64).string(1, creds.user).string(2, password).finish();
  let response: Buffer;
  try {
    response = await call(target, `Auth.Authenticate (user ${creds.user})`, () =>
      unaryCall(session, '/etcdserverpb.Auth/Authenticate', request, {}, target.commandTimeoutMs),
    );
  } catch (e) {
    // Auth is off: no token, as clientv3 takes it.
    if (e instanceof EtcdClientError && e.serverMessage === EtcdText.authNotEnabled) return {};
    throw e;
  }
  for (const r = new ProtoReader(response); !r.done;) {
    const { field, wire } = r.tag();
    if (field === 2 && wire === 2) {
      const token = r.string();
      return token ? { token } : {};
    }
    r.skip(wire);
  }
  return {};
}

/** One unary call, logged as EtcdClient logs its calls (--debug), its failure as callError's one line. */
async function call(target: ClientTarget, name: string, run: () => Promise<Buffer>): Promise<Buffer> {
  const endpoint = target.endpoints[0].text;
  const started = Date.now();
  target.debug?.(`→ ${name} ${endpoint}`);
  try {
    const res = await run();
    target.debug?.(`← ${name} ${endpoint} OK (${Date.now() - started}ms)`);
    return res;
  } catch (e) {
    const err = callError(e, endpoint, target.commandTimeoutMs);
    target.debug?.(`← ${name} ${endpoint} (${Date.now() - started}ms): ${err.message}`);
    throw err;
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
