// Linearizable reads by ReadIndex (Raft thesis §6.4): the leader records its commit
// index, confirms it is still leader by a heartbeat round acknowledged by a quorum,
// and then the read may be served once that index is applied.
import type { NodeId } from './types.js';

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
