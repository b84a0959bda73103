// The credentials this member dials its peers with, by the scheme of the peer
// URL as etcd does: http:// in plaintext, https:// over TLS, presenting the
// peer certificate (--peer-cert-file, --peer-key-file) and checking the peer's
// against --peer-trusted-ca-file (the system roots without it, as Go loads
// them: SSL_CERT_FILE). The peer's certificate must name the URL's host, or
// `serverName` when given (etcd 3.4 sets its peer TLS ServerName to the
// --discovery-srv domain: see startup.ts). With --peer-cert-allowed-cn the
// server's certificate must carry that CN too (etcd 3.4 applies the check to
// both ends, whatever the server name). The files are re-read when they
// change; `generation` tells a sender holding a channel that a new one would
// present the new certificate.
import tls from 'node:tls';
import { systemRoots } from '../net/systemRoots.js';
import { commonName, PEER_TLS_FLAGS, WatchedTlsFiles, type TlsFiles } from '../net/tlsFiles.js';

export class PeerCredentials {
  private readonly files: WatchedTlsFiles | undefined;
  private roots: string | undefined;

  /** No files: plaintext to http:// peers, TLS without a client certificate to https:// ones. */
  constructor(
    files?: TlsFiles,
    private readonly allowedCn?: string,
    onBadChange?: (message: string) => void,
    private readonly serverName?: string,
  ) {
    this.files = files && (files.certFile || files.trustedCaFile) ? new WatchedTlsFiles(files, PEER_TLS_FLAGS, onBadChange) : undefined;
  }

  /** Changes whenever the files were read again. */
  generation(): number {
    this.files?.refresh();
    return this.files?.generation ?? 0;
  }

  /** What a TLS connection to `url` presents and checks: undefined for http:// URLs. */
  tlsFor(url: string): tls.ConnectionOptions | undefined {
    if (!url.startsWith('https:')) return undefined;
    this.generation();
    const m = this.files?.current() ?? {};
    const check = this.serverIdentityCheck();
    return {
      ca: m.ca ?? (this.roots ??= systemRoots()),
      key: m.key,
      cert: m.cert,
      ...(this.serverName ? { servername: this.serverName } : {}),
      ...(check ? { checkServerIdentity: check } : {}),
    };
  }

  /** With --peer-cert-allowed-cn, the server's certificate must carry that CN as well as match the host (or server name). */
  private serverIdentityCheck(): ((host: string, cert: tls.PeerCertificate) => Error | undefined) | undefined {
    const allowed = this.allowedCn;
    if (!allowed) return undefined;
    return (host, cert) => {
      const err = tls.checkServerIdentity(host, cert);
      if (err) return err;
      const cn = commonName(cert.subject);
      return cn === allowed ? undefined : new Error(`peer certificate CN "${cn}" is not the allowed CN "${allowed}" (--peer-cert-allowed-cn)`);
    };
  }
}
