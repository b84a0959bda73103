// What a client dials, read and checked once: its endpoints, TLS files, timeouts
// and credentials. No grpc-js here: `snapshot save` (snapshotSave.ts) needs only
// this, and its start-up is measured against etcdctl's.
import { parseEndpoints, type Endpoint } from './endpoints.js';
import { loadTls, tlsRequested, type TlsMaterial, type TlsOptions } from './tls.js';

export interface EtcdClientOptions {
  /** endpoint strings as the user wrote them (or one comma-separated string) */
  endpoints: string | readonly string[];
  /** how long to wait for a connection (default 2000) */
  dialTimeoutMs?: number;
  /** deadline of every call (default 5000) */
  commandTimeoutMs?: number;
  tls?: TlsOptions;
  /** receives one line per dial and call when set (--debug) */
  debug?: (line: string) => void;
  /** etcd auth: the user, and its password (asked for once, when first needed, if a function) */
  credentials?: { user: string; password: string | (() => Promise<string>) };
}

/** How to reach a cluster, apart from its endpoints: what the connection flags give. */
export type ConnectionOptions = Omit<EtcdClientOptions, 'endpoints'> & { dialTimeoutMs: number; commandTimeoutMs: number };

export interface ClientTarget {
  readonly endpoints: readonly Endpoint[];
  /** The TLS files' material, when any endpoint is dialed with TLS (endpointTls). */
  readonly tls: TlsMaterial | undefined;
  /** TLS flags were given: a bare host:port is dialed with TLS too. */
  readonly bareTls: boolean;
  readonly dialTimeoutMs: number;
  readonly commandTimeoutMs: number;
  readonly credentials: EtcdClientOptions['credentials'];
  readonly debug: EtcdClientOptions['debug'];
}

/** Parses the endpoints and reads the TLS files now, so a bad path fails before any dial. */
export function resolveTarget(options: EtcdClientOptions): ClientTarget {
  const endpoints = parseEndpoints(options.endpoints);
  const bareTls = tlsRequested(options.tls);
  const tls = bareTls || endpoints.some((e) => e.scheme === 'https') ? loadTls(options.tls) : undefined;
  return {
    endpoints,
    tls,
    bareTls,
    dialTimeoutMs: options.dialTimeoutMs ?? 2000,
    commandTimeoutMs: options.commandTimeoutMs ?? 5000,
    credentials: options.credentials,
    debug: options.debug,
  };
}

/** How `ep` is dialed: with TLS for https://, and for a bare host:port when TLS flags were given (tls.ts); undefined: plaintext. */
export function endpointTls(target: ClientTarget, ep: Endpoint): TlsMaterial | undefined {
  return ep.scheme === 'https' || (ep.scheme === 'bare' && target.bareTls) ? target.tls : undefined;
}
