// Whether an endpoint that failed as a client endpoint is a member's peer port, so
// the error says "peer port" instead of blaming a certificate or the etcd API:
// - etcd's peer listener answers an HTTP/1.1 GET /members with its member list
//   (its client listener answers 404): with TLS, etcd's peer port takes no gRPC and
//   closes the connection, which read as a TLS failure;
// - Lifeboat's peer listener serves the lifeboat.peer.Peer gRPC service, whose
//   Identity (read-only) returns the member list; the etcd API there is unimplemented.
// Both answers carry the members' client URLs, which the message then suggests.
import http from 'node:http';
import https from 'node:https';
import type { Endpoint } from './endpoints.js';
import type { TlsMaterial } from './tls.js';
import { dialSession } from './http2Calls.js';
import { unaryCall } from '../net/grpcClient.js';
import { ProtoReader } from '../common/protobufWire.js';
import { EtcdClientError } from './errors.js';

/** How long each probe may take: it only runs after a failure, and must not double the wait. */
const PROBE_MS = 1000;

interface PeerPort {
  runtime: 'etcd' | 'Lifeboat';
  clientUrls: string[];
}

/** The error for an endpoint that is a peer port; undefined when it is not one (or cannot be told). */
export async function peerPortError(endpoint: Endpoint, tls: TlsMaterial | undefined): Promise<EtcdClientError | undefined> {
  const found = (await etcdPeerPort(endpoint, tls)) ?? (await lifeboatPeerPort(endpoint, tls));
  if (!found) return undefined;
  const clients = found.clientUrls.length > 0 ? ` (its members' client URLs: ${found.clientUrls.join(',')})` : '';
  return new EtcdClientError(
    `${endpoint.text} is ${found.runtime === 'etcd' ? 'an etcd' : 'a Lifeboat'} member's peer port, not a client endpoint; give a client URL in --endpoints${clients}`,
    'unreachable',
    endpoint.text,
  );
}

function clientUrlsOf(members: unknown): string[] {
  if (!Array.isArray(members)) return [];
  return members.flatMap((m: { clientURLs?: unknown }) => (Array.isArray(m.clientURLs) ? m.clientURLs.filter((u): u is string => typeof u === 'string') : []));
}

function etcdPeerPort(endpoint: Endpoint, tls: TlsMaterial | undefined): Promise<PeerPort | undefined> {
  return new Promise((resolve) => {
    const get = tls ? https.get : http.get;
    const req = get(
      `${tls ? 'https' : 'http'}://${endpoint.address}/members`,
      { timeout: PROBE_MS, ...(tls ? { secureContext: tls.secureContext, ...tls.verify } : {}) },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          body += d;
          if (body.length > 1 << 20) req.destroy();
        });
        res.on('end', () => {
          try {
            const members = JSON.parse(body) as Array<{ peerURLs?: unknown }>;
            const isList = res.statusCode === 200 && Array.isArray(members) && members.every((m) => Array.isArray(m.peerURLs));
            resolve(isList ? { runtime: 'etcd', clientUrls: clientUrlsOf(members) } : undefined);
          } catch {
            resolve(undefined);
          }
        });
        res.on('error', () => resolve(undefined));
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(undefined));
  });
}

async function lifeboatPeerPort(endpoint: Endpoint, tls: TlsMaterial | undefined): Promise<PeerPort | undefined> {
  let session;
  try {
    session = await dialSession(endpoint, tls, PROBE_MS);
  } catch {
    return undefined;
  }
  try {
    // An empty IdentityRequest: no cluster to compare, so nothing is recorded or refused.
    const reply = await unaryCall(session, '/lifeboat.peer.Peer/Identity', new Uint8Array(0), {}, PROBE_MS);
    let membersJson = '';
    for (const r = new ProtoReader(reply); !r.done;) {
      const { field, wire } = r.tag();
      if (field === 6 && wire === 2) membersJson = r.bytes().toString('utf8');
      else r.skip(wire);
    }
    let clientUrls: string[] = [];
    try {
      clientUrls = clientUrlsOf(JSON.parse(membersJson));
    } catch {
      // a reply without the member list still says it is a Lifeboat peer port
    }
    return { runtime: 'Lifeboat', clientUrls };
  } catch {
    return undefined; // unimplemented: not Lifeboat's peer listener (or it could not say)
  } finally {
    session.destroy();
  }
}
