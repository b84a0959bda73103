// Secrets in the audit log: a secret value is recorded as `<redacted> hmac:` and
// 16 hex digits, never as itself.
//
// Why HMAC-SHA256 with a random key kept beside the log (DB.secret-key, mode 0600)
// and never in it: the digest must tell two values apart (same value, same
// digest, across the runs of one log) without letting whoever holds the log or an
// export test guesses of a short password offline. A plain or salted hash stored
// with the log allows exactly that (the salt travels with it; scrypt only slows
// each guess down). A keyed hash does not: without the key file nothing in the
// log or an export can be checked against a guess. Truncated to 64 bits: plenty
// to tell an operator's few values apart, and no use as a password hash.
import { createHmac, randomBytes } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';

export const SECRET_MARK = '<redacted>';

const DIGEST_PATTERN = /^<redacted> hmac:[0-9a-f]{16}$/;
const KEY_BYTES = 32;

/** Whether `v` is a recorded secret (what `digest` returns). */
export function isSecretDigest(v: unknown): boolean {
  return typeof v === 'string' && DIGEST_PATTERN.test(v);
}

/** The key file of the audit log at `dbPath`. */
export function secretKeyPath(dbPath: string): string {
  return `${dbPath}.secret-key`;
}

/** The log's key: read, or made once (0600, fsynced) by whichever process gets there first. */
export function loadOrCreateSecretKey(dbPath: string): Buffer {
  const file = secretKeyPath(dbPath);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const key = readFileSync(file);
      if (key.length === KEY_BYTES) return key;
      throw new Error(`${file} is not a Lifeboat secret key (${key.length} bytes, expected ${KEY_BYTES}); move it away to start a new one`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    let fd: number;
    try {
      fd = openSync(file, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue; // another process made it: read that one
      throw err;
    }
    const key = randomBytes(KEY_BYTES);
    try {
      writeSync(fd, key);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    return key;
  }
  throw new Error(`cannot read or create ${file}`);
}

/** The recorded form of a secret value, with the log's key. */
export function secretDigest(key: Buffer, value: string): string {
  return `${SECRET_MARK} hmac:${createHmac('sha256', key).update(value, 'utf8').digest('hex').slice(0, 16)}`;
}

/** Shorter secrets are replaced only where they are a whole value, not inside other text: they would match by chance. */
const MIN_INNER_LENGTH = 4;

/**
 * Replaces secret values in anything about to be written or shown: a string
 * equal to a secret becomes `mask(secret)`, and so does each occurrence inside
 * longer text (secrets of 4 characters and more).
 */
export class SecretScrubber {
  private readonly secrets = new Set<string>();
  private ordered: string[] = [];

  constructor(private readonly mask: (secret: string) => string) {}

  add(value: string): void {
    if (value === '' || this.secrets.has(value)) return;
    this.secrets.add(value);
    // The longest first, so a secret containing another is replaced whole.
    this.ordered = [...this.secrets].sort((a, b) => b.length - a.length);
  }

  get empty(): boolean {
    return this.secrets.size === 0;
  }

  text(s: string): string {
    if (this.secrets.has(s)) return this.mask(s);
    let out = s;
    for (const v of this.ordered) if (v.length >= MIN_INNER_LENGTH && out.includes(v)) out = out.split(v).join(this.mask(v));
    return out;
  }

  /** A copy of `value` with every string scrubbed (plain objects and arrays walked; other values kept). */
  value<T>(value: T): T {
    if (this.secrets.size === 0) return value;
    return this.walk(value) as T;
  }

  private walk(value: unknown): unknown {
    if (typeof value === 'string') return this.text(value);
    if (Array.isArray(value)) return value.map((v) => this.walk(v));
    const proto: unknown = value !== null && typeof value === 'object' ? Object.getPrototypeOf(value) : undefined;
    if (proto === Object.prototype || proto === null) {
      return Object.fromEntries(Object.entries(value as object).map(([k, v]) => [k, this.walk(v)]));
    }
    return value;
  }
}
