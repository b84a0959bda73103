// Member-to-member gRPC, the connection side and the wiring: one long-lived
// stream per peer carrying batched Raft messages (queued, bounded, retried with
// backoff), snapshots handed to snapshotStream.ts on a connection of their own
// (rawSnapshot.ts; a chunked gRPC call for members from before it),
// an identity probe, and forwarding of client requests to the leader. The
// server side of the peer service is in handlers.ts; every envelope names its
// cluster and sender and strangers are refused (peerProtocol.ts). https://
// peer URLs are dialled with the peer certificate (peerCredentials.ts) and
// served over TLS ended by our own listener (net/tlsTermination.ts), so a
// rotated certificate is used by the next connection. The types and
// REFUSED_* texts the member uses are re-exported from here.
import type net from 'node:net';
import { encodeMessage } from '../raft/codec.js';
import { MessageType, type Message, type NodeId } from '../raft/types.js';
import { serviceDefinition } from '../proto/load.js';
import { GrpcServer } from '../net/grpcServer.js';
import type { ClientStreamCall } from '../net/grpcClient.js';
import { PeerClient } from './peerClient.js';
import { onStream, peerHandlers, type PeerContact } from './handlers.js';
import { partitioned, type Ack, type Envelope, type ForwardReply, type IdentityReply, type TransportHost } from './peerProtocol.js';
import { grpcCarrier, streamSnapshot, type OpenCarrier } from './snapshotStream.js';
import { acceptRawSnapshot, dialRawSnapshot, RAW_SNAPSHOT_MAGIC } from './rawSnapshot.js';
import { hostPort } from '../common/urls.js';
import { failpointSet } from '../common/failpoint.js';
import { listenWithAuthorityRewrite, type AuthorityRewriteListener } from '../net/authorityListener.js';
import type { RawConnection } from '../net/connectionMux.js';
import type { ServerTlsOptions } from '../net/tlsTermination.js';
import { PeerCredentials } from './peerCredentials.js';
import { dialRawPeer, RAW_PEER_MAGIC, RawPeerClientStream, RawPeerServerCall } from './rawPeerStream.js';

export { PeerCredentials } from './peerCredentials.js';

export {
  REFUSED_MISMATCH,
  REFUSED_REMOVED,
  REFUSED_SUPERSEDED,
  type ForwardReply,
  type IdentityReply,
  type OutgoingSnapshot,
  type TransportHost,
} from './peerProtocol.js';

/** Message streams opened and snapshots sent to peers, by kind: raw connections, or gRPC to peers that take none. */
export interface PeerCounts {
  streams: { raw: number; grpc: number };
  snapshots: { raw: number; grpc: number };
}

/** Most messages queued for one peer; beyond it they are dropped and Raft resends. */
const MAX_QUEUED = 4096;
/**
 * Bytes of messages per envelope (one more message may cross it): a catching-up
 * follower is owed up to 256 appends of 1 MiB at once, and one envelope of them
 * all would pass the 64 MiB message limit and fail the stream.
 */
const ENVELOPE_BYTES = 4 << 20;
const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 2000;
/** Failpoint `grpc-peer-stream-only`: neither take nor dial raw message streams, as a member from before them. */
const grpcStreamOnly = (): boolean => __LIFEBOAT_FAULTS__ && failpointSet('grpc-peer-stream-only');
/** A peer we have not heard from for this long no longer counts as connected. */
const ACTIVE_GAP_MS = 1500;

/** The gRPC client for a peer URL, with the peer certificate files as they are now. */
const newClient = (url: string, credentials: PeerCredentials) => new PeerClient(url, credentials.tlsFor(url));

/** The message stream to a peer: a raw connection (rawPeerStream.ts), or gRPC's Stream to a peer that has no raw one. */
type EnvelopeStream = ClientStreamCall<Envelope, Ack> | RawPeerClientStream;

/** The outgoing side towards one peer. */
class PeerSender {
  private client: PeerClient;
  /** The credentials' generation the client was made with: a later one means rotated files. */
  private clientGeneration: number;
  private stream: EnvelopeStream | undefined;
  /** The peer closed a raw connection before accepting it: it speaks only gRPC (an older Lifeboat). */
  private grpcOnly = grpcStreamOnly();
  /** Encoded only when written: a queue held back by the stream's backpressure costs no copies. */
  private queue: Message[] = [];
  /** The stream whose buffer is full: nothing more is written until it drains. */
  private waitingDrain: EnvelopeStream | undefined;
  private backoff = BACKOFF_MIN_MS;
  private retryTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Send an envelope even with nothing queued: a hello, so the peer hears from us at once. */
  private greet = true;
  private readonly fromText: string;
  private readonly toText: string;
  /** Our cluster ID as last written into an envelope (it is set once a joining member learns it). */
  private cluster: { id: bigint; text: string } = { id: 0n, text: '0' };
  /** Log a lost connection once, not at every retry. */
  private reportedDown = false;
  dropped = 0;

  constructor(
    readonly id: NodeId,
    readonly url: string,
    private readonly host: TransportHost,
    private readonly onDown: (id: NodeId) => void,
    private readonly credentials: PeerCredentials,
    /** Streams opened and snapshots sent so far, by kind (PeerTransport.counts). */
    private readonly counts: PeerCounts,
  ) {
    this.clientGeneration = credentials.generation();
    this.client = newClient(url, credentials);
    this.fromText = host.memberId.toString();
    this.toText = id.toString();
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
    // It may have restarted as a member that takes raw streams.
    this.grpcOnly = grpcStreamOnly();
    // A fresh channel dials at once, with the certificate files as they are now.
    this.renewClient();
    this.flush();
  }

  /** A fresh channel: it dials at once, with the credentials as they are now. */
  private renewClient(): void {
    this.client.close();
    this.clientGeneration = this.credentials.generation();
    this.client = newClient(this.url, this.credentials);
  }

  /** Queues a message; the caller flush()es once it has queued a whole batch. */
  enqueue(m: Message): void {
    if (this.closed) return;
    if (this.queue.length >= MAX_QUEUED) {
      this.dropped++;
      return;
    }
    this.queue.push(m);
  }

  private open(): EnvelopeStream {
    let s: EnvelopeStream;
    if (this.grpcOnly) {
      // Certificate files rotated since the channel was made: the new stream goes on a new connection that presents them.
      if (this.credentials.generation() !== this.clientGeneration) this.renewClient();
      s = this.client.stream();
      this.counts.streams.grpc++;
    } else {
      // A connection of its own, with the certificate files as they are now.
      s = dialRawPeer(this.url, this.credentials.tlsFor(this.url));
      this.counts.streams.raw++;
    }
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
      if (s instanceof RawPeerClientStream && !s.wasAccepted && s.connected) {
        // It answered, but not with a raw stream: a member from before them. Not a lost peer: on over gRPC at once.
        this.grpcOnly = true;
        this.host.logEvent('info', 'peer takes no raw message stream: messages go over gRPC', { peer: this.id.toString(16), url: this.url });
        this.greet = true;
        this.flush();
        return;
      }
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

  /** Writes what is queued, unless the stream is backed up (its drain flushes) or a retry waits. */
  flush(): void {
    if (this.closed || (this.queue.length === 0 && !this.greet) || this.retryTimer) return;
    const s = this.stream ?? this.open();
    if (this.waitingDrain === s) return;
    this.greet = false;
    let taken = 0;
    do {
      const batch: Buffer[] = [];
      let bytes = 0;
      while (taken < this.queue.length && (batch.length === 0 || bytes < ENVELOPE_BYTES)) {
        const b = encodeMessage(this.queue[taken++]);
        // A view of the encoder's own buffer, not a copy.
        batch.push(Buffer.from(b.buffer, b.byteOffset, b.byteLength));
        bytes += b.byteLength;
      }
      const env: Envelope = { cluster_id: this.clusterIdText(), from: this.fromText, to: this.toText, messages: batch };
      // The backoff is reset only by the peer's ack, not by a write: a write to a
      // dead or refusing peer is buffered and would otherwise retry it every tick.
      if (!s.write(env)) {
        // The rest waits in the queue, unencoded, until the stream drains.
        this.waitingDrain = s;
        s.once('drain', () => {
          if (this.waitingDrain === s) this.waitingDrain = undefined;
          this.flush();
        });
        break;
      }
    } while (taken < this.queue.length);
    this.queue = this.queue.slice(taken);
  }

  private clusterIdText(): string {
    const id = this.host.clusterId();
    if (id !== this.cluster.id) this.cluster = { id, text: id.toString() };
    return this.cluster.text;
  }

  sendSnapshot(m: Message): void {
    this.host.snapshotData(m).then(
      (snap) => {
        const overGrpc: OpenCarrier = (done) => {
          this.counts.snapshots.grpc++;
          return grpcCarrier(this.client)(done);
        };
        // A member that takes no raw message stream takes no raw snapshot either; one that answers a raw snapshot otherwise gets gRPC.
        const open: OpenCarrier = this.grpcOnly
          ? overGrpc
          : async (done) => {
              const raw = await dialRawSnapshot(this.url, this.credentials.tlsFor(this.url), done);
              if (!raw) return overGrpc(done);
              this.counts.snapshots.raw++;
              return raw;
            };
        void streamSnapshot(open, this.host, this.id, snap, () => this.closed);
      },
      (e: Error) => {
        this.host.logEvent('warn', 'could not take a snapshot for a peer', { peer: this.id.toString(16), error: e.message });
        this.host.snapshotSent(this.id, false);
      },
    );
  }

  close(): void {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.stream?.end();
    this.stream = undefined;
    this.client.close();
  }

  forward(req: { cluster_id: string; from: string; method: string; json: string }, timeoutMs: number): Promise<ForwardReply> {
    return this.client.forward(req, timeoutMs);
  }
}

export class PeerTransport {
  private server = new GrpcServer({ maxReceiveMessageLength: 64 << 20 });
  private senders = new Map<NodeId, PeerSender>();
  private readonly counts: PeerCounts = { streams: { raw: 0, grpc: 0 }, snapshots: { raw: 0, grpc: 0 } };
  private lastHeard = new Map<NodeId, number>();
  private activeFrom = new Map<NodeId, number>();
  private readonly listeners: AuthorityRewriteListener[] = [];
  private readonly contact: PeerContact = {
    heard: (id) => this.heard(id),
    forget: (id) => this.forget(id),
    peerIsUp: (id) => this.senders.get(id)?.peerIsUp(),
  };

  constructor(
    private readonly host: TransportHost,
    private readonly credentials = new PeerCredentials(),
  ) {
    this.server.addService(serviceDefinition('lifeboat.peer.Peer'), peerHandlers(this.host, this.contact));
  }

  /**
   * Serves the peer service on each URL, https:// ones over TLS with `tls` (the peer
   * certificate); a connection that opens with RAW_PEER_MAGIC is a peer's raw message stream.
   */
  async listen(urls: string[], tls?: ServerTlsOptions): Promise<void> {
    const raw: RawConnection[] = [
      { magic: RAW_PEER_MAGIC, accept: (socket: net.Socket) => onStream(this.host, this.contact, new RawPeerServerCall(socket)) },
      { magic: RAW_SNAPSHOT_MAGIC, accept: (socket: net.Socket) => acceptRawSnapshot(this.host, (id) => this.contact.heard(id), socket) },
    ];
    for (const url of urls) {
      const secure = url.startsWith('https:');
      if (secure && !tls) throw new Error(`cannot listen on peer URL ${url}: no TLS certificate (--peer-cert-file, --peer-key-file)`);
      try {
        this.listeners.push(
          await listenWithAuthorityRewrite(this.server, hostPort(url), {
            ...(grpcStreamOnly() ? {} : { raw }),
            ...(secure && tls ? { tls: { ...tls, listener: 'peer' } } : {}),
          }),
        );
      } catch (err) {
        throw new Error(`cannot listen on peer URL ${url}: ${(err as Error).message}`);
      }
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
      this.senders.set(id, new PeerSender(id, urls[0], this.host, (down) => this.forget(down), this.credentials, this.counts));
    }
  }

  /**
   * Hands messages to their peers' streams at once (no event-loop turn in between:
   * a Ready's messages arrive here together, so they share an envelope anyway).
   */
  send(messages: Message[]): void {
    const touched: PeerSender[] = [];
    for (const m of messages) {
      const s = partitioned('to', m.to) ? undefined : this.senders.get(m.to);
      if (!s) {
        if (m.type === MessageType.Snap) this.host.snapshotSent(m.to, false);
        continue;
      }
      if (m.type === MessageType.Snap) {
        s.sendSnapshot(m);
        continue;
      }
      s.enqueue(m);
      if (!touched.includes(s)) touched.push(s);
    }
    for (const s of touched) s.flush();
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

  /** Asks whoever answers at a peer URL for its cluster identity (bounded by timeoutMs). */
  static async identity(
    url: string,
    asker: { clusterId: bigint; from: NodeId },
    timeoutMs: number,
    credentials = new PeerCredentials(),
  ): Promise<IdentityReply> {
    const client = newClient(url, credentials);
    try {
      return await client.identity({ cluster_id: asker.clusterId.toString(), from: asker.from.toString() }, timeoutMs);
    } finally {
      client.close();
    }
  }

  /** Hands a client request to the leader. */
  async forward(leader: NodeId, method: string, json: string, timeoutMs: number): Promise<ForwardReply> {
    const s = partitioned('to', leader) ? undefined : this.senders.get(leader);
    if (!s) throw new Error(`no connection to leader ${leader.toString(16)}`);
    return s.forward({ cluster_id: this.host.clusterId().toString(), from: this.host.memberId.toString(), method, json }, timeoutMs);
  }

  /** Message streams opened and snapshots sent to peers so far: on raw connections, and over gRPC to peers that take none. */
  peerCounts(): PeerCounts {
    return { streams: { ...this.counts.streams }, snapshots: { ...this.counts.snapshots } };
  }

  droppedMessages(): number {
    let n = 0;
    for (const s of this.senders.values()) n += s.dropped;
    return n;
  }

  async close(): Promise<void> {
    for (const s of this.senders.values()) s.close();
    this.senders.clear();
    for (const l of this.listeners) l.stopAccepting();
    // Peer streams never end on their own: give in-flight calls a moment, then cut.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 300);
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.server.forceShutdown();
    await Promise.all(this.listeners.map((l) => l.close()));
  }
}
