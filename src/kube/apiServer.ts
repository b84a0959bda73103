// The node's kube-apiserver as its static pod manifest describes it: where it
// serves (--advertise-address, --secure-port) and whether its /readyz says it
// is ready. /readyz is readable without credentials (kubeadm's
// system:public-info-viewer), so nothing secret is sent.
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { API_SERVER_MANIFEST } from './controlPlane.js';

export interface ApiServer {
  /** https://ADDRESS:PORT */
  url: string;
  /** the cluster CA (--client-ca-file), which signs kubeadm's serving certificate */
  caFile?: string;
}

/** The API server of `manifestsDir`'s kube-apiserver.yaml; undefined when the node has none (or it is not readable). */
export function apiServerOf(manifestsDir: string): ApiServer | undefined {
  let doc: { spec?: { containers?: Array<{ command?: unknown[]; args?: unknown[] }> } };
  try {
    doc = parseYaml(fs.readFileSync(path.join(manifestsDir, API_SERVER_MANIFEST), 'utf8')) as typeof doc;
  } catch {
    return undefined;
  }
  const c = doc?.spec?.containers?.[0];
  const flags = new Map<string, string>();
  for (const it of [...(c?.command ?? []), ...(c?.args ?? [])]) {
    const m = /^--([^=]+)=(.*)$/s.exec(String(it));
    if (m) flags.set(m[1], m[2]);
  }
  const address = flags.get('advertise-address') ?? '127.0.0.1';
  const host = address.includes(':') ? `[${address}]` : address;
  const caFile = flags.get('client-ca-file');
  return { url: `https://${host}:${flags.get('secure-port') ?? '6443'}`, ...(caFile && fs.existsSync(caFile) ? { caFile } : {}) };
}

/** One GET of /readyz: its status code and the first line of its body, or undefined when nothing answers. */
export function readyz(api: ApiServer, timeoutMs = 2000): Promise<{ status: number; body: string } | undefined> {
  return new Promise((resolve) => {
    const req = https.get(
      `${api.url}/readyz`,
      { timeout: timeoutMs, ...(api.caFile ? { ca: fs.readFileSync(api.caFile) } : { rejectUnauthorized: false }) },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (body += d.slice(0, 4096)));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: body.split('\n')[0].slice(0, 200) }));
        res.on('error', () => resolve(undefined));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', () => resolve(undefined));
  });
}
