// Commands that ask each endpoint on its own connection, like etcdctl's
// `endpoint status|health|hashkv`, `defrag` and `move-leader`.
import { status as GrpcStatus } from '#grpc-js';
import type { EtcdClient } from './etcdClient.js';
import { EtcdClientError } from './errors.js';
import type { StatusResult } from './types.js';
import { monotonicMs } from '../common/clock.js';

export type EndpointOutcome<T> = { endpoint: string; ok: true; value: T } | { endpoint: string; ok: false; error: EtcdClientError };

/**
 * The endpoints to ask: those given, or with `cluster` every client URL of every
 * member (MemberList through `client`), in member order, without duplicates.
 */
export async function targetEndpoints(client: EtcdClient, cluster: boolean): Promise<string[]> {
  if (!cluster) return client.endpoints.map((e) => e.text);
  const { members } = await client.memberList();
  const urls = [...new Set(members.flatMap((m) => m.clientURLs))];
  if (urls.length === 0) {
    throw new EtcdClientError(`${await client.activeEndpoint()}: no member publishes a client URL yet; pass --endpoints instead of --cluster`, 'server');
  }
  return urls;
}

/** Run `fn` against every endpoint at once, each on its own client; outcomes in endpoint order. */
export async function forEachEndpoint<T>(
  base: EtcdClient,
  endpoints: readonly string[],
  fn: (client: EtcdClient, endpoint: string) => Promise<T>,
): Promise<Array<EndpointOutcome<T>>> {
  return Promise.all(
    endpoints.map(async (endpoint): Promise<EndpointOutcome<T>> => {
      const c = base.forEndpoint(endpoint);
      try {
        return { endpoint, ok: true, value: await fn(c, endpoint) };
      } catch (err) {
        const error = err instanceof EtcdClientError ? err : new EtcdClientError(`${endpoint}: ${(err as Error).message}`, 'server', endpoint);
        return { endpoint, ok: false, error };
      } finally {
        c.close();
      }
    }),
  );
}

export interface HealthResult {
  /** milliseconds the linearizable read took */
  tookMs: number;
}

/**
 * etcdctl 3.4's health check: a linearizable Range of key "health" commits
 * through Raft; success or "permission denied" (auth on) means healthy.
 */
export async function checkHealth(client: EtcdClient): Promise<HealthResult> {
  const t0 = monotonicMs();
  try {
    await client.range('health');
  } catch (err) {
    if (!(err instanceof EtcdClientError && err.grpcCode === GrpcStatus.PERMISSION_DENIED)) throw err;
  }
  return { tookMs: monotonicMs() - t0 };
}

export interface LeaderFound {
  /** the endpoint that answered as the leader */
  endpoint: string;
  leaderId: bigint;
  status: StatusResult;
}

/**
 * Find the leader's endpoint: Status on every given endpoint; if none of them is
 * the leader, look the leader up in MemberList and try its client URLs.
 */
export async function findLeaderEndpoint(client: EtcdClient): Promise<LeaderFound> {
  const given = client.endpoints.map((e) => e.text);
  const outcomes = await forEachEndpoint(client, given, (c) => c.status());
  for (const o of outcomes) {
    if (o.ok && o.value.leader !== 0n && o.value.leader === o.value.header.memberId) {
      return { endpoint: o.endpoint, leaderId: o.value.leader, status: o.value };
    }
  }
  const known = outcomes.find((o) => o.ok && o.value.leader !== 0n);
  if (!known || !known.ok) {
    const firstError = outcomes.find((o) => !o.ok);
    if (firstError && !firstError.ok && outcomes.every((o) => !o.ok)) throw firstError.error;
    throw new EtcdClientError(`no leader known to ${given.join(', ')} (etcdserver: no leader); wait for an election and retry`, 'server');
  }
  const leaderId = known.value.leader;
  const { members } = await client.memberList();
  const leader = members.find((m) => m.id === leaderId);
  for (const url of leader?.clientURLs ?? []) {
    const c = client.forEndpoint(url);
    try {
      const status = await c.status();
      if (status.header.memberId === leaderId) return { endpoint: url, leaderId, status };
    } catch {
      // try the next URL
    } finally {
      c.close();
    }
  }
  throw new EtcdClientError(
    `the leader ${leaderId.toString(16)} is not among --endpoints and cannot be reached at its client URLs (${(leader?.clientURLs ?? []).join(', ') || 'none'}); add its endpoint to --endpoints`,
    'unreachable',
  );
}
