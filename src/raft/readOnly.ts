// Linearizable reads by ReadIndex (Raft thesis §6.4): the leader records its commit
// index, confirms it is still leader by a heartbeat round acknowledged by a quorum,
// and then the read may be served once that index is applied. LeaderReads is the
// leader's side (raft.ts hands it the requests and the heartbeat acks); a follower
// forwards its requests to the leader and reports the leader's answers.
import type { RaftLog } from './log.js';
import type { Outbox } from './outbox.js';
import type { ProgressTracker } from './tracker.js';
import { EntryType, MessageType, NONE, type Message, type NodeId, type RaftConfig } from './types.js';

export interface PendingRead {
  index: number;
  context: Uint8Array;
  /** Who asked: the leader itself or a follower that forwarded the request. */
  from: NodeId;
  acks: Set<NodeId>;
}

export function contextKey(ctx: Uint8Array): string {
  return Buffer.from(ctx.buffer, ctx.byteOffset, ctx.byteLength).toString('base64');
}

export class ReadOnlyQueue {
  private queue: PendingRead[] = [];
  private byKey = new Map<string, PendingRead>();

  add(index: number, context: Uint8Array, from: NodeId, self: NodeId): void {
    const key = contextKey(context);
    if (this.byKey.has(key)) return;
    const r: PendingRead = { index, context, from, acks: new Set([self]) };
    this.queue.push(r);
    this.byKey.set(key, r);
  }

  /** Records an acknowledgement; returns the acks so far, or undefined if unknown. */
  ack(from: NodeId, context: Uint8Array): Set<NodeId> | undefined {
    const r = this.byKey.get(contextKey(context));
    if (!r) return undefined;
    r.acks.add(from);
    return r.acks;
  }

  /** Releases every request up to and including the one with this context (FIFO). */
  release(context: Uint8Array): PendingRead[] {
    const key = contextKey(context);
    const i = this.queue.findIndex((r) => contextKey(r.context) === key);
    if (i < 0) return [];
    const done = this.queue.splice(0, i + 1);
    for (const r of done) this.byKey.delete(contextKey(r.context));
    return done;
  }

  lastContext(): Uint8Array | undefined {
    return this.queue.length > 0 ? this.queue[this.queue.length - 1].context : undefined;
  }

  clear(): void {
    this.queue = [];
    this.byKey.clear();
  }
}

/** What the leader's reads use of the protocol's state (raft.ts's Raft). */
export interface ReadHost {
  readonly id: NodeId;
  readonly cfg: RaftConfig;
  readonly log: RaftLog;
  readonly trk: ProgressTracker;
  readonly outbox: Outbox;
  readonly term: number;
  msg(type: MessageType, to: NodeId): Message;
}

export class LeaderReads {
  private readonly queue = new ReadOnlyQueue();
  /** Read requests that arrived before the leader committed an entry of its term. */
  private pending: Message[] = [];

  constructor(
    private readonly r: ReadHost,
    /** Sends a heartbeat round carrying `context` (replication.ts). */
    private readonly heartbeat: (context: Uint8Array) => void,
  ) {}

  /** A read request, made here (to: NONE) or forwarded by a follower. */
  request(m: Message): void {
    const log = this.r.log;
    const context = m.entries[0]?.data ?? new Uint8Array(0);
    // Until an entry of this term commits, our commit index may be behind the
    // cluster's (even alone: a learner may have applied more before a restart).
    if (log.term(log.committed) !== this.r.term) {
      this.pending.push(m);
      return;
    }
    if (this.r.trk.isSoleVoter(this.r.id)) {
      this.respond(m.from, log.committed, context);
      return;
    }
    if (this.r.cfg.readOnly === 'lease') {
      this.respond(m.from, log.committed, context);
      return;
    }
    this.queue.add(log.committed, context, m.from, this.r.id);
    this.heartbeat(context);
  }

  /** A heartbeat response carrying a read's context. */
  ack(from: NodeId, context: Uint8Array): void {
    const acks = this.queue.ack(from, context);
    if (!acks || !this.r.trk.hasQuorum(acks)) return;
    for (const r of this.queue.release(context)) this.respond(r.from, r.index, r.context);
  }

  /** The commit index moved: requests that waited for an entry of this term to commit go on. */
  committed(): void {
    if (this.pending.length > 0 && this.r.log.term(this.r.log.committed) === this.r.term) {
      const waiting = this.pending;
      this.pending = [];
      for (const r of waiting) this.request(r);
    }
  }

  /** The context of the newest read still waiting for its heartbeat round (the next round carries it). */
  lastContext(): Uint8Array | undefined {
    return this.queue.lastContext();
  }

  /** A new term or role: no read in flight is answered. */
  reset(): void {
    this.queue.clear();
    this.pending = [];
  }

  private respond(to: NodeId, index: number, context: Uint8Array): void {
    if (to === this.r.id || to === NONE) this.r.outbox.readStates.push({ index, context });
    else this.r.outbox.send({ ...this.r.msg(MessageType.ReadIndexResp, to), index, entries: [{ term: 0, index: 0, type: EntryType.Normal, data: context }] });
  }
}
