// Membership: the configuration (voters and learners), conf-change validation and
// application, and the byte encoding of a conf change inside a log entry.
import type { ConfChange, ConfChangeType, ConfState, NodeId } from './types.js';

const TYPE_CODES: ConfChangeType[] = ['addVoter', 'addLearner', 'promote', 'remove', 'update'];

/** Layout: 1 byte type, 8 bytes node ID (big-endian), then the context bytes. */
export function encodeConfChange(cc: ConfChange): Uint8Array {
  const out = new Uint8Array(9 + cc.context.length);
  out[0] = TYPE_CODES.indexOf(cc.type);
  new DataView(out.buffer).setBigUint64(1, cc.nodeId);
  out.set(cc.context, 9);
  return out;
}

export function decodeConfChange(b: Uint8Array): ConfChange {
  if (b.length < 9 || b[0] >= TYPE_CODES.length) throw new Error(`malformed conf change entry (${b.length} bytes)`);
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return { type: TYPE_CODES[b[0]], nodeId: view.getBigUint64(1), context: b.slice(9) };
}

export class Config {
  readonly voters = new Set<NodeId>();
  readonly learners = new Set<NodeId>();

  static from(cs: ConfState): Config {
    const c = new Config();
    for (const v of cs.voters) c.voters.add(v);
    for (const l of cs.learners) c.learners.add(l);
    return c;
  }

  toConfState(): ConfState {
    const sort = (s: Set<NodeId>) => [...s].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return { voters: sort(this.voters), learners: sort(this.learners) };
  }

  has(id: NodeId): boolean {
    return this.voters.has(id) || this.learners.has(id);
  }

  /** Why a change cannot apply to this configuration, or undefined if it can. */
  check(cc: ConfChange): string | undefined {
    const id = cc.nodeId;
    if (id === 0n) return 'node ID 0 is reserved';
    switch (cc.type) {
      case 'addVoter':
        if (this.has(id)) return `node ${id.toString(16)} is already a member`;
        return undefined;
      case 'addLearner':
        if (this.has(id)) return `node ${id.toString(16)} is already a member`;
        return undefined;
      case 'promote':
        if (!this.has(id)) return `node ${id.toString(16)} is not a member`;
        if (!this.learners.has(id)) return `node ${id.toString(16)} is not a learner`;
        return undefined;
      case 'remove':
      case 'update':
        if (!this.has(id)) return `node ${id.toString(16)} is not a member`;
        if (cc.type === 'remove' && this.voters.has(id) && this.voters.size === 1) return 'cannot remove the last voter';
        return undefined;
    }
  }

  /** Applies a committed change; an invalid one is a no-op (it was checked when proposed). */
  apply(cc: ConfChange): boolean {
    if (this.check(cc) !== undefined) return false;
    const id = cc.nodeId;
    switch (cc.type) {
      case 'addVoter':
        this.voters.add(id);
        break;
      case 'addLearner':
        this.learners.add(id);
        break;
      case 'promote':
        this.learners.delete(id);
        this.voters.add(id);
        break;
      case 'remove':
        this.voters.delete(id);
        this.learners.delete(id);
        break;
      case 'update':
        break;
    }
    return true;
  }
}
