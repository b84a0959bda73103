// What the readers of a member's config file share, whether it is a kubeadm
// static pod manifest or Debian's /etc/default/etcd: the file read with a
// one-line error saying what to give when it is missing, and the TLS files its
// etcd flags name.
import fs from 'node:fs';
import { InputError } from '../common/errors.js';

/** A member's TLS files, as its etcd flags name them. */
export interface MemberTlsFiles {
  certFile?: string;
  keyFile?: string;
  trustedCaFile?: string;
  peerCertFile?: string;
  peerKeyFile?: string;
  peerTrustedCaFile?: string;
}

/** The TLS files of etcd flags ("cert-file" → certFile, ...). */
export function tlsFilesOf(flags: Map<string, string>): MemberTlsFiles {
  return {
    certFile: flags.get('cert-file'),
    keyFile: flags.get('key-file'),
    trustedCaFile: flags.get('trusted-ca-file'),
    peerCertFile: flags.get('peer-cert-file'),
    peerKeyFile: flags.get('peer-key-file'),
    peerTrustedCaFile: flags.get('peer-trusted-ca-file'),
  };
}

/** The file's text; an InputError when it cannot be read (`whenMissing` follows "FILE does not exist: "). */
export function readConfigFile(file: string, whenMissing: string): string {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new InputError(code === 'ENOENT' ? `${file} does not exist: ${whenMissing}` : `${file}: ${(e as Error).message}`);
  }
}
