// A tiny hand-driven cluster for unit tests of the core: every node persists
// into an in-memory store, messages are delivered only when the test says so,
// and any message can be dropped by a filter.
import {
  RawNode,
  StateType,
  bootstrapState,
  emptyState,
  type Entry,
  type Message,
  type NodeId,
  type PersistedState,
  type RaftKnobs,
  type RaftOptions,
  type ReadState,
  type DroppedProposal,
  type Snapshot,
} from '../../src/raft/index.js';
import { Rng } from '../sim/rng.js';

export interface TestNode {
  raft: RawNode;
  persisted: PersistedState;
  snapshotData: Uint8Array;
  applied: Entry[];
  readStates: ReadState[];
  dropped: DroppedProposal[];
  /** Every message this node ever sent, for assertions. */
  sent: Message[];
}

/** A seeded source of randomness for a node's election timer. */
export function rng(seed: number): () => number {
  const r = new Rng(seed);
  return () => r.next();
}

export function options(id: NodeId, extra: Partial<RaftOptions> = {}): RaftOptions {
  return {
    id,
    electionTick: 10,
    heartbeatTick: 1,
    random: rng(Number(id) * 7919),
    maxSizePerMsg: 1024 * 1024,
    maxInflightMsgs: 256,
    preVote: true,
    checkQuorum: true,
    readOnly: 'safe',
    ...extra,
  };
}

export class TestNetwork {
  nodes = new Map<NodeId, TestNode>();
  queue: Message[] = [];
  /** Return false to drop a message. */
  filter: (m: Message) => boolean = () => true;

  /** Founding voters 1..n (bigint IDs) plus `learners` that start empty. */
  constructor(voters: number, extra: Partial<RaftOptions> & RaftKnobs = {}) {
    const ids = Array.from({ length: voters }, (_, i) => BigInt(i + 1));
    const boot = bootstrapState(ids.map((id) => ({ id, context: new Uint8Array(0) })));
    for (const id of ids) this.add(id, structuredClone(boot), extra);
  }

  add(id: NodeId, persisted: PersistedState = emptyState(), extra: Partial<RaftOptions> & RaftKnobs = {}): TestNode {
    const { plantedBug, ...opts } = extra;
    const node: TestNode = {
      raft: new RawNode(options(id, opts), structuredClone(persisted), { plantedBug }),
      persisted,
      snapshotData: new Uint8Array(0),
      applied: [],
      readStates: [],
      dropped: [],
      sent: [],
    };
    this.nodes.set(id, node);
    return node;
  }

  node(id: number | bigint): TestNode {
    const n = this.nodes.get(BigInt(id));
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  /** Restart a node from what it persisted, as after a crash. */
  restart(id: number | bigint, extra: Partial<RaftOptions> = {}): TestNode {
    const old = this.node(id);
    const node = this.add(BigInt(id), old.persisted, { ...extra, applied: old.persisted.snapshot.index });
    node.applied = old.applied.filter((e) => e.index <= old.persisted.snapshot.index);
    node.snapshotData = old.snapshotData;
    return node;
  }

  /** Handle one ready on a node, persisting before sending the acks. */
  processReady(n: TestNode): boolean {
    if (!n.raft.hasReady()) return false;
    const rd = n.raft.ready();
    for (const m of rd.messages) this.enqueue(n, m);
    if (rd.snapshot) this.persistSnapshot(n, rd.snapshot);
    if (rd.entries.length > 0) {
      const first = rd.entries[0].index;
      n.persisted.entries = n.persisted.entries.filter((e) => e.index < first).concat(rd.entries);
    }
    if (rd.hardState) n.persisted.hardState = { ...rd.hardState };
    for (const m of rd.messagesAfterPersist) this.enqueue(n, m);
    for (const e of rd.committedEntries) n.applied.push(e);
    n.readStates.push(...rd.readStates);
    n.dropped.push(...rd.droppedProposals);
    n.raft.advance(rd);
    return true;
  }

  private persistSnapshot(n: TestNode, s: Snapshot): void {
    n.persisted.snapshot = s.meta;
    n.persisted.entries = [];
    n.snapshotData = s.data;
    n.applied = n.applied.filter((e) => e.index <= s.meta.index);
  }

  private enqueue(n: TestNode, m: Message): void {
    n.sent.push(m);
    this.queue.push(m);
  }

  /** Compact a node's log at its applied index (the state machine's snapshot is the applied list). */
  compact(id: number | bigint, index: number): void {
    const n = this.node(id);
    const data = new TextEncoder().encode(String(index));
    n.raft.compact(index, data);
    const meta = n.raft.snapshotMeta();
    n.persisted.snapshot = meta;
    n.persisted.entries = n.persisted.entries.filter((e) => e.index > index);
    n.snapshotData = data;
  }

  /** Deliver queued messages and process readies until nothing moves (bounded). */
  stabilize(maxRounds = 1000): void {
    for (let round = 0; round < maxRounds; round++) {
      let moved = false;
      for (const n of this.nodes.values()) moved = this.processReady(n) || moved;
      const batch = this.queue;
      this.queue = [];
      for (const m of batch) {
        const to = this.nodes.get(m.to);
        if (!to || !this.filter(m)) continue;
        to.raft.step(m);
        moved = true;
      }
      if (!moved) return;
    }
    throw new Error('network did not stabilize');
  }

  tick(id: number | bigint, times = 1): void {
    for (let i = 0; i < times; i++) this.node(id).raft.tick();
  }

  tickAll(times = 1): void {
    for (let i = 0; i < times; i++) {
      for (const n of this.nodes.values()) n.raft.tick();
      this.stabilize();
    }
  }

  /** Ticks every node until one is leader (bounded); returns its ID. */
  electLeader(maxTicks = 200): NodeId {
    for (let i = 0; i < maxTicks; i++) {
      const lead = this.leader();
      if (lead !== undefined) return lead;
      this.tickAll();
    }
    throw new Error('no leader elected');
  }

  leader(): NodeId | undefined {
    for (const [id, n] of this.nodes) if (n.raft.status().state === StateType.Leader) return id;
    return undefined;
  }

  /** Isolate a node: drop everything to and from it. */
  isolate(id: number | bigint): void {
    const b = BigInt(id);
    this.filter = (m) => m.from !== b && m.to !== b;
  }

  heal(): void {
    this.filter = () => true;
  }
}

export const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);
export const text = (b: Uint8Array): string => new TextDecoder().decode(b);
