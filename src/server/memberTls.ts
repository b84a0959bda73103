// The member's TLS, from its configuration: what its https:// client, metrics
// and peer listeners serve and check, and how it dials https:// peers. Each
// listener re-reads its files when they change; a change that cannot be used
// (a certificate whose key is not there yet) is logged and the previous pair
// kept. Refused connections are logged through one rate-limited RefusalLog.
import { RefusalLog } from '../net/refusalLog.js';
import { CLIENT_TLS_FLAGS, PEER_TLS_FLAGS, WatchedTlsFiles, type TlsFlagNames } from '../net/tlsFiles.js';
import type { ServerTlsOptions } from '../net/tlsTermination.js';
import { PeerCredentials } from '../transport/peerCredentials.js';
import type { MemberTlsConfig, ServerConfig } from './config.js';
import type { Logger } from './logger.js';

export interface MemberTls {
  /** For https:// client and metrics URLs (undefined without --cert-file). */
  client?: ServerTlsOptions;
  /** For https:// peer URLs (undefined without --peer-cert-file). */
  peer?: ServerTlsOptions;
  /** How this member dials its peers. */
  peerCredentials: PeerCredentials;
}

function badChange(log: Logger, side: string): (message: string) => void {
  return (message) => log.warn({ side, error: message }, 'TLS files changed but cannot be used; still serving the previous certificate');
}

function serverOptions(t: MemberTlsConfig, flags: TlsFlagNames, listener: string, log: Logger, refusals: RefusalLog): ServerTlsOptions | undefined {
  if (!t.certFile || !t.keyFile) return undefined;
  return {
    files: new WatchedTlsFiles(t, flags, badChange(log, listener)),
    clientCertAuth: t.clientCertAuth,
    allowedCn: t.allowedCn,
    listener,
    refusals,
  };
}

/** How a member (or its start-up identity probes) dials https:// peers. */
export function peerCredentialsFor(cfg: ServerConfig, log: Logger): PeerCredentials {
  return new PeerCredentials(cfg.peerTls, cfg.peerTls.allowedCn, badChange(log, 'peer client'), cfg.peerTls.serverName);
}

export function memberTls(cfg: ServerConfig, log: Logger): MemberTls {
  const refusals = new RefusalLog(log);
  const tls: MemberTls = {
    client: serverOptions(cfg.clientTls, CLIENT_TLS_FLAGS, 'client', log, refusals),
    peer: serverOptions(cfg.peerTls, PEER_TLS_FLAGS, 'peer', log, refusals),
    peerCredentials: peerCredentialsFor(cfg, log),
  };
  // etcd's warning: certificates given for plaintext URLs are not used there.
  const httpOnly = (urls: string[]) => urls.length > 0 && urls.every((u) => u.startsWith('http:'));
  if (tls.client && httpOnly([...cfg.listenClientUrls, ...cfg.listenMetricsUrls])) {
    log.warn({ urls: cfg.listenClientUrls }, 'scheme is HTTP while key and cert files are present; ignoring key and cert files');
  }
  if (tls.peer && httpOnly(cfg.listenPeerUrls)) {
    log.warn({ urls: cfg.listenPeerUrls }, 'scheme is HTTP while peer key and cert files are present; ignoring peer key and cert files');
  }
  return tls;
}
