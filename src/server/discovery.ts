// Bootstrap from a v2 discovery service, as etcd 3.4's v2discovery does it: read
// <url>/_config/size, refuse when `size` others registered first (before
// registering), register <url>/<member id> = "name=peerURL,...", wait until
// `size` members have registered, and return the first `size` of them (by
// creation index) as the initial cluster. Used only for a first start: a member
// with a data dir never asks the service again.
import { formatId } from '../common/ids.js';
import type { DiscoveryOptions } from './config.js';
import type { Logger } from './logger.js';
import { MemberExit } from './member.js';
import { etcdPeerAmong } from './discoveryPeers.js';
import { DiscoveryHttpError, v2Request, type V2Reply } from './discoveryHttp.js';

interface V2Node {
  key: string;
  value?: string;
  createdIndex: number;
}

/** Per request, as etcd's client.DefaultRequestTimeout. */
const REQUEST_TIMEOUT_MS = 5000;
const POLL_MS = 250;
const NEW_TOKEN = 'do not reuse discovery token; generate a new one to bootstrap a cluster';

/** The discovery URL without its token (the token admits members to the cluster: it stays out of logs). */
export function redactedDiscoveryUrl(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname.replace(/[^/]+\/?$/, '***')}`;
}

/** etcd's DiscoveryError and its exit code (1), with etcd's advice. */
const failed = (err: string, advice = NEW_TOKEN) => new MemberExit(1, `failed to join discovery cluster (discovery: ${err}); ${advice}`);

/** etcd's URLsMap.String(): name=url pairs sorted. */
export function urlsMapString(name: string, urls: string[]): string {
  return urls
    .map((u) => `${name}=${u}`)
    .sort()
    .join(',');
}

async function request(method: string, url: URL, opts: DiscoveryOptions, form?: Record<string, string>): Promise<V2Reply> {
  try {
    return await v2Request(method, url, { proxy: opts.proxy, form, timeoutMs: REQUEST_TIMEOUT_MS });
  } catch (e) {
    const why = e instanceof DiscoveryHttpError ? e.message : (e as Error).message.split('\n')[0];
    throw new MemberExit(
      1,
      `cannot reach the discovery service ${redactedDiscoveryUrl(opts.url)}${opts.proxy ? ` through --discovery-proxy ${opts.proxy}` : ''}: ${why}`,
    );
  }
}

function child(opts: DiscoveryOptions, key: string, query = ''): URL {
  const u = new URL(opts.url);
  u.pathname = `${u.pathname.replace(/\/$/, '')}/${key}`;
  u.search = query;
  return u;
}

/** The registered members, first registered first, and the service's index. */
async function registered(opts: DiscoveryOptions): Promise<{ nodes: V2Node[]; index: number }> {
  const u = new URL(opts.url);
  const r = await request('GET', u, opts);
  if (r.status === 404) throw failed('token not found');
  if (r.status !== 200) throw failed(`HTTP ${r.status} listing the registered members`);
  const nodes = ((r.body as { node?: { nodes?: V2Node[] } }).node?.nodes ?? []).filter((n) => !n.key.endsWith('/_config'));
  nodes.sort((a, b) => a.createdIndex - b.createdIndex);
  return { nodes, index: r.index };
}

async function clusterSize(opts: DiscoveryOptions): Promise<number> {
  const r = await request('GET', child(opts, '_config/size'), opts);
  if (r.status === 404) throw failed('size key not found', 'create the token with a size (e.g. /new?size=3), or set _config/size');
  const value = (r.body as { node?: { value?: string } }).node?.value ?? '';
  if (r.status !== 200 || !/^\d+$/.test(value) || Number(value) < 1) throw failed('size key is bad', `_config/size is "${value}"; set it to the cluster size`);
  return Number(value);
}

const own = (n: V2Node, key: string) => n.key.split('/').pop() === key;

/**
 * Registers this member and waits for the others; returns the initial cluster
 * (name → peer URLs) of exactly the first `size` registered members.
 */
export async function discoverInitialCluster(
  opts: DiscoveryOptions,
  self: { id: bigint; name: string; peerUrls: string[] },
  log: Logger,
): Promise<Map<string, string[]>> {
  const key = formatId(self.id);
  const size = await clusterSize(opts);
  const before = await registered(opts);
  // etcd's fast path: full before we register, so we never do.
  if (!before.nodes.some((n) => own(n, key)) && before.nodes.length >= size) throw failed('cluster is full');
  const put = await request('PUT', child(opts, key, '?prevExist=false'), opts, { value: urlsMapString(self.name, self.peerUrls) });
  if (put.status === 412) {
    throw failed(
      'found duplicate id',
      'this member registered before but has no data dir (its bootstrap did not finish): check the data dir if the previous bootstrap succeeded, or use a new discovery token',
    );
  }
  if (put.status !== 201 && put.status !== 200) throw failed(`HTTP ${put.status} registering this member`);
  const createdIndex = (put.body as { node?: { createdIndex?: number } }).node?.createdIndex ?? 0;
  const deadline = Date.now() + opts.timeoutMs;
  let shown = -1;
  for (;;) {
    const { nodes } = await registered(opts);
    const position = nodes.findIndex((n) => own(n, key));
    if (position >= size) throw failed('cluster is full');
    if (nodes.length !== shown) {
      shown = nodes.length;
      log.info({ registered: Math.min(shown, size), size }, `${Math.min(shown, size)} of ${size} registered`);
    }
    if (nodes.length >= size) return oneRuntime(initialCluster(nodes.slice(0, size), size), self.name);
    if (Date.now() >= deadline) {
      // Withdraw our registration (only if still ours) so that this member may try again with the same token.
      await request('DELETE', child(opts, key, `?prevIndex=${createdIndex}`), opts).catch(() => undefined);
      throw new MemberExit(
        1,
        `discovery: only ${nodes.length} of ${size} members registered at ${redactedDiscoveryUrl(opts.url)} within ${Math.round(opts.timeoutMs / 1000)}s; start the other members with the same --discovery, then start this one again`,
      );
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

/** `cluster` unless another of its members is an etcd member (one runtime per token). */
async function oneRuntime(cluster: Map<string, string[]>, self: string): Promise<Map<string, string[]>> {
  const etcd = await etcdPeerAmong(new Map([...cluster].filter(([name]) => name !== self)));
  if (etcd) {
    throw new MemberExit(
      1,
      `discovery: registered member ${etcd.name} (${etcd.url}) is an etcd ${etcd.version} member; Lifeboat and etcd members cannot form one cluster: bootstrap each runtime with its own discovery token`,
    );
  }
  return cluster;
}

/** The members registered on the token so far (name → peer URLs), without registering: start-member's look before an etcd member registers. */
export async function registeredPeers(opts: DiscoveryOptions): Promise<Map<string, string[]>> {
  const { nodes } = await registered(opts);
  return initialCluster(nodes, nodes.length);
}

/** etcd's nodesToCluster: the registered values as one map, `size` distinct names. */
function initialCluster(nodes: V2Node[], size: number): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const n of nodes) {
    for (const pair of (n.value ?? '').split(',')) {
      const eq = pair.indexOf('=');
      let ok = eq > 0;
      try {
        new URL(pair.slice(eq + 1));
      } catch {
        ok = false;
      }
      if (!ok) throw failed('invalid URL', `a registered member's value is "${n.value}"; use a new discovery token`);
      const name = pair.slice(0, eq);
      out.set(name, [...(out.get(name) ?? []), pair.slice(eq + 1)]);
    }
  }
  if (out.size !== size) throw failed('found duplicate name', 'cURL the discovery token URL for details; ' + NEW_TOKEN);
  return out;
}
