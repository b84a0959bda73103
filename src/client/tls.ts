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
import { createSecureContext, type SecureContext } from 'node:tls';
import { opensslReason } from './errors.js';
import { InputError } from '../common/errors.js';
import { readPem } from '../common/readPem.js';

export interface TlsOptions {
  caFile?: string;
  certFile?: string;
  keyFile?: string;
  insecureSkipVerify?: boolean;
}

export function tlsRequested(tls: TlsOptions | undefined): boolean {
  return !!tls && !!(tls.caFile || tls.certFile || tls.keyFile || tls.insecureSkipVerify);
}

const inputError = (message: string) => new InputError(message);

/** How a server certificate is checked: as Node's tls.connect takes it, and grpc-js's VerifyOptions. */
export interface ServerVerify {
  rejectUnauthorized?: boolean;
  checkServerIdentity?: () => undefined;
}

/**
 * The TLS files, read and checked once: for node:http2 (snapshot save) as
 * `{ secureContext, ...verify }`, and for grpc-js channels through
 * createFromSecureContext (connection.ts), with the same checks. No grpc-js here:
 * `snapshot save` loads none.
 */
export interface TlsMaterial {
  readonly secureContext: SecureContext;
  readonly verify: ServerVerify;
}

/** Read the TLS files (once, here) and build the settings every transport uses. */
export function loadTls(tls: TlsOptions = {}): TlsMaterial {
  if (!!tls.certFile !== !!tls.keyFile) {
    throw new InputError(`--cert and --key go together: ${tls.certFile ? '--key' : '--cert'} is missing`);
  }
  const ca = tls.caFile ? readPem(tls.caFile, '--cacert', inputError) : null;
  const cert = tls.certFile ? readPem(tls.certFile, '--cert', inputError) : null;
  const key = tls.keyFile ? readPem(tls.keyFile, '--key', inputError) : null;
  const verify: ServerVerify = tls.insecureSkipVerify ? { rejectUnauthorized: false, checkServerIdentity: () => undefined } : {};
  try {
    // One context for both: without --cacert, Node's bundled roots (as grpc-js's createSsl).
    const secureContext = createSecureContext({ ...(ca ? { ca } : {}), ...(cert && key ? { cert, key } : {}) });
    return { secureContext, verify };
  } catch (err) {
    const msg = opensslReason((err as Error).message.replace(/\s+/g, ' '));
    if (/key values mismatch/.test(msg)) throw new InputError(`--cert ${tls.certFile} and --key ${tls.keyFile} do not belong together (key values mismatch)`);
    throw new InputError(`invalid TLS files (--cacert/--cert/--key): ${msg}`);
  }
}
