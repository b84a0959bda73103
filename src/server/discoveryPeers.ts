// Lifeboat and etcd members cannot form one Raft cluster (different peer
// protocols), but a discovery token takes registrations from both. After
// discovery, before anything is written, a Lifeboat member asks the other
// members' peer URLs etcd's GET /version: an etcd member answers {"etcdserver":
// ...}; a Lifeboat member does not. Before an etcd member registers,
// start-member asks the registered peer URLs Lifeboat's Identity: a Lifeboat
// member answers it, waiting on the token (transport/identityOnly.ts) or running.
import http from 'node:http';
import https from 'node:https';
import type { TlsFiles } from '../net/tlsFiles.js';
import { PeerCredentials } from '../transport/peerCredentials.js';
import { PeerTransport } from '../transport/peerTransport.js';

/** How long to keep asking peers that do not answer yet (they may still be finishing discovery). */
const WINDOW_MS = 1500;

/** etcd's version, if `peerUrl` answers as an etcd member's peer URL. */
function etcdVersionAt(peerUrl: string, timeoutMs: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const u = new URL('/version', peerUrl);
    const get = u.protocol === 'https:' ? https.get : http.get;
    // Only the protocol is looked at: the peer's certificate is not what is checked here.
    const req = get(u, { timeout: timeoutMs, agent: false, rejectUnauthorized: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        try {
          const v = (JSON.parse(text) as { etcdserver?: unknown }).etcdserver;
          resolve(typeof v === 'string' ? v : undefined);
        } catch {
          resolve(undefined);
        }
      });
      res.on('error', () => resolve(undefined));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
  });
}

/** The first of `peers` (name → peer URLs) that answers as an etcd member, within a short window. */
export async function etcdPeerAmong(peers: Map<string, string[]>): Promise<{ name: string; url: string; version: string } | undefined> {
  const deadline = Date.now() + WINDOW_MS;
  const urls = [...peers].flatMap(([name, list]) => list.map((url) => ({ name, url })));
  while (urls.length > 0) {
    const found = await Promise.all(urls.map(async (p) => ({ ...p, version: await etcdVersionAt(p.url, 500) })));
    const etcd = found.find((f) => f.version);
    if (etcd?.version) return { name: etcd.name, url: etcd.url, version: etcd.version };
    if (Date.now() >= deadline) return undefined;
    await new Promise((r) => setTimeout(r, 200));
  }
  return undefined;
}

/** The first of `peers` (name → peer URLs) that answers Lifeboat's peer protocol, dialled with the peer certificate `files`. */
export async function lifeboatPeerAmong(peers: Map<string, string[]>, files?: TlsFiles): Promise<{ name: string; url: string } | undefined> {
  const credentials = new PeerCredentials(files);
  const urls = [...peers].flatMap(([name, list]) => list.map((url) => ({ name, url })));
  const answered = await Promise.all(
    urls.map((p) =>
      PeerTransport.identity(p.url, { clusterId: 0n, from: 0n }, 1000, credentials).then(
        () => p,
        () => undefined,
      ),
    ),
  );
  return answered.find((p) => p !== undefined);
}
