// Endpoint strings as users write them for etcdctl: `host:port`,
// `http://host:port` (plaintext) or `https://host:port` (TLS), comma-separated.
import { InputError } from '../common/errors.js';

export interface Endpoint {
  /** as the user wrote it; every message names the endpoint this way */
  readonly text: string;
  /** gRPC target, host:port (IPv6 hosts in brackets) */
  readonly address: string;
  readonly host: string;
  readonly port: number;
  /** https:// → true; http:// → false; bare host:port → TLS only if TLS flags were given */
  readonly scheme: 'http' | 'https' | 'bare';
}

function invalid(text: string, why: string): InputError {
  return new InputError(`invalid endpoint "${text}": ${why}; expected host:port or http(s)://host:port, e.g. 127.0.0.1:2379`);
}

export function parseEndpoint(text: string): Endpoint {
  const t = text.trim();
  if (t === '') throw invalid(text, 'empty');
  let scheme: Endpoint['scheme'] = 'bare';
  let rest = t;
  const m = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\/(.*)$/.exec(t);
  if (m) {
    const s = m[1].toLowerCase();
    if (s !== 'http' && s !== 'https') throw invalid(text, `scheme ${s}:// is not supported`);
    scheme = s;
    rest = m[2].replace(/\/+$/, '');
  }
  let u: URL;
  try {
    u = new URL(`http://${rest}`);
  } catch {
    throw invalid(text, 'not a host:port');
  }
  if (u.pathname !== '/' || u.search || u.hash || u.username) throw invalid(text, 'a path or query is not allowed');
  // new URL drops the default port 80, so read the port from the text itself.
  const portText = /:(\d+)$/.exec(rest)?.[1];
  if (!portText) throw invalid(text, 'the port is missing');
  const port = Number(portText);
  if (!(port > 0 && port < 65536)) throw invalid(text, `port ${portText} is out of range`);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  if (host === '') throw invalid(text, 'the host is missing');
  const address = host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
  return { text: t, address, host, port, scheme };
}

/** "a:1, http://b:2" → endpoints, in order, without duplicates. */
export function parseEndpoints(list: string | readonly string[]): Endpoint[] {
  const items = (typeof list === 'string' ? [list] : list)
    .flatMap((s) => s.split(','))
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length === 0) throw new InputError('no endpoints given: pass --endpoints, e.g. --endpoints 127.0.0.1:2379');
  const seen = new Set<string>();
  const out: Endpoint[] = [];
  for (const item of items) {
    const ep = parseEndpoint(item);
    if (seen.has(ep.text)) continue;
    seen.add(ep.text);
    out.push(ep);
  }
  return out;
}
