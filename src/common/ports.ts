// Is a TCP port free: bound for a moment and released. For tools that choose or
// check ports on this host (the etcd replay member, drill scratch clusters, the
// demo, playbook entry checks).
import net from 'node:net';

/** The error code binding host:port gives now (EADDRINUSE, EACCES, …), or undefined when it is free. */
export function bindError(port: number, host = '127.0.0.1'): Promise<string | undefined> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
    s.listen({ port, host, exclusive: true }, () => s.close(() => resolve(undefined)));
  });
}

/** Nothing listens on this loopback port. */
export async function portIsFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return (await bindError(port, host)) === undefined;
}

/** A port the kernel picks on 127.0.0.1, free as this returns. */
export function ephemeralLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}
