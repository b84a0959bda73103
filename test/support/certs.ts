// Throw-away certificates for TLS tests, made with openssl: a CA, a server
// certificate for 127.0.0.1/localhost, a client certificate, and a second,
// unrelated CA (for "wrong CA" cases); issueCert() makes more from either CA
// (a given CN, server or client use, already expired with negative days).
import { readFileSync, writeFileSync } from 'node:fs';
import tls from 'node:tls';
import path from 'node:path';
import { run } from './tools.js';

export interface TestCerts {
  dir: string;
  ca: string;
  otherCa: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
}

async function openssl(dir: string, ...args: string[]): Promise<void> {
  const r = await run('openssl', args, { cwd: dir });
  if (r.code !== 0) throw new Error(`openssl ${args[0]} failed: ${r.stderr.trim().split('\n').pop()}`);
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export async function makeCerts(dir: string): Promise<TestCerts> {
  const p = (f: string) => path.join(dir, f);
  const ca = async (name: string, cn: string) =>
    openssl(
      dir,
      'req',
      '-x509',
      ...EC,
      '-keyout',
      p(`${name}.key`),
      '-out',
      p(`${name}.crt`),
      '-days',
      '2',
      '-subj',
      `/CN=${cn}`,
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    );
  await ca('ca', 'lifeboat-test-ca');
  await ca('other-ca', 'lifeboat-other-ca');
  writeFileSync(p('server.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n');
  writeFileSync(p('client.ext'), 'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n');
  for (const [name, cn] of [
    ['server', 'etcd-server'],
    ['client', 'lifeboat-client'],
  ] as const) {
    await openssl(dir, 'req', ...EC, '-keyout', p(`${name}.key`), '-out', p(`${name}.csr`), '-subj', `/CN=${cn}`);
    await openssl(
      dir,
      'x509',
      '-req',
      '-in',
      p(`${name}.csr`),
      '-CA',
      p('ca.crt'),
      '-CAkey',
      p('ca.key'),
      '-CAcreateserial',
      '-out',
      p(`${name}.crt`),
      '-days',
      '2',
      '-extfile',
      p(`${name}.ext`),
    );
  }
  return {
    dir,
    ca: p('ca.crt'),
    otherCa: p('other-ca.crt'),
    serverCert: p('server.crt'),
    serverKey: p('server.key'),
    clientCert: p('client.crt'),
    clientKey: p('client.key'),
  };
}

export interface IssuedCert {
  cert: string;
  key: string;
}

/**
 * One more certificate from the test CA (or `fromOtherCa`): CN `cn`, for
 * 127.0.0.1/localhost (or the SANs `sans`, e.g. `IP:127.0.0.2`) servers and clients (`usage: 'server'`, the default, is
 * good for both, as a member's peer certificate must be) or for clients only;
 * `days: -1` gives one that has already expired. Written to NAME.crt/NAME.key
 * in the certificates' directory.
 */
export async function issueCert(
  certs: TestCerts,
  name: string,
  opts: { cn: string; fromOtherCa?: boolean; days?: number; usage?: 'server' | 'client'; sans?: string },
): Promise<IssuedCert> {
  const dir = certs.dir;
  const p = (f: string) => path.join(dir, f);
  const ca = opts.fromOtherCa ? 'other-ca' : 'ca';
  // Other SANs than 127.0.0.1/localhost (e.g. IP:127.0.0.2): the server extensions with these names.
  const ext = opts.sans ? `${name}.ext` : `${opts.usage ?? 'server'}.ext`;
  if (opts.sans) writeFileSync(p(ext), `subjectAltName=${opts.sans}\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n`);
  await openssl(dir, 'req', ...EC, '-keyout', p(`${name}.key`), '-out', p(`${name}.csr`), '-subj', `/CN=${opts.cn}`);
  await openssl(
    dir,
    'x509',
    '-req',
    '-in',
    p(`${name}.csr`),
    '-CA',
    p(`${ca}.crt`),
    '-CAkey',
    p(`${ca}.key`),
    '-CAcreateserial',
    '-out',
    p(`${name}.crt`),
    '-days',
    String(opts.days ?? 2),
    '-extfile',
    p(ext),
  );
  return { cert: p(`${name}.crt`), key: p(`${name}.key`) };
}

/** The certificate a TLS server at `url` presents to a client of the test CA (5 s at most). */
export function servedCertificate(url: string, certs: TestCerts): Promise<tls.PeerCertificate> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const s = tls.connect({
      host: u.hostname,
      port: Number(u.port),
      ca: readFileSync(certs.ca),
      cert: readFileSync(certs.clientCert),
      key: readFileSync(certs.clientKey),
      ALPNProtocols: ['h2'],
    });
    s.setTimeout(5000, () => s.destroy(new Error(`no TLS handshake with ${url} in 5 s`)));
    s.once('secureConnect', () => {
      const c = s.getPeerCertificate();
      s.end();
      resolve(c);
    });
    s.once('error', reject);
  });
}
