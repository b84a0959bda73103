// A member's TLS files (certificate, key, trusted CA), checked as a whole and
// re-read when they change. etcd re-reads its key pair at every handshake; we
// stat the files at every accepted connection (and before every outgoing dial)
// and read them again only when one changed (inode, size or mtime), so a
// certificate rotated in place or by rename is served to the next connection
// without a restart. A half-rotated set (a new certificate whose key is not
// there yet) is never used: the previous good set stays in service until the
// files make a valid pair again. Depends only on node built-ins and src/common.
import { statSync } from 'node:fs';
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { readPem } from '../common/readPem.js';

export interface TlsFiles {
  certFile?: string;
  keyFile?: string;
  trustedCaFile?: string;
}

/** The flag that names each file, for messages: `--cert-file` or `--peer-cert-file`, ... */
export interface TlsFlagNames {
  cert: string;
  key: string;
  ca: string;
}

export const CLIENT_TLS_FLAGS: TlsFlagNames = { cert: '--cert-file', key: '--key-file', ca: '--trusted-ca-file' };
export const PEER_TLS_FLAGS: TlsFlagNames = { cert: '--peer-cert-file', key: '--peer-key-file', ca: '--peer-trusted-ca-file' };

/** What is wrong with a set of TLS files, in one line naming the flag and the file. */
export class TlsFilesError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TlsFilesError';
  }
}

export interface TlsMaterial {
  cert?: Buffer;
  key?: Buffer;
  ca?: Buffer;
}

const filesError = (message: string) => new TlsFilesError(message);

/** OpenSSL's reason without its error-stack prefix: "error:05800074:x509 certificate routines::key values mismatch" → "key values mismatch". */
function reason(e: unknown): string {
  const m = (e as Error).message.replace(/\s+/g, ' ');
  return m.replace(/^error:[0-9A-Fa-f]+:[^:]*:[^:]*:/, '');
}

/**
 * Reads the files and checks that they make a usable set: a certificate and its
 * own key (both or neither), and a CA file that holds at least one certificate.
 * Throws TlsFilesError (one line) otherwise.
 */
export function loadTlsFiles(files: TlsFiles, flags: TlsFlagNames): TlsMaterial {
  if (!!files.certFile !== !!files.keyFile) {
    throw new TlsFilesError(`${flags.cert} and ${flags.key} go together: ${files.certFile ? flags.key : flags.cert} is missing`);
  }
  const out: TlsMaterial = {};
  if (files.certFile && files.keyFile) {
    out.cert = readPem(files.certFile, flags.cert, filesError);
    out.key = readPem(files.keyFile, flags.key, filesError);
    try {
      new X509Certificate(out.cert);
    } catch (e) {
      throw new TlsFilesError(`${flags.cert} ${files.certFile} holds no PEM certificate (${reason(e)})`);
    }
    try {
      tls.createSecureContext({ cert: out.cert, key: out.key });
    } catch (e) {
      const why = reason(e);
      if (/key values mismatch/.test(why)) {
        throw new TlsFilesError(`${flags.cert} ${files.certFile} and ${flags.key} ${files.keyFile} do not belong together (key values mismatch)`);
      }
      throw new TlsFilesError(`${flags.key} ${files.keyFile}: ${why}`);
    }
  }
  if (files.trustedCaFile) {
    out.ca = readPem(files.trustedCaFile, flags.ca, filesError);
    try {
      new X509Certificate(out.ca);
      tls.createSecureContext({ ca: out.ca });
    } catch (e) {
      throw new TlsFilesError(`${flags.ca} ${files.trustedCaFile} holds no PEM certificate (${reason(e)})`);
    }
  }
  return out;
}

/** The common name in a certificate's subject ('' if none). */
export function commonName(subject: string | { CN?: string | string[] } | undefined): string {
  if (!subject) return '';
  if (typeof subject === 'string') return /(?:^|\n|, ?)CN=([^\n,]*)/.exec(subject)?.[1] ?? '';
  const cn = subject.CN;
  return Array.isArray(cn) ? (cn[0] ?? '') : (cn ?? '');
}

function signature(files: TlsFiles): string | undefined {
  const parts: string[] = [];
  for (const f of [files.certFile, files.keyFile, files.trustedCaFile]) {
    if (!f) {
      parts.push('-');
      continue;
    }
    try {
      const s = statSync(f, { bigint: true });
      parts.push(`${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`);
    } catch {
      return undefined; // a file being replaced: keep what we have
    }
  }
  return parts.join('|');
}

/**
 * A set of TLS files kept current: `refresh()` (cheap: three stats) re-reads
 * them when one changed and reports whether new material is now in use.
 * `generation` counts the loads, so users of the material know when to rebuild.
 */
export class WatchedTlsFiles {
  private material: TlsMaterial;
  private loadedSig: string | undefined;
  private failedSig: string | undefined;
  generation = 0;

  constructor(
    readonly files: TlsFiles,
    readonly flags: TlsFlagNames,
    /** A changed set that cannot be used (the old one stays in service); called once per change. */
    private readonly onBadChange: (message: string) => void = () => undefined,
  ) {
    this.loadedSig = signature(files);
    this.material = loadTlsFiles(files, flags);
  }

  current(): TlsMaterial {
    return this.material;
  }

  refresh(): boolean {
    const sig = signature(this.files);
    if (sig === undefined || sig === this.loadedSig || sig === this.failedSig) return false;
    try {
      this.material = loadTlsFiles(this.files, this.flags);
    } catch (e) {
      this.failedSig = sig;
      this.onBadChange((e as Error).message);
      return false;
    }
    this.loadedSig = sig;
    this.failedSig = undefined;
    this.generation++;
    return true;
  }
}
