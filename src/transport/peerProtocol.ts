// The peer service's shapes and rules, shared by both ends of the transport:
// the messages on the wire (envelopes, acks, identity and forward replies),
// what the transport asks of its member (TransportHost), the REFUSED_* texts
// and the one rule deciding who is refused. No I/O here.
import { anyFailpoint, failpointSet } from '../common/failpoint.js';
import type { Message, NodeId } from '../raft/types.js';

export const REFUSED_MISMATCH = 'cluster ID mismatch';
export const REFUSED_REMOVED = 'removed member';
export const REFUSED_SUPERSEDED = 'cluster superseded';

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
  /** The snapshot's bytes in order, in chunks of at most chunkBytes (iterated once; ending early releases what they are read from). */
  chunks(chunkBytes: number): AsyncIterable<Buffer>;
  /** called once the snapshot is no longer needed (sent or failed) */
  done(): void;
}

export interface Envelope {
  cluster_id: string;
  from: string;
  to: string;
  messages: Buffer[];
}

export interface Ack {
  refused: string;
  superseded_by: string;
  /** Set by a raw snapshot connection's receiver when it did not store the snapshot. */
  error?: string;
}

/** Why a sender is refused, or undefined if it is welcome. */
export function refusal(host: TransportHost, clusterId: bigint, from: NodeId): Ack | undefined {
  const ours = host.clusterId();
  if (clusterId !== ours) {
    if (host.ancestors().includes(clusterId)) return { refused: REFUSED_SUPERSEDED, superseded_by: ours.toString() };
    return { refused: REFUSED_MISMATCH, superseded_by: '0' };
  }
  return removedRefusal(host, from);
}

/** The refusal of a sender from our own cluster that was removed, if it was. */
export function removedRefusal(host: TransportHost, from: NodeId): Ack | undefined {
  return host.isRemoved(from) ? { refused: REFUSED_REMOVED, superseded_by: '0' } : undefined;
}

/** A partition a test made (failpoints drop-to / drop-from): traffic with that peer is lost. */
export function partitioned(direction: 'to' | 'from', peer: NodeId): boolean {
  return __LIFEBOAT_FAULTS__ && anyFailpoint() && failpointSet(`${direction === 'to' ? 'drop-to' : 'drop-from'}:${peer.toString(16)}`);
}
