// Member-to-member gRPC: one long-lived stream per peer carrying batched Raft
// messages, snapshots on their own chunked stream with a CRC-32C checked before
// use, an identity probe, and forwarding of client requests to the leader.
// Every envelope names its cluster and sender; strangers are refused.
import * as grpc from '@grpc/grpc-js';
import { crc32c } from '@node-rs/crc32';
import fs from 'node:fs/promises';
import path from 'node:path';
import { decodeMessage, encodeMessage } from '../raft/codec.js';
import { MessageType, type Message, type NodeId } from '../raft/types.js';
import { service } from '../api/protos.js';
import { hostPort } from './urls.js';

export const REFUSED_MISMATCH = 'cluster ID mismatch';
export const REFUSED_REMOVED = 'removed member';
export const REFUSED_SUPERSEDED = 'cluster superseded';

/** Most messages queued for one peer; beyond it they are dropped and Raft resends. */
const MAX_QUEUED = 4096;
const SNAPSHOT_CHUNK = 1 << 20;
const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 2000;
/** A peer we have not heard from for this long no longer counts as connected. */
const ACTIVE_GAP_MS = 1500;

export interface IdentityReply {
  cluster_id: string;
  member_id: string;
  parent_cluster_id: string;
  superseded: boolean;
  removed: boolean;
  members_json: string;
}

export interface ForwardReply {
  json: string;
  error_code: number;
  error_message: string;
}

export interface TransportHost {
  memberId: NodeId;
  clusterId(): bigint;
  /** Clusters this one replaced (parent first); their members are told they were superseded. */
  ancestors(): bigint[];
  isRemoved(id: NodeId): boolean;
  deliver(m: Message): void;
  identity(asker: { clusterId: bigint; from: NodeId }): IdentityReply;
  forward(method: string, json: string): Promise<ForwardReply>;
  /** A peer refused our messages; reason is one of the REFUSED_* texts. */
  refused(peer: NodeId, reason: string, supersededBy: bigint): void;
  unreachable(peer: NodeId): void;
  /**
   * Take the data of an outgoing snapshot message (at send time) into a file the
   * transport streams from and then hands back with done().
   */
  snapshotData(m: Message): Promise<OutgoingSnapshot>;
  snapshotSent(peer: NodeId, ok: boolean): void;
  /** Where to keep a snapshot arriving from a peer: the transport writes `<file>.tmp`, fsyncs it, renames it to `file`. */
  incomingSnapshotFile(from: NodeId): string;
  /** A peer's snapshot is complete, checksummed and durable in `file`; the message carries no data. */
  snapshotReceived(m: Message, file: string): void;
  logEvent(level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>): void;
}

export interface OutgoingSnapshot {
  message: Message;
  file: string;
  /** called once the file is no longer needed (sent or failed) */
  done(): void;
}

interface Envelope {
  cluster_id: string;
  from: string;
  to: string;
  messages: Buffer[];
}

interface Ack {
  refused: string;
  superseded_by: string;
}

type PeerClient = grpc.Client & {
  Stream(): grpc.ClientDuplexStream<Envelope, Ack>;
  SendSnapshot(cb: (err: grpc.ServiceError | null, ack?: Ack) => void): grpc.ClientWritableStream<unknown>;
  Identity(req: unknown, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, r?: IdentityReply) => void): void;
  Forward(req: unknown, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, r?: ForwardReply) => void): void;
};

function newClient(url: string): PeerClient {
  const Ctor = service('lifeboat.peer.Peer');
  return new Ctor(hostPort(url), grpc.credentials.createInsecure(), {
    'grpc.keepalive_time_ms': 10_000,
    // grpc-js backs off up to 2 minutes by default; a peer that restarts must be seen at once.
    'grpc.initial_reconnect_backoff_ms': 100,
    'grpc.max_reconnect_backoff_ms': 1000,
    'grpc.max_receive_message_length': 64 << 20,
    'grpc.max_send_message_length': 64 << 20,
  }) as unknown as PeerClient;
}

/** The outgoing side towards one peer. */
class PeerSender {
  private client: PeerClient;
  private stream: grpc.ClientDuplexStream<Envelope, Ack> | undefined;
  private queue: Buffer[] = [];
  private flushScheduled = false;
  private backoff = BACKOFF_MIN_MS;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Send an envelope even with nothing queued: a hello, so the peer hears from us at once. */
  private greet = true;
  /** Log a lost connection once, not at every retry. */
  private reportedDown = false;
  dropped = 0;

  constructor(
    readonly id: NodeId,
    readonly url: string,
    private readonly host: TransportHost,
    private readonly onDown: (id: NodeId) => void,
  ) {
    this.client = newClient(url);
    // A member that just started (a learner, say) says hello: the leader, whose
    // connection attempts may be in backoff since the member was added, connects at once.
    setImmediate(() => this.flush());
  }

  /** The peer reached us, so it is listening: end any backoff and connect now. */
  peerIsUp(): void {
    if (this.closed || this.stream || !this.retryTimer) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.backoff = BACKOFF_MIN_MS;
    // grpc-js's channel keeps its own reconnect backoff; a fresh channel dials at once.
    this.client.close();
    this.client = newClient(this.url);
    this.flush();
  }

  enqueue(m: Message): void {
    if (this.closed) return;
    if (this.queue.length >= MAX_QUEUED) {
      this.dropped++;
      return;
    }
    this.queue.push(Buffer.from(encodeMessage(m)));
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => this.flush());
    }
  }

  private open(): grpc.ClientDuplexStream<Envelope, Ack> {
    const s = this.client.Stream();
    // The receiver sends headers as soon as it accepts the stream: the peer is up.
    s.on('metadata', () => {
      if (this.reportedDown) this.host.logEvent('info', 'peer is reachable again', { peer: this.id.toString(16), url: this.url });
      this.reportedDown = false;
    });
    s.on('data', (ack: Ack) => {
      if (!ack.refused) {
        // The peer accepted a batch: the connection works, retry quickly next time.
        this.backoff = BACKOFF_MIN_MS;
        return;
      }
      this.host.refused(this.id, ack.refused, BigInt(ack.superseded_by || '0'));
      // A refusing peer (another cluster at this URL, perhaps re-added later) is
      // retried with backoff like an unreachable one; what was queued is dropped.
      this.queue = [];
      this.scheduleRetry();
    });
    const lost = (err?: Error) => {
      if (this.stream !== s) return;
      this.stream = undefined;
      if (this.closed) return;
      this.onDown(this.id);
      this.host.unreachable(this.id);
      if (err && !this.reportedDown) {
        this.reportedDown = true;
        this.host.logEvent('warn', 'lost connection to peer', { peer: this.id.toString(16), url: this.url, error: err.message.split('\n')[0] });
      }
      this.scheduleRetry();
    };
    s.on('error', lost);
    s.on('end', () => lost());
    this.stream = s;
    return s;
  }

  private scheduleRetry(): void {
    if (this.retryTimer || this.closed) return;
    const wait = this.backoff;
    this.backoff = Math.min(this.backoff * 2, BACKOFF_MAX_MS);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.flush();
    }, wait);
  }

  private flush(): void {
    this.flushScheduled = false;
    if (this.closed || (this.queue.length === 0 && !this.greet) || this.retryTimer) return;
    this.greet = false;
    const s = this.stream ?? this.open();
    const batch = this.queue;
    this.queue = [];
    const env: Envelope = { cluster_id: this.host.clusterId().toString(), from: this.host.memberId.toString(), to: this.id.toString(), messages: batch };
    // The backoff is reset only by the peer's ack, not by a write: a write to a
    // dead or refusing peer is buffered and would otherwise retry it every tick.
    s.write(env);
  }

  sendSnapshot(m: Message): void {
    this.host.snapshotData(m).then(
      (snap) => void this.streamSnapshot(snap),
      (e: Error) => {
        this.host.logEvent('warn', 'could not take a snapshot for a peer', { peer: this.id.toString(16), error: e.message });
        this.host.snapshotSent(this.id, false);
      },
    );
  }

  /**
   * Streams the snapshot file chunk by chunk: each read is asynchronous and each
   * write waits for the stream to drain, so a large snapshot never holds the event
   * loop (a burst of a whole database once stalled a leader past the election
   * timeout, and every new leader started the same snapshot again).
   */
  private async streamSnapshot(snap: OutgoingSnapshot): Promise<void> {
    let finished = false;
    let wake: (() => void) | undefined;
    const call = this.client.SendSnapshot((err, ack) => {
      finished = true;
      wake?.();
      const ok = !err && !ack?.refused;
      if (ack?.refused) this.host.refused(this.id, ack.refused, BigInt(ack.superseded_by || '0'));
      if (err) this.host.logEvent('warn', 'snapshot send failed', { peer: this.id.toString(16), error: err.message.split('\n')[0] });
      this.host.snapshotSent(this.id, ok);
    });
    const drained = () =>
      new Promise<void>((resolve) => {
        wake = resolve;
        call.once('drain', resolve);
      }).finally(() => (wake = undefined));
    const base = { cluster_id: this.host.clusterId().toString(), from: this.host.memberId.toString(), to: this.id.toString() };
    let bytes = 0;
    try {
      const fh = await fs.open(snap.file, 'r');
      try {
        call.write({ ...base, header: Buffer.from(encodeMessage(snap.message)), data: Buffer.alloc(0), last: false, crc32c: 0 });
        let crc = 0;
        // Bounded by the file's size: every pass reads at least one byte or stops.
        for (;;) {
          if (finished) return;
          if (this.closed) {
            call.cancel(); // the callback reports the failure to Raft
            return;
          }
          const chunk = Buffer.allocUnsafe(SNAPSHOT_CHUNK);
          const { bytesRead } = await fh.read(chunk, 0, SNAPSHOT_CHUNK, bytes);
          if (bytesRead === 0) break;
          const data = chunk.subarray(0, bytesRead);
          crc = crc32c(data, crc);
          bytes += bytesRead;
          if (!call.write({ ...base, data, last: false, crc32c: 0 })) await drained();
        }
        call.write({ ...base, data: Buffer.alloc(0), last: true, crc32c: crc });
        call.end();
      } finally {
        await fh.close();
      }
      this.host.logEvent('info', 'sent snapshot to peer', { peer: this.id.toString(16), index: snap.message.snapshot?.meta.index, bytes });
    } catch (e) {
      this.host.logEvent('warn', 'snapshot send failed', { peer: this.id.toString(16), error: (e as Error).message });
      call.cancel(); // the callback reports the failure to Raft
    } finally {
      snap.done();
    }
  }

  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.stream?.end();
    this.stream = undefined;
    this.client.close();
  }

  call<T>(fn: (c: PeerClient, deadline: Date, cb: (err: grpc.ServiceError | null, r?: T) => void) => void, timeoutMs: number): Promise<T> {
    return new Promise((resolve, reject) => {
      fn(this.client, new Date(Date.now() + timeoutMs), (err, r) => (err ? reject(err) : resolve(r as T)));
    });
  }
}

export class PeerTransport {
  private server = new grpc.Server({ 'grpc.max_receive_message_length': 64 << 20 });
  private senders = new Map<NodeId, PeerSender>();
  private lastHeard = new Map<NodeId, number>();
  private activeFrom = new Map<NodeId, number>();

  constructor(private readonly host: TransportHost) {
    this.server.addService(service('lifeboat.peer.Peer').service, {
      Stream: (call: grpc.ServerDuplexStream<Envelope, Ack>) => this.onStream(call),
      SendSnapshot: (call: grpc.ServerReadableStream<Record<string, unknown>, Ack>, cb: grpc.sendUnaryData<Ack>) => this.onSnapshot(call, cb),
      Identity: (call: grpc.ServerUnaryCall<{ cluster_id: string; from: string }, IdentityReply>, cb: grpc.sendUnaryData<IdentityReply>) => {
        cb(null, this.host.identity({ clusterId: BigInt(call.request.cluster_id || '0'), from: BigInt(call.request.from || '0') }));
      },
      Forward: (call: grpc.ServerUnaryCall<{ cluster_id: string; method: string; json: string }, ForwardReply>, cb: grpc.sendUnaryData<ForwardReply>) => {
        if (BigInt(call.request.cluster_id || '0') !== this.host.clusterId()) {
          cb(null, { json: '', error_code: grpc.status.FAILED_PRECONDITION, error_message: REFUSED_MISMATCH });
          return;
        }
        this.host.forward(call.request.method, call.request.json).then(
          (r) => cb(null, r),
          (e: Error) => cb(null, { json: '', error_code: grpc.status.UNKNOWN, error_message: e.message }),
        );
      },
    });
  }

  async listen(urls: string[]): Promise<void> {
    for (const url of urls) {
      await new Promise<void>((resolve, reject) =>
        this.server.bindAsync(hostPort(url), grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(new Error(`cannot listen on peer URL ${url}: ${err.message}`)) : resolve())),
      );
    }
  }

  /** The peers to talk to (every other member), by ID and peer URLs. */
  setPeers(peers: Map<NodeId, string[]>): void {
    for (const [id, s] of this.senders) {
      const urls = peers.get(id);
      if (!urls || !urls.includes(s.url)) {
        s.close();
        this.senders.delete(id);
      }
    }
    for (const [id, urls] of peers) {
      if (id === this.host.memberId || this.senders.has(id) || urls.length === 0) continue;
      this.senders.set(id, new PeerSender(id, urls[0], this.host, (down) => this.forget(down)));
    }
  }

  send(messages: Message[]): void {
    for (const m of messages) {
      const s = this.senders.get(m.to);
      if (!s) {
        if (m.type === MessageType.Snap) this.host.snapshotSent(m.to, false);
        continue;
      }
      if (m.type === MessageType.Snap) s.sendSnapshot(m);
      else s.enqueue(m);
    }
  }

  /** Since when a peer has been continuously in contact (ms since epoch), if it is now. */
  activeSince(id: NodeId): number | undefined {
    const last = this.lastHeard.get(id);
    if (last === undefined || Date.now() - last > ACTIVE_GAP_MS) return undefined;
    return this.activeFrom.get(id);
  }

  /** A broken stream means the peer is not connected, whatever we heard last. */
  private forget(id: NodeId): void {
    this.lastHeard.delete(id);
    this.activeFrom.delete(id);
  }

  private heard(id: NodeId): void {
    const now = Date.now();
    const last = this.lastHeard.get(id);
    if (last === undefined || now - last > ACTIVE_GAP_MS) this.activeFrom.set(id, now);
    this.lastHeard.set(id, now);
  }

  /** Why a sender is refused, or undefined if it is welcome. */
  private refusal(clusterId: bigint, from: NodeId): Ack | undefined {
    const ours = this.host.clusterId();
    if (clusterId !== ours) {
      if (this.host.ancestors().includes(clusterId)) return { refused: REFUSED_SUPERSEDED, superseded_by: ours.toString() };
      return { refused: REFUSED_MISMATCH, superseded_by: '0' };
    }
    if (this.host.isRemoved(from)) return { refused: REFUSED_REMOVED, superseded_by: '0' };
    return undefined;
  }

  private onStream(call: grpc.ServerDuplexStream<Envelope, Ack>): void {
    call.sendMetadata(new grpc.Metadata());
    let warned = false;
    let acked = false;
    let sender: NodeId | undefined;
    call.on('data', (env: Envelope) => {
      const from = BigInt(env.from);
      const clusterId = BigInt(env.cluster_id);
      const no = this.refusal(clusterId, from);
      if (no) {
        if (!warned) {
          warned = true;
          this.host.logEvent('warn', no.refused === REFUSED_MISMATCH ? 'cluster ID mismatch' : `refused messages from ${no.refused}`, {
            peer: from.toString(16),
            remoteCluster: clusterId.toString(16),
            localCluster: this.host.clusterId().toString(16),
          });
        }
        call.write(no);
        return;
      }
      this.heard(from);
      this.senders.get(from)?.peerIsUp();
      sender = from;
      // One ack per stream tells the sender its messages are delivered (it resets its backoff).
      if (!acked) {
        acked = true;
        call.write({ refused: '', superseded_by: '0' });
      }
      for (const b of env.messages) {
        let m: Message;
        try {
          m = decodeMessage(b);
        } catch (e) {
          this.host.logEvent('warn', 'dropped a malformed peer message', { peer: from.toString(16), error: (e as Error).message });
          continue;
        }
        this.host.deliver(m);
      }
    });
    call.on('error', () => {
      if (sender !== undefined) this.forget(sender);
    });
    call.on('end', () => {
      if (sender !== undefined) this.forget(sender);
      call.end();
    });
  }

  /**
   * A snapshot arrives in chunks, written straight to a file as they come (the
   * stream pauses while the disk catches up), so a database of any size is never
   * held in memory. The CRC-32C over every byte is checked and the file made
   * durable before the member is told.
   */
  private onSnapshot(call: grpc.ServerReadableStream<Record<string, unknown>, Ack>, cb: grpc.sendUnaryData<Ack>): void {
    let header: Buffer | undefined;
    let from = 0n;
    let clusterId = 0n;
    let expectedCrc: number | undefined;
    let crc = 0;
    let bytes = 0;
    let file = '';
    let out: fs.FileHandle | undefined;
    let failed: Error | undefined;
    // Writes go one after another; `pending` is the tail of that chain.
    let pending: Promise<void> = Promise.resolve();
    const write = (data: Buffer) => {
      const at = bytes;
      bytes += data.length;
      crc = crc32c(data, crc);
      call.pause();
      pending = pending
        .then(async () => {
          if (failed) return;
          if (!out) {
            file = this.host.incomingSnapshotFile(from);
            out = await fs.open(`${file}.tmp`, 'w');
          }
          await out.write(data, 0, data.length, at);
        })
        .catch((e: Error) => {
          failed ??= e;
        })
        .finally(() => call.resume());
    };
    const discard = async () => {
      await out?.close().catch(() => undefined);
      if (file) await fs.rm(`${file}.tmp`, { force: true });
    };
    call.on('data', (c: { cluster_id: string; from: string; header: Buffer; data: Buffer; last: boolean; crc32c: number }) => {
      if (!header && c.header.length > 0) {
        header = c.header;
        from = BigInt(c.from);
        clusterId = BigInt(c.cluster_id);
        // Strangers are refused before anything reaches the disk.
        if (this.refusal(clusterId, from)) failed ??= new Error('refused');
      }
      if (c.data.length > 0 && !failed) write(c.data);
      if (c.last) expectedCrc = c.crc32c;
    });
    call.on('error', () => void pending.then(discard));
    call.on('end', () => {
      void pending.then(async () => {
        const no = this.refusal(clusterId, from);
        if (no) {
          await discard();
          return cb(null, no);
        }
        if (failed) {
          await discard();
          this.host.logEvent('warn', 'could not store a snapshot from a peer', { peer: from.toString(16), error: failed.message });
          return cb({ code: grpc.status.INTERNAL, details: `snapshot not stored: ${failed.message}` });
        }
        if (!header || expectedCrc === undefined || crc !== expectedCrc || !out) {
          await discard();
          this.host.logEvent('warn', 'discarded a damaged snapshot', { peer: from.toString(16), bytes });
          return cb({ code: grpc.status.DATA_LOSS, details: 'snapshot checksum mismatch' });
        }
        try {
          await out.sync();
          await out.close();
          await fs.rename(`${file}.tmp`, file);
          const dir = await fs.open(path.dirname(file), 'r');
          await dir.sync().finally(() => dir.close());
        } catch (e) {
          await discard();
          return cb({ code: grpc.status.INTERNAL, details: `snapshot not stored: ${(e as Error).message}` });
        }
        this.heard(from);
        this.host.snapshotReceived(decodeMessage(header), file);
        cb(null, { refused: '', superseded_by: '0' });
      });
    });
  }

  /** Asks whoever answers at a peer URL for its cluster identity (bounded by timeoutMs). */
  static async identity(url: string, asker: { clusterId: bigint; from: NodeId }, timeoutMs: number): Promise<IdentityReply> {
    const client = newClient(url);
    try {
      return await new Promise<IdentityReply>((resolve, reject) =>
        client.Identity({ cluster_id: asker.clusterId.toString(), from: asker.from.toString() }, { deadline: new Date(Date.now() + timeoutMs) }, (err, r) =>
          err ? reject(err) : resolve(r!),
        ),
      );
    } finally {
      client.close();
    }
  }

  /** Hands a client request to the leader. */
  async forward(leader: NodeId, method: string, json: string, timeoutMs: number): Promise<ForwardReply> {
    const s = this.senders.get(leader);
    if (!s) throw new Error(`no connection to leader ${leader.toString(16)}`);
    return s.call<ForwardReply>(
      (c, deadline, cb) => c.Forward({ cluster_id: this.host.clusterId().toString(), from: this.host.memberId.toString(), method, json }, { deadline }, cb),
      timeoutMs,
    );
  }

  droppedMessages(): number {
    let n = 0;
    for (const s of this.senders.values()) n += s.dropped;
    return n;
  }

  async close(): Promise<void> {
    for (const s of this.senders.values()) s.close();
    this.senders.clear();
    // Peer streams never end on their own: give in-flight calls a moment, then cut.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 300);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.server.forceShutdown();
  }
}
