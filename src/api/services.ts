// etcd's v3 gRPC services (KV, Cluster, Maintenance) and grpc.health.v1 on top
// of an EtcdBackend that the member implements. Errors are etcd's gRPC statuses.
// Watch, Lease and Auth are registered next to them (watchService.ts, leaseService.ts,
// authService.ts). With auth on, each call's user is resolved from its token and
// checked where etcd 3.4 checks it: reads here, writes at apply (their entry
// carries the user), the membership changes and Defragment/Snapshot/Hash/HashKV
// for the root role; MemberList, Status, Alarm, MoveLeader and Compact are open.
// Each unary call hands its client's deadline (grpc-timeout) to the backend, which
// neither proposes, reads through ReadIndex, nor waits past it. KV requests get
// etcd's checks first (requestCheck.ts), Txn with the member's --max-txn-ops.
import type { GrpcServer } from '../net/grpcServer.js';
import type { CallStatus, Reply, ServerStreamCall, UnaryHandler } from '../net/serverCalls.js';
import { ErrLearnerNotSupported, toEtcdError, unconvertedAuthError } from './errors.js';
import { GrpcCode } from '../net/grpcCode.js';
import { callerOf, type Caller } from './caller.js';
import { checkDeleteRequest, checkPutRequest, checkRangeRequest, checkTxnRequest } from './requestCheck.js';
import type { AuthInfo } from '../kv/index.js';
import type { Alarm, Member } from '../kv/types.js';
import { AlarmType } from '../kv/types.js';
import type {
  CompactionRequest,
  DeleteRangeRequest,
  DeleteRangeResponse,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  TxnRequest,
  TxnResponse,
} from '../kv/types.js';
import {
  compactionFromWire,
  deleteRangeFromWire,
  deleteRangeToWire,
  putFromWire,
  putToWire,
  rangeFromWire,
  rangeToWire,
  txnFromWire,
  txnToWire,
  type WireCompactionRequest,
  type WireDeleteRangeRequest,
  type WireInt,
  type WirePutRequest,
  type WireRangeRequest,
  type WireTxnRequest,
} from './convert.js';
import { serviceDefinition } from '../proto/load.js';

export interface Header {
  cluster_id: string;
  member_id: string;
  revision: string;
  raft_term: string;
}

export interface StatusInfo {
  version: string;
  dbSize: number;
  dbSizeInUse: number;
  leader: bigint;
  raftIndex: number;
  raftTerm: number;
  raftAppliedIndex: number;
  errors: string[];
  isLearner: boolean;
}

/** What the client API needs from a member. Every method may throw an EtcdError. */
export interface EtcdBackend {
  header(revision: number): Header;
  currentRevision(): number;
  isLearner(): boolean;
  /** --max-txn-ops: the most operations a Txn may hold in one branch. */
  readonly maxTxnOps: number;
  /** The user a caller is; undefined without a token or certificate. Throws "invalid auth token". */
  authInfo(c: Caller): Promise<AuthInfo | undefined>;
  /** Throws unless auth is off or `ai` holds the root role (etcd's IsAdminPermitted). */
  requireAdmin(ai: AuthInfo | undefined): void;
  /**
   * `deadline`, the client's (Date.now() scale), is when a request is no longer
   * proposed, read through ReadIndex, nor waited for.
   */
  range(r: RangeRequest, ai?: AuthInfo, deadline?: number): Promise<RangeResponse>;
  put(r: PutRequest, ai?: AuthInfo, deadline?: number): Promise<PutResponse>;
  deleteRange(r: DeleteRangeRequest, ai?: AuthInfo, deadline?: number): Promise<DeleteRangeResponse>;
  txn(r: TxnRequest, ai?: AuthInfo, deadline?: number): Promise<TxnResponse>;
  compact(r: CompactionRequest, deadline?: number): Promise<void>;
  memberAdd(peerURLs: string[], isLearner: boolean, deadline?: number): Promise<{ member: Member; members: Member[] }>;
  memberRemove(id: bigint, deadline?: number): Promise<Member[]>;
  memberUpdate(id: bigint, peerURLs: string[], deadline?: number): Promise<Member[]>;
  memberPromote(id: bigint, deadline?: number): Promise<Member[]>;
  memberList(): Promise<Member[]>;
  status(): Promise<StatusInfo>;
  hashKV(revision: number): Promise<{ hash: number; compactRevision: number; revision: number }>;
  hash(): Promise<number>;
  /** A snapshot file to stream: its first `size` bytes are the database, then their sha256. */
  snapshot(): Promise<SnapshotToSend>;
  moveLeader(target: bigint, deadline?: number): Promise<void>;
  alarm(action: 'GET' | 'ACTIVATE' | 'DEACTIVATE', memberId: bigint, alarm: AlarmType, deadline?: number): Promise<Alarm[]>;
  defragment(): Promise<void>;
}

// Request shapes of the Cluster and Maintenance calls (KV's are in convert.ts), as
// grpc-js hands them over: 64-bit integers as decimal strings, enums as names.
interface MemberAddRequest {
  peerURLs?: string[];
  isLearner?: boolean;
}
interface MemberIdRequest {
  ID: WireInt;
}
interface MemberUpdateRequest extends MemberIdRequest {
  peerURLs?: string[];
}
interface HashKVRequest {
  revision?: WireInt;
}
interface MoveLeaderRequest {
  targetID?: WireInt;
}
interface AlarmRequest {
  action?: 'GET' | 'ACTIVATE' | 'DEACTIVATE';
  memberID?: WireInt;
  alarm?: string;
}

/** An error as the gRPC status clients expect: etcd's code and text, or Unknown. */
export function toStatus(e: unknown): CallStatus {
  const etcd = toEtcdError(e);
  if (etcd) return { code: etcd.code, details: etcd.message };
  const msg = e instanceof Error ? e.message : String(e);
  return { code: GrpcCode.Unknown, details: msg };
}

/**
 * A unary handler around an async function, for calls open to anyone (no caller
 * is learned, as `authed` does: `fn` gets none) but given the call's deadline;
 * errors become etcd statuses. `Req`: the request's shape.
 */
function unary<Req>(fn: (req: Req, ai: undefined, deadline: number) => Promise<unknown>): UnaryHandler<Req> {
  return (call, cb) => {
    fn(call.request, undefined, call.deadline).then(
      (r) => cb(null, r),
      (e) => cb(toStatus(e)),
    );
  };
}

/** A unary handler that first learns who calls (`fn` gets the call's deadline too); errors become etcd statuses. */
function authed<Req>(b: EtcdBackend, fn: (req: Req, ai: AuthInfo | undefined, deadline: number) => Promise<unknown>): UnaryHandler<Req> {
  return (call, cb) => {
    b.authInfo(callerOf(call))
      .then((ai) => fn(call.request, ai, call.deadline))
      .then(
        (r) => cb(null, r),
        (e) => cb(toStatus(e)),
      );
  };
}

/**
 * etcd 3.4's authMaintenanceServer: the root role for Defragment, Snapshot, Hash and
 * HashKV, its refusals passed on unconverted (code Unknown, "auth: permission denied").
 */
async function requireAdminRaw(b: EtcdBackend, c: Caller): Promise<void> {
  try {
    b.requireAdmin(await b.authInfo(c));
  } catch (e) {
    throw unconvertedAuthError(e);
  }
}

/** A Maintenance call for the root role only, refused with etcd 3.4's unconverted errors (voters only). */
function adminRaw<Req>(b: EtcdBackend, fn: (req: Req) => Promise<unknown>): UnaryHandler<Req> {
  return (call, cb) => {
    const run = async () => {
      if (b.isLearner()) throw ErrLearnerNotSupported;
      await requireAdminRaw(b, callerOf(call));
      return fn(call.request);
    };
    run().then(
      (r) => cb(null, r),
      (e) => cb(toStatus(e)),
    );
  };
}

function memberToWire(m: Member): Record<string, unknown> {
  return { ID: m.id.toString(), name: m.name, peerURLs: m.peerURLs, clientURLs: m.clientURLs, isLearner: m.isLearner };
}

// Large chunks: per-message cost, not bandwidth, bounds the stream (etcd clients accept up to 2 GiB).
const SNAPSHOT_CHUNK = 1 << 20;

export interface SnapshotToSend {
  /** bytes of the whole snapshot: the database, then its 32-byte sha256 */
  size: number;
  /** those bytes in order, in chunks of at most SNAPSHOT_CHUNK (iterated once) */
  chunks(chunkBytes: number): AsyncIterable<Buffer>;
  /** called once the snapshot is no longer needed (sent or failed) */
  done(): void;
}

/** Resolves on the call's next 'drain', 'cancelled' or 'error', and leaves no listener behind (one a chunk piled up past the warning limit). */
function drainedOrGone(call: ServerStreamCall): Promise<void> {
  const events = ['drain', 'cancelled', 'error'];
  return new Promise((resolve) => {
    const done = () => {
      for (const ev of events) call.off(ev, done);
      resolve();
    };
    for (const ev of events) call.on(ev, done);
  });
}

/** Streams the snapshot's chunks as they are read (never whole in memory), the trailer's sha256 last. */
async function streamSnapshot(call: ServerStreamCall, snap: SnapshotToSend): Promise<void> {
  try {
    let sent = 0;
    for await (const blob of snap.chunks(SNAPSHOT_CHUNK)) {
      sent += blob.length;
      // etcd's remaining_bytes: what is still to come after this message.
      const ok = call.write({ remaining_bytes: String(snap.size - sent), blob });
      // A client that goes away mid-stream must not leave us waiting for a drain.
      if (!ok && !call.cancelled) await drainedOrGone(call);
      if (call.cancelled) return;
    }
    if (sent !== snap.size) throw new Error(`snapshot ended at ${sent} of ${snap.size} bytes`);
    call.end();
  } finally {
    snap.done();
  }
}
/** etcd's AlarmType names, by value. */
const ALARM_NAMES = ['NONE', 'NOSPACE', 'CORRUPT'];

export function registerEtcdServices(server: GrpcServer, b: EtcdBackend): void {
  const h = (rev: number) => b.header(rev);
  // A learner serves only Status and serializable Range (SEMANTICS.md "Leadership").
  const voterOnly =
    <Req, T>(fn: (req: Req, ai: AuthInfo | undefined, deadline?: number) => Promise<T>) =>
    (req: Req, ai?: AuthInfo, deadline?: number) => {
      if (b.isLearner()) return Promise.reject(ErrLearnerNotSupported);
      return fn(req, ai, deadline);
    };
  /** The membership changes need the root role (etcd's checkMembershipOperationPermission). */
  const admin =
    <Req, T>(fn: (req: Req, deadline?: number) => Promise<T>) =>
    (req: Req, ai: AuthInfo | undefined, deadline?: number) => {
      b.requireAdmin(ai);
      return fn(req, deadline);
    };

  server.addService(serviceDefinition('etcdserverpb.KV'), {
    Range: authed(b, async (w: WireRangeRequest, ai, deadline) => {
      const r = rangeFromWire(w);
      checkRangeRequest(r);
      if (b.isLearner() && !r.serializable) throw ErrLearnerNotSupported;
      return rangeToWire(await b.range(r, ai, deadline), h);
    }),
    Put: authed(
      b,
      voterOnly(async (w: WirePutRequest, ai, deadline) => {
        const r = putFromWire(w);
        checkPutRequest(r);
        return putToWire(await b.put(r, ai, deadline), h);
      }),
    ),
    DeleteRange: authed(
      b,
      voterOnly(async (w: WireDeleteRangeRequest, ai, deadline) => {
        const r = deleteRangeFromWire(w);
        checkDeleteRequest(r);
        return deleteRangeToWire(await b.deleteRange(r, ai, deadline), h);
      }),
    ),
    Txn: authed(
      b,
      voterOnly(async (w: WireTxnRequest, ai, deadline) => {
        const r = txnFromWire(w);
        checkTxnRequest(r, b.maxTxnOps);
        return txnToWire(await b.txn(r, ai, deadline), h);
      }),
    ),
    // etcd 3.4 checks no permission for a compaction (only the token's validity).
    Compact: authed(
      b,
      voterOnly(async (w: WireCompactionRequest, _ai, deadline) => {
        await b.compact(compactionFromWire(w), deadline);
        return { header: h(b.currentRevision()) };
      }),
    ),
  });

  // Cluster RPCs answer with revision 0 in the header, as etcd does.
  server.addService(serviceDefinition('etcdserverpb.Cluster'), {
    MemberAdd: authed(
      b,
      voterOnly(
        admin(async (w: MemberAddRequest, deadline) => {
          const r = await b.memberAdd(w.peerURLs ?? [], !!w.isLearner, deadline);
          return { header: h(0), member: memberToWire(r.member), members: r.members.map(memberToWire) };
        }),
      ),
    ),
    MemberRemove: authed(
      b,
      voterOnly(admin(async (w: MemberIdRequest, deadline) => ({ header: h(0), members: (await b.memberRemove(BigInt(w.ID), deadline)).map(memberToWire) }))),
    ),
    MemberUpdate: authed(
      b,
      voterOnly(
        admin(async (w: MemberUpdateRequest, deadline) => ({
          header: h(0),
          members: (await b.memberUpdate(BigInt(w.ID), w.peerURLs ?? [], deadline)).map(memberToWire),
        })),
      ),
    ),
    MemberPromote: authed(
      b,
      voterOnly(admin(async (w: MemberIdRequest, deadline) => ({ header: h(0), members: (await b.memberPromote(BigInt(w.ID), deadline)).map(memberToWire) }))),
    ),
    MemberList: unary(voterOnly(async () => ({ header: h(0), members: (await b.memberList()).map(memberToWire) }))),
  });

  server.addService(serviceDefinition('etcdserverpb.Maintenance'), {
    Status: unary(async () => {
      const s = await b.status();
      return {
        header: h(b.currentRevision()),
        version: s.version,
        dbSize: String(s.dbSize),
        leader: s.leader.toString(),
        raftIndex: String(s.raftIndex),
        raftTerm: String(s.raftTerm),
        raftAppliedIndex: String(s.raftAppliedIndex),
        errors: s.errors,
        dbSizeInUse: String(s.dbSizeInUse),
        isLearner: s.isLearner,
      };
    }),
    HashKV: adminRaw(b, async (w: HashKVRequest) => {
      const r = await b.hashKV(Number(w.revision ?? 0));
      return { header: h(r.revision), hash: r.hash, compact_revision: String(r.compactRevision) };
    }),
    Hash: adminRaw(b, async () => ({ header: h(b.currentRevision()), hash: await b.hash() })),
    MoveLeader: unary(
      voterOnly(async (w: MoveLeaderRequest, _ai, deadline) => {
        await b.moveLeader(BigInt(w.targetID ?? 0), deadline);
        return { header: h(b.currentRevision()) };
      }),
    ),
    Alarm: unary(
      voterOnly(async (w: AlarmRequest, _ai, deadline) => {
        const type = Math.max(0, ALARM_NAMES.indexOf(w.alarm ?? 'NONE')) as AlarmType;
        const alarms = await b.alarm(w.action ?? 'GET', BigInt(w.memberID ?? 0), type, deadline);
        return { header: h(b.currentRevision()), alarms: alarms.map((a) => ({ memberID: a.memberId.toString(), alarm: ALARM_NAMES[a.alarm] })) };
      }),
    ),
    Defragment: adminRaw(b, async () => {
      await b.defragment();
      return { header: h(b.currentRevision()) };
    }),
    // As etcd: chunks with remaining_bytes, then one message holding the sha256 of all bytes.
    Snapshot: (call: ServerStreamCall) => {
      // An 'error' event (not destroy(), which sends no status) ends the call with this status.
      const fail = (e: unknown) => call.emit('error', Object.assign(new Error(toStatus(e).details), { code: toStatus(e).code, details: toStatus(e).details }));
      if (b.isLearner()) {
        fail(ErrLearnerNotSupported);
        return;
      }
      requireAdminRaw(b, callerOf(call))
        .then(() => b.snapshot())
        .then((snap) => streamSnapshot(call, snap).catch(fail), fail);
    },
  });

  server.addService(serviceDefinition('grpc.health.v1.Health'), {
    Check: (_call: unknown, cb: Reply) => cb(null, { status: 'SERVING' }),
    Watch: (call: ServerStreamCall) => {
      call.write({ status: 'SERVING' });
    },
  });
}
