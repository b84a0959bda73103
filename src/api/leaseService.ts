// etcd's Lease service (etcdserverpb.Lease) on top of a LeaseBackend the member
// implements (src/server/leases.ts). Answers follow etcd v3.4's v3rpc/lease.go: a
// keep-alive or time-to-live of an unknown lease is an answer (TTL 0, TTL -1), not
// an error; LeaseKeepAlive answers each request in order on its stream. The unary
// calls hand the client's deadline (grpc-timeout) to the backend, which neither
// proposes nor waits past it.
import type { GrpcServer } from '../net/grpcServer.js';
import type { Reply, StreamingCall, UnaryCall, UnaryHandler } from '../net/serverCalls.js';
import { ErrLearnerNotSupported } from './errors.js';
import { serviceDefinition } from '../proto/load.js';
import { toStatus, type Header } from './services.js';
import type { WireInt } from './convert.js';
import { endWith, type OpenStreams } from './watchService.js';
import { callerOf, type Caller } from './caller.js';
import type { AuthInfo } from '../kv/index.js';

export interface LeaseTimeToLive {
  /** Remaining seconds; -1 when the lease does not exist. */
  ttl: number;
  grantedTtl: number;
  keys: Buffer[];
}

export interface LeaseBackend {
  header(revision: number): Header;
  currentRevision(): number;
  isLearner(): boolean;
  /** id 0n: the member picks one. Resolves to the lease as granted (TTL raised to the minimum). `deadline`: the client's (Date.now() scale). */
  leaseGrant(ttl: number, id: bigint, deadline?: number): Promise<{ id: bigint; ttl: number }>;
  /** The user's entry is checked at apply: write access to every key attached to the lease. */
  leaseRevoke(id: bigint, ai?: AuthInfo, deadline?: number): Promise<void>;
  authInfo(c: Caller): Promise<AuthInfo | undefined>;
  /** The lease's TTL after the renewal, 0 when it does not exist (expired or revoked). */
  leaseRenew(id: bigint): Promise<number>;
  leaseTimeToLive(id: bigint, keys: boolean, deadline?: number): Promise<LeaseTimeToLive>;
  leaseLeases(): Promise<bigint[]>;
}

// Request shapes, as grpc-js hands them over (int64 as decimal strings).
interface LeaseGrantRequest {
  TTL?: WireInt;
  ID?: WireInt;
}
interface LeaseIdRequest {
  ID?: WireInt;
}
interface LeaseTimeToLiveRequest extends LeaseIdRequest {
  keys?: boolean;
}

/** A unary handler (refused on a learner; `fn` gets the call's deadline too); errors become etcd statuses. `Req`: the request's shape. */
function unary<Req>(b: LeaseBackend, fn: (req: Req, deadline: number) => Promise<unknown>): UnaryHandler<Req> {
  return (call, cb) => {
    const run = b.isLearner() ? Promise.reject(ErrLearnerNotSupported) : fn(call.request, call.deadline);
    run.then(
      (r) => cb(null, r),
      (e) => cb(toStatus(e)),
    );
  };
}

const big = (v: unknown): bigint => (v === undefined || v === null || v === '' ? 0n : BigInt(v as string));

export function registerLeaseService(server: GrpcServer, b: LeaseBackend, streams: OpenStreams): void {
  const h = () => b.header(b.currentRevision());
  server.addService(serviceDefinition('etcdserverpb.Lease'), {
    LeaseGrant: unary(b, async (w: LeaseGrantRequest, deadline) => {
      const l = await b.leaseGrant(Number(w.TTL ?? 0), big(w.ID), deadline);
      return { header: h(), ID: l.id.toString(), TTL: String(l.ttl), error: '' };
    }),
    LeaseRevoke: (call: UnaryCall<LeaseIdRequest>, cb: Reply) => {
      const run = async () => {
        if (b.isLearner()) throw ErrLearnerNotSupported;
        await b.leaseRevoke(big(call.request.ID), await b.authInfo(callerOf(call)), call.deadline);
        return { header: h() };
      };
      run().then(
        (r) => cb(null, r),
        (e) => cb(toStatus(e)),
      );
    },
    LeaseTimeToLive: unary(b, async (w: LeaseTimeToLiveRequest, deadline) => {
      const id = big(w.ID);
      const r = await b.leaseTimeToLive(id, !!w.keys, deadline);
      return { header: h(), ID: id.toString(), TTL: String(r.ttl), grantedTTL: String(r.grantedTtl), keys: r.keys };
    }),
    LeaseLeases: unary(b, async () => ({ header: h(), leases: (await b.leaseLeases()).map((id) => ({ ID: id.toString() })) })),
    LeaseKeepAlive: (call: StreamingCall) => {
      if (b.isLearner()) {
        endWith(call, ErrLearnerNotSupported);
        return;
      }
      if (!streams.add(call)) return;
      let done = false;
      // One renewal at a time, answered in the order asked.
      let chain: Promise<void> = Promise.resolve();
      call.on('data', (req: { ID?: string }) => {
        const id = big(req.ID);
        chain = chain.then(async () => {
          if (done) return;
          try {
            const ttl = await b.leaseRenew(id);
            if (!done) call.write({ header: h(), ID: id.toString(), TTL: String(ttl) });
          } catch (e) {
            if (done) return;
            done = true;
            endWith(call, e);
          }
        });
      });
      const stop = () => {
        done = true;
      };
      call.on('end', () => {
        // The chain's links catch their own errors.
        void chain.then(() => {
          if (!done) call.end();
          done = true;
        });
      });
      call.on('error', stop);
      call.on('cancelled', stop);
      call.on('close', stop);
    },
  });
}
