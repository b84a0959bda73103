// Plain bytes (a snapshot, a segment) to stored bytes and back: compressed
// (gzip level ≤ 3 by default, brotli quality ≤ 5 on request: both read by every
// Node Lifeboat runs on), then optionally encrypted to age recipients. Both
// directions stream, and count and hash both sides, so a 1M-key full is never
// held in memory and a reader can check the stored and the plain sha256 of the
// manifest. The identity (private key) is only ever given to a reader.
import { createHash, type Hash } from 'node:crypto';
import fs from 'node:fs';
import { PassThrough, Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import zlib from 'node:zlib';
import { tempPathFor } from '../common/durableFile.js';
import type { Compression } from './layout.js';
import type { StoredBytes } from './manifest.js';

export const GZIP_LEVEL = 3;
export const BROTLI_QUALITY = 5;

/** Counts and hashes what passes through. */
class Tap extends Transform {
  readonly hash: Hash = createHash('sha256');
  size = 0;
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.hash.update(chunk);
    this.size += chunk.length;
    cb(null, chunk);
  }
}

function compressor(c: Compression): Transform | undefined {
  if (c === 'gzip') return zlib.createGzip({ level: GZIP_LEVEL });
  if (c === 'brotli') return zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY } });
  return undefined;
}

function decompressor(c: Compression): Transform | undefined {
  if (c === 'gzip') return zlib.createGunzip();
  if (c === 'brotli') return zlib.createBrotliDecompress();
  return undefined;
}

type Stage = NodeJS.ReadableStream | NodeJS.WritableStream | NodeJS.ReadWriteStream;

async function ageEncrypt(input: Readable, recipients: readonly string[]): Promise<Readable> {
  const age = await import('age-encryption');
  const e = new age.Encrypter();
  for (const r of recipients) e.addRecipient(r);
  const out = await e.encrypt(Readable.toWeb(input) as unknown as ReadableStream<Uint8Array>);
  return Readable.fromWeb(out);
}

async function ageDecrypt(input: Readable, identities: readonly string[]): Promise<Readable> {
  const age = await import('age-encryption');
  const d = new age.Decrypter();
  for (const i of identities) d.addIdentity(i);
  const out = await d.decrypt(Readable.toWeb(input) as unknown as ReadableStream<Uint8Array>);
  return Readable.fromWeb(out);
}

export interface EncodeOptions {
  compression: Compression;
  /** age recipients ("age1…"); none: not encrypted */
  recipients: readonly string[];
}

/** Encode plain bytes (a buffer or a file) into `outFile` (written to a temp path, renamed); returns what the manifest records. */
export async function encodeObject(input: Buffer | string, outFile: string, o: EncodeOptions): Promise<Omit<StoredBytes, 'object'>> {
  const plain = new Tap();
  const stored = new Tap();
  const tmp = tempPathFor(outFile);
  try {
    const source = typeof input === 'string' ? fs.createReadStream(input) : Readable.from([input]);
    const comp = compressor(o.compression);
    const pass = new PassThrough();
    const plainSide = pipeline([source, plain, ...(comp ? [comp] : []), pass] as [NodeJS.ReadableStream, ...NodeJS.WritableStream[]]);
    const body = o.recipients.length > 0 ? await ageEncrypt(pass, o.recipients) : pass;
    await Promise.all([plainSide, pipeline(body, stored, fs.createWriteStream(tmp, { flags: 'wx' }))]);
    fs.renameSync(tmp, outFile);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  return {
    compression: o.compression,
    recipients: [...o.recipients],
    plainSize: plain.size,
    plainSha256: plain.hash.digest('hex'),
    storedSize: stored.size,
    storedSha256: stored.hash.digest('hex'),
  };
}

export class ObjectIntegrityError extends Error {
  constructor(
    readonly object: string,
    why: string,
  ) {
    super(`${object}: ${why}`);
    this.name = 'ObjectIntegrityError';
  }
}

/**
 * Decode a stored object (a downloaded file) into `outFile`, checking the stored
 * bytes' size and sha256 before anything is decrypted and the plain bytes' after;
 * `identities`: age identities ("AGE-SECRET-KEY-1…") when the object is encrypted.
 */
export async function decodeObject(storedFile: string, outFile: string, m: StoredBytes, identities: readonly string[] = []): Promise<void> {
  const st = fs.statSync(storedFile);
  if (st.size !== m.storedSize) throw new ObjectIntegrityError(m.object, `stored size ${st.size} bytes, its manifest says ${m.storedSize}`);
  const storedHash = createHash('sha256');
  await pipeline(fs.createReadStream(storedFile), storedHash);
  const storedSha = storedHash.digest('hex');
  if (storedSha !== m.storedSha256) throw new ObjectIntegrityError(m.object, `sha256 ${storedSha} of the stored bytes, its manifest says ${m.storedSha256}`);
  if (m.recipients.length > 0 && identities.length === 0)
    throw new ObjectIntegrityError(m.object, `encrypted to ${m.recipients.join(', ')}; give the age identity (--identity-file)`);
  const plain = new Tap();
  const tmp = tempPathFor(outFile);
  try {
    let s: Readable = fs.createReadStream(storedFile);
    if (m.recipients.length > 0) s = await ageDecrypt(s, identities);
    const stages: Stage[] = [s];
    const d = decompressor(m.compression);
    if (d) stages.push(d);
    stages.push(plain, fs.createWriteStream(tmp, { flags: 'wx' }));
    await pipeline(stages as [NodeJS.ReadableStream, ...NodeJS.WritableStream[]]);
    const sha = plain.hash.digest('hex');
    if (plain.size !== m.plainSize || sha !== m.plainSha256)
      throw new ObjectIntegrityError(m.object, `plain content ${plain.size} bytes sha256 ${sha}, its manifest says ${m.plainSize} bytes ${m.plainSha256}`);
    fs.renameSync(tmp, outFile);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    if (e instanceof ObjectIntegrityError) throw e;
    throw new ObjectIntegrityError(m.object, `cannot decode: ${(e as Error).message}`);
  }
}
