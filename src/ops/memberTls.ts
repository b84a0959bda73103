// Each member's own TLS files, checked before a run starts any member. The TLS
// settings a playbook passes to every member it starts may name the member with
// `{name}` (/etc/etcd/pki/{name}/server.crt): each member gets its own
// certificate and key. Before anything changes, every member's files must exist
// and be readable, each key must belong to its certificate, and each certificate's
// SANs must cover the URLs of its side (client or peer) — an IP SAN for an IP
// host, a DNS SAN for a name — so that m2 never serves m1's certificate.
import { X509Certificate, createPrivateKey } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import type { MemberTls } from './startMember.js';

/** What `{name}` in a TLS file setting is replaced by. */
export const NAME_PLACEHOLDER = '{name}';

const FILE_FIELDS = ['certFile', 'keyFile', 'trustedCaFile', 'peerCertFile', 'peerKeyFile', 'peerTrustedCaFile'] as const;

/** The member's own TLS settings: `{name}` in a file setting replaced by its name. */
export function memberTlsFor(tls: MemberTls | undefined, name: string): MemberTls | undefined {
  if (!tls) return tls;
  const out: MemberTls = { ...tls };
  for (const f of FILE_FIELDS) {
    const v = tls[f];
    if (typeof v === 'string') out[f] = v.split(NAME_PLACEHOLDER).join(name);
  }
  return out;
}

export interface TlsMember {
  name: string;
  peerUrl: string;
  clientUrl: string;
}

/** The setting names as a playbook's variables (and etcd's flags) spell them. */
const SETTING: Record<(typeof FILE_FIELDS)[number], string> = {
  certFile: 'cert-file',
  keyFile: 'key-file',
  trustedCaFile: 'trusted-ca-file',
  peerCertFile: 'peer-cert-file',
  peerKeyFile: 'peer-key-file',
  peerTrustedCaFile: 'peer-trusted-ca-file',
};

/** https:// URLs that have no certificate: the settings to give, or undefined when none are missing. */
export function missingTls(m: TlsMember, tls: MemberTls | undefined): string[] | undefined {
  const missing: string[] = [];
  if (isHttps(m.clientUrl) && (!tls?.certFile || !tls.keyFile)) missing.push('cert-file', 'key-file');
  if (isHttps(m.peerUrl) && (!tls?.peerCertFile || !tls.peerKeyFile)) missing.push('peer-cert-file', 'peer-key-file');
  return missing.length > 0 ? missing : undefined;
}

/**
 * Why member `m` cannot serve its URLs with `tls` (its own settings, `{name}`
 * already replaced), in one line naming the member, the file and what is wrong;
 * undefined when its files are fine. Files that are not set are not checked
 * (see missingTls for https:// URLs without them).
 */
export function memberTlsProblem(m: TlsMember, tls: MemberTls | undefined): string | undefined {
  if (!tls) return undefined;
  const pairs: Array<{ side: 'client' | 'peer'; url: string; cert?: string; key?: string }> = [
    { side: 'client', url: m.clientUrl, cert: tls.certFile, key: tls.keyFile },
    { side: 'peer', url: m.peerUrl, cert: tls.peerCertFile, key: tls.peerKeyFile },
  ];
  for (const p of pairs) {
    const certSetting = p.side === 'client' ? SETTING.certFile : SETTING.peerCertFile;
    const keySetting = p.side === 'client' ? SETTING.keyFile : SETTING.peerKeyFile;
    if (!p.cert && !p.key) continue;
    if (!p.cert || !p.key) return `member ${m.name}: ${p.cert ? keySetting : certSetting} is not set but ${p.cert ? certSetting : keySetting} is; give both`;
    const certText = readable(p.cert);
    if (typeof certText !== 'string') return `member ${m.name}: ${certSetting} ${p.cert} ${certText.error}`;
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(certText);
    } catch {
      return `member ${m.name}: ${certSetting} ${p.cert} is not a PEM certificate`;
    }
    const keyText = readable(p.key);
    if (typeof keyText !== 'string') return `member ${m.name}: ${keySetting} ${p.key} ${keyText.error}`;
    try {
      if (!cert.checkPrivateKey(createPrivateKey(keyText)))
        return `member ${m.name}: ${keySetting} ${p.key} is not the key of ${p.cert} (another certificate's key); give ${m.name}'s own key`;
    } catch {
      return `member ${m.name}: ${keySetting} ${p.key} is not a PEM private key`;
    }
    if (!isHttps(p.url)) continue;
    const host = new URL(p.url).hostname.replace(/^\[|\]$/g, '');
    const covered = net.isIP(host) ? cert.checkIP(host) !== undefined : cert.checkHost(host, { subject: 'never' }) !== undefined;
    if (!covered)
      return `member ${m.name}: ${certSetting} ${p.cert} does not cover its ${p.side} URL ${p.url} (no ${net.isIP(host) ? 'IP' : 'DNS'} SAN ${host}; it has ${
        cert.subjectAltName ?? 'no SANs'
      }); give ${m.name} its own certificate`;
    const expired = Date.parse(cert.validTo);
    if (Number.isFinite(expired) && expired < Date.now()) return `member ${m.name}: ${certSetting} ${p.cert} expired on ${cert.validTo}; renew it first`;
  }
  for (const f of ['trustedCaFile', 'peerTrustedCaFile'] as const) {
    const file = tls[f];
    if (!file) continue;
    const text = readable(file);
    if (typeof text !== 'string') return `member ${m.name}: ${SETTING[f]} ${file} ${text.error}`;
  }
  return undefined;
}

function isHttps(url: string): boolean {
  return url.startsWith('https://');
}

function readable(file: string): string | { error: string } {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return { error: 'does not exist' };
    if (code === 'EACCES') return { error: "is not readable by this user; run as the member's user (or root)" };
    return { error: `cannot be read (${code ?? (e as Error).message})` };
  }
}
