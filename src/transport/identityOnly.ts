// A member still waiting on a discovery service is not a member yet, but its
// peer URLs answer Lifeboat's Identity (and nothing else) meanwhile: whoever
// shares its discovery token can tell that a Lifeboat member registered there
// (start-member refuses to start an etcd member on such a token; the two
// runtimes cannot form one cluster). Closed before the member binds its URLs.
import { hostPort } from '../common/urls.js';
import { serviceDefinition } from '../proto/load.js';
import { listenWithAuthorityRewrite, type AuthorityRewriteListener } from '../net/authorityListener.js';
import { GrpcServer } from '../net/grpcServer.js';
import type { Reply } from '../net/serverCalls.js';
import type { ServerTlsOptions } from '../net/tlsTermination.js';
import type { IdentityReply } from './peerProtocol.js';

/** Serves Identity with `reply` on each peer URL (https:// ones with `tls`); every other call is UNIMPLEMENTED. */
export async function serveIdentityOnly(urls: string[], tls: ServerTlsOptions | undefined, reply: IdentityReply): Promise<{ close(): Promise<void> }> {
  const server = new GrpcServer();
  server.addService(serviceDefinition('lifeboat.peer.Peer'), {
    Identity: (_call: never, cb: Reply<IdentityReply>) => cb(null, reply),
  });
  const listeners: AuthorityRewriteListener[] = [];
  const close = async () => {
    await Promise.all(listeners.map((l) => l.close()));
  };
  try {
    for (const url of urls) {
      const secure = url.startsWith('https:');
      if (secure && !tls) continue; // refused later, with the member's own message
      listeners.push(await listenWithAuthorityRewrite(server, hostPort(url), secure && tls ? { tls: { ...tls, listener: 'peer' } } : {}));
    }
  } catch (e) {
    await close();
    throw e;
  }
  return { close };
}
