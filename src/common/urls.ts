// URL handling shared by peers and clients: etcd-style URLs in, gRPC addresses out.

/** "http://127.0.0.1:2380" → "127.0.0.1:2380"; a bare host:port passes through. */
export function hostPort(url: string): string {
  if (!url.includes('://')) return url;
  const u = new URL(url);
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  return `${u.hostname.replace(/^\[|\]$/g, '')}:${port}`;
}

/** "127.0.0.1:2379", "[::1]:2379", "::1:2379" (as hostPort writes it), ":2379" → host and port. */
export function splitHostPort(hostPort: string): { host: string; port: number } {
  const m = /^\[([^\]]*)\]:(\d+)$/.exec(hostPort) ?? /^(.*):(\d+)$/.exec(hostPort);
  if (!m) throw new Error(`bad address ${hostPort}: expected host:port`);
  const port = Number(m[2]);
  if (port > 65535) throw new Error(`bad port in ${hostPort}`);
  return { host: m[1], port };
}

/** A URL a member may advertise or listen on: http(s), a host and an explicit port. */
export function isValidMemberUrl(url: string): boolean {
  try {
    const u = new URL(url);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname !== '' && u.port !== '' && (u.pathname === '/' || u.pathname === '') && !u.search;
  } catch {
    return false;
  }
}
