// One gRPC channel to one endpoint, with etcd's KV, Cluster, Maintenance and Watch services on it, and a dial
// that either reaches READY within the dial timeout or explains why not.
import net from 'node:net';
import * as grpc from '#grpc-js';
import { service } from '../proto/grpcClients.js';
import type { Endpoint } from './endpoints.js';
import { connectReason, isTlsReason, unreachableError } from './errors.js';
import { peerPortError } from './peerPort.js';
import type { TlsMaterial } from './tls.js';

// grpc-js builds each service's methods from the .proto at run time, so its types
// cannot name them: these say how the ones we call are called.

/** A unary method: request, metadata, options, and a callback with the response. */
export type UnaryMethod = (
  req: object,
  md: grpc.Metadata,
  opts: grpc.CallOptions,
  cb: (err: grpc.ServiceError | null, res: unknown) => void,
) => grpc.ClientUnaryCall;

/** A service's unary methods by name (Range, MemberList, Status, ...). */
export type UnaryMethods = grpc.Client & Record<string, UnaryMethod>;

/** Watch: one bidirectional stream (its one method, Watch). */
export type WatchClient = grpc.Client & Record<string, (md: grpc.Metadata) => grpc.ClientDuplexStream<unknown, unknown>>;

export const CHANNEL_OPTIONS: grpc.ChannelOptions = {
  // Snapshots and large ranges: receive without limit, as etcdctl does.
  'grpc.max_receive_message_length': -1,
  // A 64 KiB HTTP/2 window (grpc-js's default) holds a snapshot stream back to a
  // round trip per 64 KiB; grpc-go (etcdctl) grows its window up to 16 MiB.
  'grpc-node.flow_control_window': 16 << 20,
  // Retry a refused connection quickly within the dial timeout.
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 1000,
};

const { READY, TRANSIENT_FAILURE, SHUTDOWN } = grpc.connectivityState;

/** What grpc-js's secure connector keeps for tls.connect (channel-credentials.js). */
type SecureConnector = { connectionOptions?: { servername?: string } };
type MakesConnectors = { _createSecureConnector: (...args: unknown[]) => SecureConnector };

/**
 * grpc-js sets the TLS ServerName (SNI) to the endpoint's host even when it is an
 * IP address, which RFC 6066 forbids and Node warns about (DEP0123) in the middle
 * of a command's output. Its connector's options are left without it for an IP:
 * tls.connect then checks the certificate against `host`, the same IP, so the
 * IP SAN is still verified (the TLS tests connect to 127.0.0.1 certificates).
 */
function withoutIpServerName(credentials: grpc.ChannelCredentials): grpc.ChannelCredentials {
  const c = credentials as unknown as Partial<MakesConnectors>;
  // A grpc-js without this internal keeps its own behaviour (test/tls/ipServerName.test.ts then fails on the warning).
  if (typeof c._createSecureConnector !== 'function') return credentials;
  const make = c._createSecureConnector.bind(c);
  c._createSecureConnector = (...args: unknown[]) => {
    const connector = make(...args);
    const o = connector.connectionOptions;
    if (o?.servername !== undefined && net.isIP(o.servername) !== 0) delete o.servername;
    return connector;
  };
  return credentials;
}

export class Connection {
  readonly channel: grpc.Channel;
  readonly kv: UnaryMethods;
  readonly cluster: UnaryMethods;
  /** unary methods only: Snapshot is read straight off HTTP/2 (snapshotStream.ts) */
  readonly maintenance: UnaryMethods;
  readonly watch: WatchClient;
  readonly auth: UnaryMethods;
  /** unary methods; LeaseKeepAlive (a stream) through `leaseStream` */
  readonly lease: UnaryMethods;
  readonly leaseStream: WatchClient;
  private dialing?: Promise<void>;
  private closed = false;

  constructor(
    readonly endpoint: Endpoint,
    /** undefined: plaintext */
    readonly tls: TlsMaterial | undefined,
  ) {
    const credentials = tls ? withoutIpServerName(grpc.credentials.createFromSecureContext(tls.secureContext, tls.verify)) : grpc.credentials.createInsecure();
    this.channel = new grpc.Channel(endpoint.address, credentials, CHANNEL_OPTIONS);
    const make = (name: string) => {
      const Ctor = service(name);
      return new Ctor(endpoint.address, credentials, { channelOverride: this.channel });
    };
    this.kv = make('etcdserverpb.KV') as UnaryMethods;
    this.cluster = make('etcdserverpb.Cluster') as UnaryMethods;
    this.maintenance = make('etcdserverpb.Maintenance') as UnaryMethods;
    this.watch = make('etcdserverpb.Watch') as WatchClient;
    this.auth = make('etcdserverpb.Auth') as UnaryMethods;
    this.lease = make('etcdserverpb.Lease') as UnaryMethods;
    this.leaseStream = this.lease as unknown as WatchClient;
  }

  /** Resolves once the channel is READY; rejects by `deadline` with a one-line reason. Memoized. */
  dial(deadline: number, dialTimeoutMs: number): Promise<void> {
    this.dialing ??= this.waitReady(deadline, dialTimeoutMs);
    return this.dialing;
  }

  private async waitReady(deadline: number, dialTimeoutMs: number): Promise<void> {
    let reason: string | undefined;
    for (;;) {
      if (this.closed) throw unreachableError(this.endpoint.text, dialTimeoutMs, 'closed');
      let state = this.channel.getConnectivityState(true);
      if (state === READY) return;
      if (state === TRANSIENT_FAILURE) {
        // The channel keeps its last connection error to itself; a fail-fast call
        // made now is refused at once and carries it in its details.
        reason = (await this.lastError(deadline)) ?? reason;
        // A certificate problem does not go away by retrying: report it at once, unless the endpoint is a
        // member's peer port (etcd's closes a TLS connection that brings gRPC), which the error then says.
        if (reason !== undefined && isTlsReason(reason))
          throw (await peerPortError(this.endpoint, this.tls)) ?? unreachableError(this.endpoint.text, dialTimeoutMs, reason);
        state = this.channel.getConnectivityState(false);
        if (state === READY) return;
      }
      if (state === SHUTDOWN) throw unreachableError(this.endpoint.text, dialTimeoutMs, reason ?? 'channel shut down');
      const changed = await new Promise<boolean>((resolve) => {
        if (Date.now() >= deadline) return resolve(false);
        this.channel.watchConnectivityState(state, deadline, (err) => resolve(!err));
      });
      if (!changed) throw unreachableError(this.endpoint.text, dialTimeoutMs, reason);
    }
  }

  private lastError(deadline: number): Promise<string | undefined> {
    return new Promise((resolve) => {
      const probeDeadline = Math.min(deadline, Date.now() + 500);
      // Fail fast (grpc-js's default, and a Metadata option there, not a call option).
      this.maintenance.Status({}, new grpc.Metadata({ waitForReady: false }), { deadline: probeDeadline }, (err: grpc.ServiceError | null) => {
        if (!err || err.code === grpc.status.DEADLINE_EXCEEDED) return resolve(undefined);
        if (err.code !== grpc.status.UNAVAILABLE) return resolve(undefined);
        resolve(connectReason(err.details ?? err.message));
      });
    });
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.kv.close();
    this.cluster.close();
    this.maintenance.close();
    this.watch.close();
    this.channel.close();
  }
}
