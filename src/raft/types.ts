// The Raft core's vocabulary. Node IDs are uint64 and held as bigint; terms and
// indexes are plain numbers (2^53 entries is beyond any log we will keep).
import type { ProgressState } from './progress.js';

export type NodeId = bigint;
/** "No node": no vote cast, no leader known. */
export const NONE: NodeId = 0n;

export enum EntryType {
  Normal = 0,
  ConfChange = 1,
}

export interface Entry {
  term: number;
  index: number;
  type: EntryType;
  /** Opaque to the core for Normal entries; an encoded ConfChange for ConfChange entries. */
  data: Uint8Array;
}

/** What must be on disk before a vote is answered or an append acknowledged. */
export interface HardState {
  term: number;
  vote: NodeId;
  commit: number;
}

export interface ConfState {
  voters: NodeId[];
  learners: NodeId[];
}

export interface SnapshotMeta {
  index: number;
  term: number;
  conf: ConfState;
}

export interface Snapshot {
  meta: SnapshotMeta;
  /** The application's state at meta.index; opaque to the core. */
  data: Uint8Array;
}

export type ConfChangeType = 'addVoter' | 'addLearner' | 'promote' | 'remove' | 'update';

export interface ConfChange {
  type: ConfChangeType;
  nodeId: NodeId;
  /** Application data carried with the change (member name, peer URLs, ...). */
  context: Uint8Array;
}

export enum MessageType {
  Hup = 'Hup', // local: start an election
  Beat = 'Beat', // local: leader sends heartbeats
  Prop = 'Prop', // proposal, possibly forwarded to the leader
  PropReject = 'PropReject', // leader -> forwarder: proposal refused (entries carry the data)
  App = 'App',
  AppResp = 'AppResp',
  Vote = 'Vote',
  VoteResp = 'VoteResp',
  PreVote = 'PreVote',
  PreVoteResp = 'PreVoteResp',
  Snap = 'Snap',
  Heartbeat = 'Heartbeat',
  HeartbeatResp = 'HeartbeatResp',
  TransferLeader = 'TransferLeader',
  TimeoutNow = 'TimeoutNow',
  ReadIndex = 'ReadIndex',
  ReadIndexResp = 'ReadIndexResp',
  Unreachable = 'Unreachable', // local: transport could not reach `from`
  SnapStatus = 'SnapStatus', // local: transport reports a snapshot send (reject = failed)
}

export interface Message {
  type: MessageType;
  from: NodeId;
  to: NodeId;
  term: number;
  /** App: term of the entry before `entries`; Vote/PreVote: candidate's last term; AppResp reject: term at rejectHint. */
  logTerm: number;
  /** App: index of the entry before `entries`; Vote/PreVote: candidate's last index; AppResp: matched (or rejected) index. */
  index: number;
  entries: Entry[];
  commit: number;
  snapshot?: Snapshot;
  reject: boolean;
  /** AppResp reject: the follower's best guess of where the logs may agree. */
  rejectHint: number;
  /** ReadIndex request context; Heartbeat carries the read context it confirms; TimeoutNow/Vote: 'transfer'. */
  context?: Uint8Array;
}

export enum StateType {
  Follower = 'Follower',
  PreCandidate = 'PreCandidate',
  Candidate = 'Candidate',
  Leader = 'Leader',
}

export interface SoftState {
  lead: NodeId;
  state: StateType;
}

export interface ReadState {
  /** The commit index at the time of the request; reads may be served once applied reaches it. */
  index: number;
  context: Uint8Array;
}

export interface DroppedProposal {
  entries: Entry[];
  reason: string;
}

/**
 * One batch of work the driver must do, in this order:
 *  1. send `messages` (the leader's appends may go out while its own write is in flight);
 *  2. persist `snapshot`, `entries` and `hardState` (fsync when `mustSync`);
 *  3. send `messagesAfterPersist` (acks and votes that promise what was just persisted);
 *  4. apply `snapshot` then `committedEntries`;
 *  5. call advance(ready).
 */
export interface Ready {
  softState?: SoftState;
  hardState?: HardState;
  entries: Entry[];
  snapshot?: Snapshot;
  messages: Message[];
  messagesAfterPersist: Message[];
  committedEntries: Entry[];
  readStates: ReadState[];
  droppedProposals: DroppedProposal[];
  mustSync: boolean;
}

/** State the core is restarted from (what the driver persisted). */
export interface RaftStatus {
  id: NodeId;
  term: number;
  vote: NodeId;
  commit: number;
  applied: number;
  lead: NodeId;
  state: StateType;
  conf: ConfState;
  firstIndex: number;
  lastIndex: number;
  /** The leader's view of each member's replication (empty on non-leaders). */
  progress: Map<NodeId, { match: number; next: number; state: ProgressState }>;
  leadTransferee: NodeId;
}

export interface PersistedState {
  hardState: HardState;
  /** The latest snapshot's metadata; index 0 with an empty conf for a fresh node. */
  snapshot: SnapshotMeta;
  /** Entries after snapshot.index, contiguous. */
  entries: Entry[];
}

export interface RaftConfig {
  id: NodeId;
  /** Ticks without hearing a leader before a follower campaigns (randomized in [e, 2e)). */
  electionTick: number;
  heartbeatTick: number;
  /** Seeded source of randomness in [0, 1): the core never calls Math.random. */
  random: () => number;
  /** Cap on the bytes of entries in one append message, and of committed entries in one Ready. */
  maxSizePerMsg: number;
  /** Cap on in-flight append messages per follower in replicate state. */
  maxInflightMsgs: number;
  preVote: boolean;
  checkQuorum: boolean;
  /** 'lease' serves reads on the leader's lease (only valid with checkQuorum). */
  readOnly: 'safe' | 'lease';
  /** The application's applied index at restart (defaults to the snapshot index). */
  applied?: number;
  /**
   * true: when the commit index moves, a follower in Replicate that forwarded none of
   * the entries not yet known to it as committed gets no commit-only append: it learns the
   * commit from the next append or heartbeat, or from sendOwedCommits() (the member
   * calls it a few ms later). One message each way fewer per commit for the followers
   * nobody waits on; the followers whose clients wait are told at once.
   */
  lazyCommit?: boolean;
}

export class RaftError extends Error {
  constructor(
    readonly code: RaftErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'RaftError';
  }
}

export type RaftErrorCode =
  'ProposalDropped' | 'NotLeader' | 'ConfChangePending' | 'InvalidConfChange' | 'TransferInProgress' | 'BadTransferee' | 'Compacted' | 'Unavailable';
