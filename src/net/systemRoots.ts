// The system's trusted roots as Go's crypto/x509 loads them on Linux (what etcd
// 3.4 trusts where it is given no CA file): SSL_CERT_FILE when set, else the
// first bundle file present. Node's own bundled roots ignore both.
import fs from 'node:fs';

/** Go's crypto/x509 certFiles for Linux, in its order. */
const SYSTEM_BUNDLES = [
  '/etc/ssl/certs/ca-certificates.crt',
  '/etc/pki/tls/certs/ca-bundle.crt',
  '/etc/ssl/ca-bundle.pem',
  '/etc/pki/tls/cacert.pem',
  '/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem',
  '/etc/ssl/cert.pem',
];

/** The system roots (PEM): SSL_CERT_FILE when set, else the first bundle file present; undefined when none reads. */
export function systemRoots(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const files = env.SSL_CERT_FILE ? [env.SSL_CERT_FILE] : SYSTEM_BUNDLES;
  for (const f of files) {
    try {
      return fs.readFileSync(f, 'utf8');
    } catch {
      // not this one
    }
  }
  return undefined;
}
