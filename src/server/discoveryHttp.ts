// HTTP to a v2 discovery service (etcd's /v2/keys, or discovery.etcd.io in front
// of it), as etcd 3.4's discovery client makes it: through --discovery-proxy
// when given (plain requests in absolute form, CONNECT for https://), and an
// https:// service verified against the system roots (SSL_CERT_FILE, else the
// usual bundle files), as Go's crypto/x509 loads them: etcd 3.4 has no
// discovery CA flag.
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import type { Duplex } from 'node:stream';
import { systemRoots } from '../net/systemRoots.js';

export interface V2Reply {
  status: number;
  /** X-Etcd-Index */
  index: number;
  body: unknown;
}

export class DiscoveryHttpError extends Error {}

/** A CONNECT tunnel through `proxy` to host:port. */
function tunnel(proxy: URL, host: string, port: string, timeoutMs: number): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: proxy.hostname, port: proxy.port || 80, method: 'CONNECT', path: `${host}:${port}`, timeout: timeoutMs });
    req.once('connect', (res, socket) => {
      if (res.statusCode === 200) resolve(socket);
      else {
        socket.destroy();
        reject(new DiscoveryHttpError(`--discovery-proxy ${proxy.origin} answered CONNECT with HTTP ${res.statusCode}`));
      }
    });
    req.once('timeout', () => req.destroy(new DiscoveryHttpError(`--discovery-proxy ${proxy.origin} did not answer within ${timeoutMs} ms`)));
    req.once('error', reject);
    req.end();
  });
}

/** One request to the v2 keys API at `url`; `form`: an x-www-form-urlencoded body. */
export async function v2Request(method: string, url: URL, opts: { proxy?: string; form?: Record<string, string>; timeoutMs: number }): Promise<V2Reply> {
  const body = opts.form ? new URLSearchParams(opts.form).toString() : undefined;
  const headers: Record<string, string> = body
    ? { 'content-type': 'application/x-www-form-urlencoded', 'content-length': String(Buffer.byteLength(body)) }
    : {};
  const secure = url.protocol === 'https:';
  const port = url.port || (secure ? '443' : '80');
  const proxy = opts.proxy ? new URL(opts.proxy) : undefined;
  let req: http.ClientRequest;
  const target = `${url.pathname}${url.search}`;
  if (secure) {
    const socket = proxy ? await tunnel(proxy, url.hostname, port, opts.timeoutMs) : undefined;
    const ca = systemRoots();
    req = https.request({
      host: url.hostname,
      port,
      method,
      path: target,
      headers,
      timeout: opts.timeoutMs,
      // One request per connection: a proxy or service that closes an idle one must not fail the next request.
      agent: false,
      servername: net.isIP(url.hostname) ? undefined : url.hostname,
      ...(ca ? { ca } : {}),
      ...(socket ? { createConnection: () => tls.connect({ socket, servername: url.hostname, ...(ca ? { ca } : {}) }) } : {}),
    });
  } else if (proxy) {
    req = http.request({
      host: proxy.hostname,
      port: proxy.port || 80,
      method,
      path: url.href,
      headers: { ...headers, host: url.host },
      timeout: opts.timeoutMs,
      agent: false,
    });
  } else {
    req = http.request({ host: url.hostname, port, method, path: target, headers, timeout: opts.timeoutMs, agent: false });
  }
  return new Promise((resolve, reject) => {
    req.once('timeout', () => req.destroy(new DiscoveryHttpError(`no answer within ${opts.timeoutMs} ms`)));
    req.once('error', reject);
    req.once('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.once('error', reject);
      res.once('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          reject(new DiscoveryHttpError(`HTTP ${res.statusCode} with a body that is not JSON: not a v2 discovery endpoint`));
          return;
        }
        resolve({ status: res.statusCode ?? 0, index: Number(res.headers['x-etcd-index'] ?? 0), body: parsed });
      });
    });
    req.end(body);
  });
}
