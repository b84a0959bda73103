// Transport security for client connections.
//
// - `https://` endpoints always use TLS; `http://` never; a bare `host:port` uses
//   TLS when any TLS option is given (so `--endpoints 10.0.0.1:2379 --cacert ca.pem`
//   works as users expect), plaintext otherwise.
// - `caFile` replaces the system roots; without it Node's bundled roots are used.
// - `certFile` + `keyFile` present a client certificate (etcd's --client-cert-auth).
// - `insecureSkipVerify` accepts any server certificate: no chain check
//   (rejectUnauthorized: false) and no host-name check (checkServerIdentity returns
//   undefined). Traffic is still encrypted, but the server is not authenticated, so
//   use it only for test clusters.
import { readFileSync } from 'node:fs';
import { createSecureContext, type ConnectionOptions } from 'node:tls';
import * as grpc from '#grpc-js';
import { opensslReason } from './errors.js';
import { InputError } from '../common/errors.js';

export interface TlsOptions {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  insecureSkipVerify?: boolean;
}

export function tlsRequested(tls: TlsOptions | undefined): boolean {
  return !!tls && !!(tls.caFile || tls.certFile || tls.keyFile || tls.insecureSkipVerify);
}

function readPem(file: string, flag: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'is a directory' : String(code ?? err);
    throw new InputError(`cannot read ${flag} ${file}: ${why}`);
  }
}

/** The TLS files, read and checked once, and what each transport makes of them. */
export interface TlsMaterial {
  /** for grpc-js channels */
  readonly credentials: grpc.ChannelCredentials;
  /** for node:tls and node:http2 (the snapshot stream): the same files and the same checks */
  readonly connect: ConnectionOptions;
}

/** Read the TLS files (once, here) and build both forms of the same settings. */
export function loadTls(tls: TlsOptions = {}): TlsMaterial {
  if (!!tls.certFile !== !!tls.keyFile) {
    throw new InputError(`--cert and --key go together: ${tls.certFile ? '--key' : '--cert'} is missing`);
  }
  const ca = tls.caFile ? readPem(tls.caFile, '--cacert') : null;
  const cert = tls.certFile ? readPem(tls.certFile, '--cert') : null;
  const key = tls.keyFile ? readPem(tls.keyFile, '--key') : null;
  const verify: grpc.VerifyOptions = tls.insecureSkipVerify ? { rejectUnauthorized: false, checkServerIdentity: () => undefined } : {};
  try {
    // One context for both: without --cacert, Node's bundled roots (as grpc-js's createSsl).
    const secureContext = createSecureContext({ ...(ca ? { ca } : {}), ...(cert && key ? { cert, key } : {}) });
    return { credentials: grpc.credentials.createFromSecureContext(secureContext, verify), connect: { secureContext, ...verify } };
  } catch (err) {
    const msg = opensslReason((err as Error).message.replace(/\s+/g, ' '));
    if (/key values mismatch/.test(msg)) throw new InputError(`--cert ${tls.certFile} and --key ${tls.keyFile} do not belong together (key values mismatch)`);
    throw new InputError(`invalid TLS files (--cacert/--cert/--key): ${msg}`);
  }
}
