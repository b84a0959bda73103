// The client's errors: every one is a single line that names the endpoint (when
// there is one), says what went wrong and what to try. Commands let them escape;
// the CLI turns `InputError` into exit 2 and everything else here into exit 1.
import type { ServiceError } from '#grpc-js';
import { GrpcCode } from '../net/grpcCode.js';
import { AuthStoreText, EtcdText } from '../common/etcdErrorTexts.js';
import { formatDuration } from '../common/durations.js';

export type ClientErrorKind =
  /** the endpoint could not be connected to within the dial timeout */
  | 'unreachable'
  /** connected, but the TLS handshake or certificate checks failed */
  | 'tls'
  /** connected, but no answer within the command timeout */
  | 'timeout'
  /** the server answered with an error status (etcd's own error texts) */
  | 'server'
  /** a response failed an integrity check (snapshot digest) */
  | 'integrity';

export class EtcdClientError extends Error {
  constructor(
    message: string,
    readonly kind: ClientErrorKind,
    readonly endpoint?: string,
    /** gRPC status code, when the error came from a call */
    readonly grpcCode?: number,
    /** the server's own message (e.g. "etcdserver: member not found"), for `server` errors */
    readonly serverMessage?: string,
  ) {
    super(message);
    this.name = 'EtcdClientError';
  }
}

// Hints appended to a few etcd errors whose next step is not obvious from the text.
const SERVER_HINTS: Array<[string, string]> = [
  [EtcdText.learnerNotSupported, "use a voting member's endpoint"],
  [EtcdText.unhealthy, 'every voting member must have been connected for the last 5s; retry shortly'],
  [EtcdText.notEnoughStartedMembers, 'start the members added earlier first'],
  [EtcdText.learnerNotReady, 'wait until the learner has caught up, then retry'],
  [EtcdText.tooManyLearners, 'promote or remove the existing learner first'],
  [EtcdText.compacted, 'use a revision above the compaction point'],
  [EtcdText.futureRev, 'use a revision at or below the current one'],
  [EtcdText.noSpace, 'compact and defragment, then `lifeboat alarm disarm`'],
];

/**
 * The server's answers that say these credentials, or the lack of them, will not do
 * (no user, a wrong password, a user without the permission): no wait or retry cures
 * them. The `auth:` texts are those etcd 3.4's Snapshot, Hash and HashKV return unconverted.
 */
const AUTH_REFUSALS = new Set<string>([
  EtcdText.userEmpty,
  EtcdText.authFailed,
  EtcdText.permissionDenied,
  AuthStoreText.userEmpty,
  AuthStoreText.authFailed,
  AuthStoreText.noPasswordUser,
  AuthStoreText.permissionDenied,
]);

/** Whether `e` is a server's refusal of the caller's credentials (see AUTH_REFUSALS). */
export function isAuthRefusal(e: unknown): e is EtcdClientError {
  return e instanceof EtcdClientError && e.kind === 'server' && AUTH_REFUSALS.has(e.serverMessage ?? '');
}

/** "Last error: Error: connect ECONNREFUSED 127.0.0.1:1. Resolution note: " → a short reason. */
export function connectReason(details: string): string {
  const m = /Last error: (?:Error: )?(.*?)(?:\. Resolution note:.*)?$/s.exec(details);
  const raw = opensslReason((m ? m[1] : details).trim().replace(/\s*\(\d{4}-\d\d-\d\dT[\d:.]+Z\)$/, ''));
  if (/ECONNREFUSED/.test(raw)) return 'connection refused';
  if (/ENOTFOUND|EAI_AGAIN/.test(raw)) return 'host not found';
  if (/EHOSTUNREACH|ENETUNREACH/.test(raw)) return 'no route to host';
  if (/ETIMEDOUT/.test(raw)) return 'connect timed out';
  if (/ECONNRESET|socket hang up/.test(raw)) return 'connection reset';
  // grpc-js: the socket closed before HTTP/2 was set up, e.g. plaintext to a TLS port.
  if (/^Failed to connect$/.test(raw)) return 'the server closed the connection; if it serves TLS, use https://';
  return raw.replace(/\s+/g, ' ');
}

/** "80FC…:error:0A000412:SSL routines:ssl3_read_bytes:sslv3 alert bad certificate:../x.c:1601:SSL alert number 42" → "sslv3 alert bad certificate". */
export function opensslReason(text: string): string {
  const m = /(?:^|[\s:])(?:[0-9A-F]+:)?error:[0-9A-F]+:[^:]*:[^:]*:([^:]+)/.exec(text);
  return m ? m[1].trim() : text;
}

const TLS_PATTERN =
  /certificate|self[- ]signed|SSL|TLS|tlsv1|alert|handshake|CERT_|unable to verify|unable to get local issuer|wrong version number|ERR_TLS|hostname\/IP does not match/i;

/** Whether a connection failure reason is about TLS (so the hint points at the TLS flags). */
export function isTlsReason(reason: string): boolean {
  return TLS_PATTERN.test(reason) && !/ECONNREFUSED/.test(reason);
}

function tlsHint(reason: string): string {
  if (
    /certificate required|alert bad certificate|alert unknown ca|alert certificate unknown|peer did not return a certificate|accept the client certificate/i.test(
      reason,
    )
  ) {
    return 'the server wants a client certificate it trusts: check --cert and --key';
  }
  if (/wrong version number|packet length too long|http2|unexpected eof|disconnected before secure TLS connection/i.test(reason)) {
    return 'the endpoint may not speak TLS: use http:// or drop the TLS flags';
  }
  if (/does not match|altnames/i.test(reason)) {
    return 'the server certificate does not name this host: use the host it names, or --insecure-skip-tls-verify';
  }
  return 'check --cacert (or --insecure-skip-tls-verify for a test cluster)';
}

/** The connection to `endpoint` could not be established within `dialTimeoutMs`. */
export function unreachableError(endpoint: string, dialTimeoutMs: number, reason: string | undefined): EtcdClientError {
  // Node 24 and later end a chain error with advice for node's own flags, which a lifeboat user cannot pass: the hint below says what to do.
  const why = (reason ?? 'timed out').replace(/; if the root CA is installed locally, try running Node\.js with --use-system-ca$/, '');
  if (isTlsReason(why)) {
    return new EtcdClientError(`TLS handshake with ${endpoint} failed (${why}); ${tlsHint(why)}`, 'tls', endpoint);
  }
  return new EtcdClientError(`cannot reach ${endpoint} within ${formatDuration(dialTimeoutMs)} (${why}); check --endpoints`, 'unreachable', endpoint);
}

/** Map a failed gRPC call to one line naming the endpoint. */
export function callError(err: unknown, endpoint: string, commandTimeoutMs: number): EtcdClientError {
  if (err instanceof EtcdClientError) return err;
  const e = err as Partial<ServiceError> & { message?: string };
  const code: number | undefined = typeof e.code === 'number' ? e.code : undefined;
  const details = (typeof e.details === 'string' && e.details !== '' ? e.details : (e.message ?? String(err))).replace(/\s+/g, ' ').trim();

  if (code === GrpcCode.DeadlineExceeded) {
    return new EtcdClientError(
      `${endpoint}: no answer within ${formatDuration(commandTimeoutMs)} (deadline exceeded); raise --command-timeout or check the member's health`,
      'timeout',
      endpoint,
      code,
    );
  }
  if (code === GrpcCode.Unavailable && !details.startsWith('etcdserver:')) {
    const reason = connectReason(details);
    if (isTlsReason(reason)) {
      return new EtcdClientError(`${endpoint}: TLS: ${reason}; ${tlsHint(reason)}`, 'tls', endpoint, code);
    }
    return new EtcdClientError(`${endpoint}: connection lost (${reason}); check --endpoints`, 'unreachable', endpoint, code);
  }
  if (code === GrpcCode.Unimplemented) {
    return new EtcdClientError(`${endpoint}: ${details} (is this an etcd v3 endpoint?)`, 'server', endpoint, code, details);
  }
  const hint = SERVER_HINTS.find(([text]) => details === text)?.[1];
  return new EtcdClientError(`${endpoint}: ${details}${hint ? `; ${hint}` : ''}`, 'server', endpoint, code, details);
}
