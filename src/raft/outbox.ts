// What stepping the protocol produced for the next Ready, besides the log: messages
// to send, read states, dropped proposals. A message to a peer is folded into the
// one already in the outbox for it where it continues it (one append, one ack per
// peer per Ready). raft.ts fills it; rawNode.ts empties it into each Ready.
import { invariant } from './invariant.js';
import { MessageType, type DroppedProposal, type Message, type NodeId, type ReadState } from './types.js';

export interface TrafficCounts {
  /** Appends folded into one already in the outbox for the same follower. */
  appendsFolded: number;
  /** Append responses folded into one already in the outbox for the same leader. */
  acksFolded: number;
  /** Commit-only appends a follower took in without acknowledging. */
  commitOnly: number;
}

/** A message still in the outbox that later ones to the same peer are folded into. */
interface OpenSlot {
  m: Message | undefined;
  /** Bytes of entry data it carries. */
  bytes: number;
  /** Its entries array is its own (not the log's slice) and may grow. */
  owned: boolean;
  epoch: number;
}

function dropMessage(slot: OpenSlot): void {
  slot.m = undefined;
}

export class Outbox {
  msgs: Message[] = [];
  readStates: ReadState[] = [];
  dropped: DroppedProposal[] = [];
  /** The last append to each peer in msgs, which a later append continuing it is folded into. */
  private openAppends = new Map<NodeId, OpenSlot>();
  /** The last successful append response to each peer in msgs, which later ones raise. */
  private openAcks = new Map<NodeId, OpenSlot>();
  /**
   * Bumped by clear(): a slot holds a message of this outbox only if it carries this
   * epoch. Slots are reused rather than the maps cleared (clearing allocates a new table
   * at every Ready, and the garbage cost the core half its speed at one proposal per Ready).
   */
  private epoch = 0;
  /** What folding saved since takeTrafficCounts() last asked (for the simulator and benchmarks). */
  private traffic: TrafficCounts = { appendsFolded: 0, acksFolded: 0, commitOnly: 0 };

  constructor(private readonly self: NodeId) {}

  isEmpty(): boolean {
    return this.msgs.length === 0 && this.readStates.length === 0 && this.dropped.length === 0;
  }

  /** Empties the outbox once a Ready holds what it held: later messages fold into none of it. */
  clear(): void {
    this.msgs = [];
    this.epoch++;
    this.openAppends.forEach(dropMessage);
    this.openAcks.forEach(dropMessage);
    this.readStates = [];
    this.dropped = [];
  }

  send(m: Message): void {
    invariant(m.to !== this.self, `message ${m.type} to self`);
    this.msgs.push(m);
  }

  /**
   * Folds an append (leader) into the one already in the outbox for that peer when it
   * continues it in the same term: one message per peer per Ready carries every new
   * entry and the latest commit (two appends delivered back to back, as the network
   * might anyway). Entries are folded while the message stays within maxBytes.
   * Returns the index of the last entry the outbox's message carried before (0: none),
   * or undefined if `m` does not fold (send it with sendAppend).
   */
  foldAppend(m: Message, maxBytes: number): number | undefined {
    const open = this.openAppends.get(m.to);
    const o = open?.epoch === this.epoch ? open.m : undefined;
    if (!open || !o || o.term !== m.term) return undefined;
    const last = o.index + o.entries.length;
    const lastTerm = o.entries.length > 0 ? o.entries[o.entries.length - 1].term : o.logTerm;
    if (m.index !== last || m.logTerm !== lastTerm) return undefined;
    let bytes = 0;
    for (const e of m.entries) bytes += e.data.length;
    if (o.entries.length > 0 && m.entries.length > 0 && open.bytes + bytes > maxBytes) return undefined;
    // Entries to acknowledge now, or an append that asks for an ack: a commit-only mark no longer applies.
    if (m.entries.length > 0 || m.context === undefined) delete o.context;
    if (m.entries.length > 0) {
      if (!open.owned) {
        // The first entries may be the log's own array slice: copy before growing it.
        o.entries = o.entries.slice();
        open.owned = true;
      }
      for (const e of m.entries) o.entries.push(e);
      open.bytes += bytes;
    }
    o.commit = Math.max(o.commit, m.commit);
    this.traffic.appendsFolded++;
    return last > o.index ? last : 0;
  }

  /** Sends an append (leader) that later ones may be folded into until the next clear(). */
  sendAppend(m: Message): void {
    invariant(m.type === MessageType.App, 'sendAppend takes appends');
    let bytes = 0;
    for (const e of m.entries) bytes += e.data.length;
    this.send(m);
    const slot = this.openAppends.get(m.to);
    if (!slot) {
      this.openAppends.set(m.to, { m, bytes, owned: false, epoch: this.epoch });
      return;
    }
    slot.m = m;
    slot.bytes = bytes;
    slot.owned = false;
    slot.epoch = this.epoch;
  }

  /** The append to `to` still in the outbox that later ones would be folded into. */
  openAppend(to: NodeId): Message | undefined {
    const open = this.openAppends.get(to);
    return open?.epoch === this.epoch ? open.m : undefined;
  }

  /**
   * Sends a successful append response (follower). One already in the outbox to that
   * peer in this term is raised to the higher index instead: one ack per Ready. It
   * leaves after this Ready's write, which holds every entry either acknowledges, and
   * within a term the leader's log only grows, so the higher index is still held.
   */
  sendAck(m: Message): void {
    invariant(m.type === MessageType.AppResp && !m.reject, 'sendAck takes successful append responses');
    const slot = this.openAcks.get(m.to);
    const open = slot?.epoch === this.epoch ? slot.m : undefined;
    if (open && open.term === m.term) {
      open.index = Math.max(open.index, m.index);
      this.traffic.acksFolded++;
      return;
    }
    this.send(m);
    if (!slot) {
      this.openAcks.set(m.to, { m, bytes: 0, owned: false, epoch: this.epoch });
      return;
    }
    slot.m = m;
    slot.epoch = this.epoch;
  }

  /** A commit-only append was answered with no ack. */
  countUnacked(): void {
    this.traffic.commitOnly++;
  }

  /** Counts of messages saved (appends and acks folded, commit updates not acknowledged) since the last call. */
  takeTrafficCounts(): TrafficCounts {
    const t = this.traffic;
    this.traffic = { appendsFolded: 0, acksFolded: 0, commitOnly: 0 };
    return t;
  }
}
