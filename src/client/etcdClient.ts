// A client for etcd's v3 gRPC API (KV, Cluster, Maintenance), for real etcd and
// for Lifeboat members alike.
//
// - All endpoints are dialed at once; the first to connect within the dial
//   timeout serves every call (the others are closed). If none connects, the
//   error lists each endpoint's reason.
// - Every call has a deadline of the command timeout. A snapshot stream uses it
//   as an inactivity limit instead (no chunk for that long → fail), so large
//   databases are not cut off.
// - Errors are EtcdClientError: one line, naming the endpoint.
// - Per-endpoint commands (endpoint status/health/hashkv, defrag, move-leader)
//   use `forEndpoint` to dial each endpoint on its own connection, like etcdctl.
import * as grpc from '#grpc-js';
import { Connection, type UnaryMethods } from './connection.js';
import type { Endpoint } from './endpoints.js';
import { EtcdText } from '../common/etcdErrorTexts.js';
import { EtcdClientError, callError } from './errors.js';
import { peerPortError } from './peerPort.js';
import { formatDuration } from '../common/durations.js';
import { toBytes } from './keyRange.js';
import { endpointTls, resolveTarget, type ClientTarget, type ConnectionOptions, type EtcdClientOptions } from './target.js';
import {
  alarmFromWire,
  deleteFromWire,
  headerFromWire,
  memberFromWire,
  putFromWire,
  rangeFromWire,
  statusFromWire,
  type AlarmAction,
  type AlarmResult,
  type AlarmType,
  type DeleteOptions,
  type DeleteResult,
  type HashKVResult,
  type HashResult,
  type HeaderOnly,
  type MemberAddResult,
  type MemberListResult,
  type PutOptions,
  type PutResult,
  type RangeOptions,
  type RangeResult,
  type RolePermission,
  type StatusResult,
  type TxnOp,
  type TxnRequest,
  type TxnResult,
  type Wire,
  type WireAlarmResponse,
  type WireDeleteRangeResponse,
  type WireHashKVResponse,
  type WireInt,
  type WireHashResponse,
  type WireHeaderOnly,
  type WireMemberAddResponse,
  type WireMemberListResponse,
  type WirePutResponse,
  type WireRangeResponse,
  type WireStatusResponse,
  type WireTxnResponse,
} from './types.js';
import { wireBig, wireNum } from './ids.js';
import { WatchStream, type WatchOptions } from './watchStream.js';

export type { ConnectionOptions, EtcdClientOptions } from './target.js';

export interface LeaseKeepAliveStream {
  keepAlive(id: bigint): void;
  close(): void;
  error: Error | undefined;
}

/** The server's answers after which clientv3 authenticates again and retries (an expired or stale token). */
const REAUTH_DETAILS = new Set<string>([EtcdText.invalidAuthToken, EtcdText.authOldRevision, EtcdText.userEmpty]);

/** The one way the toolkit builds a client from its connection options. */
export function clientFor(endpoints: string | readonly string[], conn: ConnectionOptions): EtcdClient {
  return new EtcdClient({ ...conn, endpoints });
}

type ServiceName = 'kv' | 'cluster' | 'maintenance' | 'auth' | 'lease';
const SERVICE_NAMES: Record<ServiceName, string> = { kv: 'KV', cluster: 'Cluster', maintenance: 'Maintenance', auth: 'Auth', lease: 'Lease' };

export class EtcdClient {
  private readonly options: EtcdClientOptions;
  /** Endpoints, TLS material, timeouts and credentials, as `snapshot save` dials them itself (snapshotSave.ts). */
  readonly target: ClientTarget;
  private connections?: Connection[];
  private chosen?: Promise<Connection>;
  /** The simple token of `credentials` (undefined: auth is off), fetched once and again when it expires. */
  private token?: Promise<string | undefined>;

  constructor(options: EtcdClientOptions) {
    this.options = options;
    this.target = resolveTarget(options);
  }

  get endpoints(): readonly Endpoint[] {
    return this.target.endpoints;
  }

  get dialTimeoutMs(): number {
    return this.target.dialTimeoutMs;
  }

  get commandTimeoutMs(): number {
    return this.target.commandTimeoutMs;
  }

  /** A client for one endpoint with the same timeouts and TLS settings. */
  forEndpoint(endpoint: string): EtcdClient {
    return new EtcdClient({ ...this.options, endpoints: [endpoint] });
  }

  /** The endpoint serving calls (dials if needed). */
  async activeEndpoint(): Promise<string> {
    return (await this.connection()).endpoint.text;
  }

  close(): void {
    for (const c of this.connections ?? []) c.close();
  }

  // ---- Cluster ----

  async memberList(): Promise<MemberListResult> {
    const { res } = await this.unary<WireMemberListResponse>('cluster', 'MemberList', {});
    return { header: headerFromWire(res.header), members: (res.members ?? []).map(memberFromWire) };
  }

  async memberAdd(peerURLs: string[], opts: { learner?: boolean } = {}): Promise<MemberAddResult> {
    const { res } = await this.unary<WireMemberAddResponse>('cluster', 'MemberAdd', { peerURLs, isLearner: !!opts.learner });
    return {
      header: headerFromWire(res.header),
      member: memberFromWire(res.member ?? {}),
      members: (res.members ?? []).map(memberFromWire),
    };
  }

  async memberRemove(id: bigint): Promise<MemberListResult> {
    const { res } = await this.unary<WireMemberListResponse>('cluster', 'MemberRemove', { ID: id.toString() });
    return { header: headerFromWire(res.header), members: (res.members ?? []).map(memberFromWire) };
  }

  async memberUpdate(id: bigint, peerURLs: string[]): Promise<MemberListResult> {
    const { res } = await this.unary<WireMemberListResponse>('cluster', 'MemberUpdate', { ID: id.toString(), peerURLs });
    return { header: headerFromWire(res.header), members: (res.members ?? []).map(memberFromWire) };
  }

  async memberPromote(id: bigint): Promise<MemberListResult> {
    const { res } = await this.unary<WireMemberListResponse>('cluster', 'MemberPromote', { ID: id.toString() });
    return { header: headerFromWire(res.header), members: (res.members ?? []).map(memberFromWire) };
  }

  // ---- KV ----

  async range(key: Buffer | string, opts: RangeOptions = {}): Promise<RangeResult> {
    const { res } = await this.unary<WireRangeResponse>('kv', 'Range', rangeToWire(key, opts));
    return rangeFromWire(res);
  }

  async put(key: Buffer | string, value: Buffer | string, opts: PutOptions = {}): Promise<PutResult> {
    const { res } = await this.unary<WirePutResponse>('kv', 'Put', putToWire(key, value, opts));
    return putFromWire(res);
  }

  async deleteRange(key: Buffer | string, opts: DeleteOptions = {}): Promise<DeleteResult> {
    const { res } = await this.unary<WireDeleteRangeResponse>('kv', 'DeleteRange', deleteToWire(key, opts));
    return deleteFromWire(res);
  }

  async txn(req: TxnRequest): Promise<TxnResult> {
    const { res } = await this.unary<WireTxnResponse>('kv', 'Txn', txnToWire(req));
    return txnFromWire(res);
  }

  async compact(revision: number, opts: { physical?: boolean } = {}): Promise<HeaderOnly> {
    const { res } = await this.unary<WireHeaderOnly>('kv', 'Compact', { revision: String(revision), physical: !!opts.physical });
    return { header: headerFromWire(res.header) };
  }

  // ---- Maintenance ----

  // ---- Auth (etcd's; read by `migrate` to copy users and roles) ----

  async userList(): Promise<string[]> {
    return (await this.unary<{ users?: string[] }>('auth', 'UserList', {})).res.users ?? [];
  }

  /** The user's roles (etcd never returns a password or its hash). */
  async userGet(name: string): Promise<string[]> {
    return (await this.unary<{ roles?: string[] }>('auth', 'UserGet', { name })).res.roles ?? [];
  }

  async roleList(): Promise<string[]> {
    return (await this.unary<{ roles?: string[] }>('auth', 'RoleList', {})).res.roles ?? [];
  }

  async roleGet(role: string): Promise<RolePermission[]> {
    const { res } = await this.unary<{ perm?: Array<{ permType?: string; key?: Buffer; range_end?: Buffer }> }>('auth', 'RoleGet', { role });
    return (res.perm ?? []).map((p) => ({
      permType: (p.permType ?? 'READ') as RolePermission['permType'],
      key: p.key ?? Buffer.alloc(0),
      rangeEnd: p.range_end ?? Buffer.alloc(0),
    }));
  }

  async roleAdd(name: string): Promise<void> {
    await this.unary('auth', 'RoleAdd', { name });
  }

  async roleGrantPermission(name: string, perm: RolePermission): Promise<void> {
    await this.unary('auth', 'RoleGrantPermission', { name, perm: { permType: perm.permType, key: perm.key, ...rangeEnd(perm.rangeEnd) } });
  }

  async userAdd(name: string, password: string): Promise<void> {
    await this.unary('auth', 'UserAdd', { name, password });
  }

  async userGrantRole(user: string, role: string): Promise<void> {
    await this.unary('auth', 'UserGrantRole', { user, role });
  }

  /** Whether this client's calls carry a token, i.e. it has credentials and the server has auth enabled. */
  async authenticated(): Promise<boolean> {
    return this.options.credentials !== undefined && (await this.token) !== undefined;
  }

  async status(): Promise<StatusResult> {
    const { res } = await this.unary<WireStatusResponse>('maintenance', 'Status', {});
    return statusFromWire(res);
  }

  async hashKV(revision = 0): Promise<HashKVResult> {
    const { res } = await this.unary<WireHashKVResponse>('maintenance', 'HashKV', { revision: String(revision) });
    return { header: headerFromWire(res.header), hash: wireNum(res.hash), compactRevision: wireNum(res.compact_revision) };
  }

  async hash(): Promise<HashResult> {
    const { res } = await this.unary<WireHashResponse>('maintenance', 'Hash', {});
    return { header: headerFromWire(res.header), hash: wireNum(res.hash) };
  }

  async alarm(action: AlarmAction, memberId = 0n, alarm: AlarmType = 'NONE'): Promise<AlarmResult> {
    const { res } = await this.unary<WireAlarmResponse>('maintenance', 'Alarm', { action, memberID: memberId.toString(), alarm });
    return alarmFromWire(res);
  }

  /** Every active alarm. */
  alarmList(): Promise<AlarmResult> {
    return this.alarm('GET');
  }

  /** Deactivate every active alarm (as clientv3's AlarmDisarm with an empty member); returns those disarmed. */
  async alarmDisarmAll(): Promise<AlarmResult> {
    const list = await this.alarmList();
    const disarmed: AlarmResult = { header: list.header, alarms: [] };
    for (const a of list.alarms) {
      const r = await this.alarm('DEACTIVATE', a.memberId, a.alarm);
      disarmed.header = r.header;
      disarmed.alarms.push(...r.alarms);
    }
    return disarmed;
  }

  async defragment(): Promise<HeaderOnly> {
    const { res } = await this.unary<WireHeaderOnly>('maintenance', 'Defragment', {});
    return { header: headerFromWire(res.header) };
  }

  /** Must be sent to the leader (a follower answers "etcdserver: not leader"). */
  async moveLeader(targetId: bigint): Promise<HeaderOnly> {
    const { res } = await this.unary<WireHeaderOnly>('maintenance', 'MoveLeader', { targetID: targetId.toString() });
    return { header: headerFromWire(res.header) };
  }

  // ---- Lease ----

  /** LeaseGrant; `id` 0 lets the member choose. */
  async leaseGrant(ttlSeconds: number, id = 0n): Promise<{ id: bigint; ttl: number }> {
    const { res } = await this.unary<{ ID?: WireInt; TTL?: WireInt; error?: string }>('lease', 'LeaseGrant', { TTL: String(ttlSeconds), ID: id.toString() });
    if (res.error) throw new EtcdClientError(`LeaseGrant ${id.toString(16)}: ${res.error}`, 'server');
    return { id: wireBig(res.ID), ttl: wireNum(res.TTL) };
  }

  async leaseRevoke(id: bigint): Promise<HeaderOnly> {
    const { res } = await this.unary<WireHeaderOnly>('lease', 'LeaseRevoke', { ID: id.toString() });
    return { header: headerFromWire(res.header) };
  }

  /** TTL -1: the lease does not exist (etcd's answer). */
  async leaseTimeToLive(id: bigint, keys = false): Promise<{ id: bigint; ttl: number; grantedTtl: number; keys: Buffer[] }> {
    const { res } = await this.unary<{ ID?: WireInt; TTL?: WireInt; grantedTTL?: WireInt; keys?: Uint8Array[] }>('lease', 'LeaseTimeToLive', {
      ID: id.toString(),
      keys,
    });
    return { id: wireBig(res.ID), ttl: wireNum(res.TTL), grantedTtl: wireNum(res.grantedTTL), keys: (res.keys ?? []).map((k) => Buffer.from(k)) };
  }

  async leaseLeases(): Promise<bigint[]> {
    const { res } = await this.unary<{ leases?: Array<{ ID?: WireInt }> }>('lease', 'LeaseLeases', {});
    return (res.leases ?? []).map((l) => wireBig(l.ID));
  }

  /**
   * A LeaseKeepAlive stream: `keepAlive(id)` refreshes a lease (answers are read
   * and dropped); `error` holds what ended the stream, if it ended.
   */
  async leaseKeepAliveStream(): Promise<LeaseKeepAliveStream> {
    const conn = await this.connection();
    const call = conn.leaseStream.LeaseKeepAlive(await this.metadata(conn));
    const ep = conn.endpoint.text;
    const s: LeaseKeepAliveStream = {
      error: undefined,
      keepAlive: (id) => {
        if (s.error) throw s.error;
        call.write({ ID: id.toString() });
      },
      close: () => {
        call.end();
        call.cancel();
      },
    };
    call.on('data', () => undefined);
    call.on('error', (e: grpc.ServiceError) => {
      if (e.code !== grpc.status.CANCELLED) s.error = callError(e, ep, this.commandTimeoutMs);
    });
    return s;
  }

  // ---- Watch ----

  /**
   * A watch on [key, rangeEnd) from `startRevision`, on its own stream (see watchStream.ts).
   * `requireLeader`: clientv3's WithRequireLeader (metadata `hasleader: true`), so a member
   * that lost its leader ends the stream instead of serving stale silence.
   */
  async watch(key: Buffer, opts: WatchOptions & { requireLeader?: boolean }): Promise<WatchStream> {
    const conn = await this.connection();
    this.options.debug?.(`→ Watch ${conn.endpoint.text} from revision ${opts.startRevision}`);
    const md = await this.metadata(conn);
    if (opts.requireLeader) md.set('hasleader', 'true');
    return WatchStream.open(conn.watch, conn.endpoint.text, key, opts, this.commandTimeoutMs, md);
  }

  // ---- plumbing ----

  private connection(): Promise<Connection> {
    this.chosen ??= this.choose();
    return this.chosen;
  }

  private async choose(): Promise<Connection> {
    const conns = this.endpoints.map((ep) => new Connection(ep, endpointTls(this.target, ep)));
    this.connections = conns;
    const deadline = Date.now() + this.dialTimeoutMs;
    const dials = conns.map((c) => {
      const t0 = Date.now();
      const p = c.dial(deadline, this.dialTimeoutMs);
      p.then(
        () => this.options.debug?.(`dial ${c.endpoint.text}: connected in ${Date.now() - t0}ms`),
        (e: Error) => this.options.debug?.(`dial ${c.endpoint.text}: ${e.message}`),
      );
      return p;
    });
    // The first endpoint to connect serves the calls; the others are closed.
    const errors: EtcdClientError[] = [];
    const winner = await new Promise<Connection | undefined>((resolve) => {
      let pending = conns.length;
      conns.forEach((c, i) => {
        dials[i].then(
          () => resolve(c),
          (e: EtcdClientError) => {
            errors[i] = e;
            if (--pending === 0) resolve(undefined);
          },
        );
      });
    });
    if (winner) {
      for (const other of conns) if (other !== winner) other.close();
      return winner;
    }
    for (const c of conns) c.close();
    if (errors.length === 1) throw errors[0];
    throw new EtcdClientError(
      `cannot reach any of ${conns.length} endpoints within ${formatDuration(this.dialTimeoutMs)}: ${errors
        .map((e) =>
          e.message
            .replace(/^cannot reach /, '')
            .replace(/ within [^ ]+ /, ' ')
            .replace(/; [^;]*$/, ''),
        )
        .join(', ')}; check --endpoints`,
      errors.every((e) => e.kind === 'tls') ? 'tls' : 'unreachable',
    );
  }

  /** Call metadata: the auth token when there are credentials (etcd's metadata `token`). */
  private async metadata(conn: Connection): Promise<grpc.Metadata> {
    const md = new grpc.Metadata();
    if (!this.options.credentials) return md;
    this.token ??= this.authenticate(conn);
    let token: string | undefined;
    try {
      token = await this.token;
    } catch (e) {
      this.token = undefined;
      throw e;
    }
    if (token) md.set('token', token);
    return md;
  }

  /** Auth.Authenticate, as clientv3 does on connect; "authentication is not enabled" means no token. */
  private async authenticate(conn: Connection): Promise<string | undefined> {
    const creds = this.options.credentials!;
    const password = typeof creds.password === 'string' ? creds.password : await creds.password();
    const ep = conn.endpoint.text;
    this.options.debug?.(`→ Auth.Authenticate ${ep} (user ${creds.user})`);
    return new Promise((resolve, reject) => {
      conn.auth.Authenticate(
        { name: creds.user, password },
        new grpc.Metadata(),
        { deadline: Date.now() + this.commandTimeoutMs },
        (err: grpc.ServiceError | null, res: unknown) => {
          if (err && err.details === EtcdText.authNotEnabled) resolve(undefined);
          else if (err) reject(callError(err, ep, this.commandTimeoutMs));
          else resolve((res as { token?: string }).token || undefined);
        },
      );
    });
  }

  /** One unary call; `R` is the response shape of `method` (the .proto's, as grpc-js hands it over). */
  private async unary<R>(svc: ServiceName, method: string, req: Wire): Promise<{ res: R; endpoint: string }> {
    try {
      return await this.unaryOnce<R>(svc, method, req);
    } catch (e) {
      // A token that expired (or went stale) during long work: authenticate again, once, and retry.
      if (!this.options.credentials || !(e instanceof EtcdClientError) || !REAUTH_DETAILS.has(e.serverMessage ?? '')) throw e;
      this.token = undefined;
      return this.unaryOnce<R>(svc, method, req);
    }
  }

  private async unaryOnce<R>(svc: ServiceName, method: string, req: Wire): Promise<{ res: R; endpoint: string }> {
    const conn = await this.connection();
    const md = await this.metadata(conn);
    const client: UnaryMethods = conn[svc];
    const ep = conn.endpoint.text;
    const started = Date.now();
    const name = `${SERVICE_NAMES[svc]}.${method}`;
    this.options.debug?.(`→ ${name} ${ep}`);
    return new Promise((resolve, reject) => {
      client[method](req, md, { deadline: Date.now() + this.commandTimeoutMs }, (err: grpc.ServiceError | null, res: unknown) => {
        const took = Date.now() - started;
        if (err) {
          this.options.debug?.(`← ${name} ${ep} ${grpc.status[err.code] ?? err.code} (${took}ms): ${err.details}`);
          const mapped = callError(err, ep, this.commandTimeoutMs);
          // The etcd API unimplemented: a Lifeboat member's peer port given as a client endpoint says so.
          if (err.code === grpc.status.UNIMPLEMENTED)
            peerPortError(conn.endpoint, conn.tls).then(
              (peer) => reject(peer ?? mapped),
              () => reject(mapped),
            );
          else reject(mapped);
        } else {
          this.options.debug?.(`← ${name} ${ep} OK (${took}ms)`);
          resolve({ res: res as R, endpoint: ep });
        }
      });
    });
  }
}

// ---- typed → wire ----

const str = (n: number | bigint | undefined) => (n === undefined ? '0' : String(n));

/**
 * range_end only when non-empty. protobufjs sends a field that is set even when
 * it is empty, and etcd 3.4 then sees a non-nil empty range_end, which its index
 * reads as "every key ≥ key" instead of "the key alone".
 */
const rangeEnd = (b: Buffer | string | undefined): Wire => {
  const bytes = toBytes(b);
  return bytes.length > 0 ? { range_end: bytes } : {};
};

/** Exported for tests. */
export function rangeToWire(key: Buffer | string, o: RangeOptions): Wire {
  return {
    key: toBytes(key),
    ...rangeEnd(o.rangeEnd),
    limit: str(o.limit),
    revision: str(o.revision),
    sort_order: o.sortOrder ?? 'NONE',
    sort_target: o.sortTarget ?? 'KEY',
    serializable: !!o.serializable,
    keys_only: !!o.keysOnly,
    count_only: !!o.countOnly,
  };
}

function putToWire(key: Buffer | string, value: Buffer | string, o: PutOptions): Wire {
  return { key: toBytes(key), value: toBytes(value), lease: str(o.lease), prev_kv: !!o.prevKv };
}

/** Exported for tests. */
export function deleteToWire(key: Buffer | string, o: DeleteOptions): Wire {
  return { key: toBytes(key), ...rangeEnd(o.rangeEnd), prev_kv: !!o.prevKv };
}

function opToWire(op: TxnOp): Wire {
  if ('range' in op) {
    const { key, ...o } = op.range;
    return { request_range: rangeToWire(key, o) };
  }
  if ('put' in op) {
    const { key, value, ...o } = op.put;
    return { request_put: putToWire(key, value, o) };
  }
  const { key, ...o } = op.deleteRange;
  return { request_delete_range: deleteToWire(key, o) };
}

function txnToWire(req: TxnRequest): Wire {
  return {
    compare: (req.compare ?? []).map((c) => {
      const w: Wire = { result: c.result, target: c.target, key: toBytes(c.key), ...rangeEnd(c.rangeEnd) };
      switch (c.target) {
        case 'VERSION':
          w.version = str(c.value as number);
          break;
        case 'CREATE':
          w.create_revision = str(c.value as number);
          break;
        case 'MOD':
          w.mod_revision = str(c.value as number);
          break;
        case 'LEASE':
          w.lease = str(c.value as bigint);
          break;
        case 'VALUE':
          w.value = toBytes(c.value as Buffer | string);
          break;
      }
      return w;
    }),
    success: (req.success ?? []).map(opToWire),
    failure: (req.failure ?? []).map(opToWire),
  };
}

function txnFromWire(w: WireTxnResponse): TxnResult {
  return {
    header: headerFromWire(w.header),
    succeeded: !!w.succeeded,
    responses: (w.responses ?? []).map((r) => {
      if (r.response_range) return { range: rangeFromWire(r.response_range) };
      if (r.response_put) return { put: putFromWire(r.response_put) };
      if (r.response_delete_range) return { deleteRange: deleteFromWire(r.response_delete_range) };
      return { txn: txnFromWire(r.response_txn ?? {}) } as never;
    }),
  };
}
