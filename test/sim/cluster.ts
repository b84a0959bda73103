// The simulated cluster: nodes (a Raft core, a disk that survives crashes, a state
// machine), the network between them, and the driver loop that follows the Ready
// contract, with crashes allowed at any point of it. Everything random comes from
// one seeded Rng; the invariants are checked as events happen.
import {
  EntryType,
  MessageType,
  NONE,
  RawNode,
  RaftError,
  StateType,
  bootstrapState,
  decodeConfChange,
  emptyState,
  type ConfChange,
  type ConfState,
  type Entry,
  type HardState,
  type Message,
  type NodeId,
  type PersistedState,
  type PlantedBug,
  type RaftOptions,
  type Ready,
  type Snapshot,
} from '../../src/raft/index.js';
import { Invariants, chainHash, diskLastIndex, entryHash, violation, type CheckLevel, type DiskLog } from './invariants.js';
import { Network, type Envelope } from './network.js';
import { Rng, mixSeed } from './rng.js';
import { Trace, node } from './trace.js';

/** Where in handling a Ready a node may crash. */
export type CrashPoint = 'after-send' | 'after-persist' | 'after-ack' | 'mid-apply' | 'before-advance';

/** The core's knobs for one run. */
export interface CoreSettings {
  electionTick: number;
  heartbeatTick: number;
  preVote: boolean;
  checkQuorum: boolean;
  maxSizePerMsg: number;
  maxInflightMsgs: number;
  /** RaftConfig.lazyCommit; owed commits are sent at a random step of settle() or at the next tick (the member's timer). */
  lazyCommit?: boolean;
}

/** How the network, the nodes and their disks misbehave (probabilities per message or per Ready). */
export interface Faults {
  /** Per message: lost. */
  drop: number;
  /** Per message: delivered twice. */
  dup: number;
  /** Per message: held back 1..maxDelay ticks (reordered). */
  delay: number;
  maxDelay: number;
  /** Per Ready: the node crashes at a random point of handling it. */
  readyCrash: number;
  /** Is the state machine durable (applied index recorded with each apply), or rebuilt from the snapshot at restart? */
  durableApply: boolean;
  /**
   * Per Ready that needs an fsync: the write stays in flight, as the server's driver
   * fsyncs off its event loop; meanwhile the node takes messages and ticks, and a
   * crash keeps or loses the write (a coin toss). 0: writes complete at once.
   */
  asyncWrite?: number;
  /** A write in flight completes 0..writeTicks ticks later (a slow disk); default 0: within the tick. */
  writeTicks?: number;
}

/**
 * An adversary that strikes at the moments that matter (all probabilities; 0 = off):
 * Figure 8 of the Raft paper needs a leader that commits and dies before the next
 * append goes out; a lost vote needs a crash right after voting and a quick return.
 */
export interface Nemesis {
  /** A leader crashes right after its commit index moves. */
  crashOnCommit: number;
  /** A node crashes right after it becomes leader. */
  crashNewLeader: number;
  /** A node is cut off alone right after it becomes leader (its appends stay its own). */
  isolateNewLeader: number;
  /** A Ready that changes the term or vote crashes right after its early messages. */
  crashOnVote: number;
  /** Nodes the nemesis (or a mid-Ready crash) kills come back within this many ticks. */
  quickRestart: number;
}

export const NO_NEMESIS: Nemesis = { crashOnCommit: 0, crashNewLeader: 0, isolateNewLeader: 0, crashOnVote: 0, quickRestart: 0 };

export const QUIET: Faults = { drop: 0, dup: 0, delay: 0, maxDelay: 1, readyCrash: 0, durableApply: true };

export interface Stats {
  ticks: number;
  messagesSent: number;
  messagesDelivered: number;
  messagesDropped: number;
  messagesDuplicated: number;
  partitions: number;
  crashes: number;
  crashesMidReady: number;
  /** Readies whose write stayed in flight while the node went on (Faults.asyncWrite). */
  writesInFlight: number;
  /** Crashes while a write was in flight. */
  crashesMidWrite: number;
  restarts: number;
  proposals: number;
  proposalsRefused: number;
  confChangesProposed: number;
  confChangesRefused: number;
  confChangesApplied: number;
  membersAdded: number;
  membersRemoved: number;
  leaderChanges: number;
  entriesCommitted: number;
  snapshotsSent: number;
  snapshotsApplied: number;
  compactions: number;
  readsServed: number;
  transfers: number;
  campaigns: number;
  /** Appends folded into one already queued for the same follower (one message per follower per Ready). */
  appendsFolded: number;
  /** Acks folded into one already queued for the same leader (one ack per Ready). */
  acksFolded: number;
  /** Commit-only appends taken in without an ack. */
  commitOnlyUnacked: number;
  /** Seeds whose liveness phase passed (a leader, a commit, every member caught up). */
  livenessPassed: number;
}

export function emptyStats(): Stats {
  return {
    ticks: 0,
    messagesSent: 0,
    messagesDelivered: 0,
    messagesDropped: 0,
    messagesDuplicated: 0,
    partitions: 0,
    crashes: 0,
    crashesMidReady: 0,
    writesInFlight: 0,
    crashesMidWrite: 0,
    restarts: 0,
    proposals: 0,
    proposalsRefused: 0,
    confChangesProposed: 0,
    confChangesRefused: 0,
    confChangesApplied: 0,
    membersAdded: 0,
    membersRemoved: 0,
    leaderChanges: 0,
    entriesCommitted: 0,
    snapshotsSent: 0,
    snapshotsApplied: 0,
    compactions: 0,
    readsServed: 0,
    transfers: 0,
    campaigns: 0,
    appendsFolded: 0,
    acksFolded: 0,
    commitOnlyUnacked: 0,
    livenessPassed: 0,
  };
}

/** The application's state: how far it applied and a hash of everything applied. */
export interface AppState {
  applied: number;
  hash: number;
}

/** What survives a crash. */
export interface Disk extends DiskLog {
  /** The state machine's durable copy (used at restart only when durableApply). */
  app: AppState;
}

const SNAP_MAGIC = 0x53494d31; // "SIM1"

export function encodeAppState(s: AppState): Uint8Array {
  const b = new Uint8Array(12);
  const v = new DataView(b.buffer);
  v.setUint32(0, SNAP_MAGIC);
  v.setUint32(4, s.applied);
  v.setUint32(8, s.hash);
  return b;
}

function decodeAppState(owner: NodeId, s: Snapshot): AppState {
  if (s.meta.index === 0) return { applied: 0, hash: 0 };
  const b = s.data;
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  if (b.length !== 12 || v.getUint32(0) !== SNAP_MAGIC) {
    violation('snapshot-data', `${node(owner)} got a snapshot at ${s.meta.index}@${s.meta.term} whose data is not a state machine image (${b.length} bytes)`);
  }
  const st = { applied: v.getUint32(4), hash: v.getUint32(8) };
  if (st.applied !== s.meta.index) violation('snapshot-data', `${node(owner)} got a snapshot labelled ${s.meta.index} holding the state at ${st.applied}`);
  return st;
}

export class SimNode {
  raft: RawNode | undefined;
  app: AppState = { applied: 0, hash: 0 };
  incarnation = 0;
  destroyed = false;
  /** Some member applied this node's removal, at this index (-1: not removed). */
  removalIndex = -1;
  /** Tick at which a removed member shuts down (-1: not scheduled). */
  destroyAt = -1;
  /** Tick at which a crashed node comes back (-1: not scheduled yet). */
  restartAt = -1;
  /** The Ready whose write is in flight (Faults.asyncWrite), due to complete at tick `dueAt`. */
  inflight: { rd: Ready; crashAt: CrashPoint | undefined; dueAt: number } | undefined;
  /** Last observed role, term and commit index, to notice transitions. */
  seenState: StateType = StateType.Follower;
  seenTerm = 0;
  seenCommit = 0;
  seenConf: ConfState = { voters: [], learners: [] };

  constructor(
    readonly id: NodeId,
    public disk: Disk,
  ) {}

  get up(): boolean {
    return this.raft !== undefined;
  }
}

export interface ClusterOptions {
  seed: number;
  /** Founding voters 1..voters. */
  voters: number;
  core: CoreSettings;
  faults: Faults;
  checks: CheckLevel;
  nemesis?: Nemesis;
  plantedBug?: PlantedBug;
  /** Flag any vote a learner grants, even one to a candidate that already counts it as a voter. */
  literalLearnerRule?: boolean;
  /**
   * When a removed member shuts down. 'etcd': one to two election timeouts after it
   * applies its own removal (etcd stops 10 ticks after), or a few election timeouts
   * after the leader applied it. 'when-applied' (default): once every other member
   * knows the removal is committed (members being removed themselves aside), as an
   * operator who checks `member list` everywhere would. The default is a WORKAROUND:
   * with 'etcd', quorum is lost for good when a leader removes itself and no
   * remaining voter learns the commit before it stops.
   */
  removedShutdown?: 'etcd' | 'when-applied';
  /**
   * What a snapshot message carries. 'transport' (default), as the server does: the
   * sender's transport replaces it with the sender's current state, labelled with
   * snapshotMetaAt(applied). 'core': the data the core was given by compact() (or
   * received); a restarted core has none (it sends empty snapshots).
   */
  snapshotSource?: 'transport' | 'core';
  traceCapacity?: number;
  /** Called with every human-level event (not message deliveries). */
  onEvent?: (t: number, text: string) => void;
}

interface Report {
  to: NodeId;
  about: NodeId;
  kind: 'snap-ok' | 'snap-failed' | 'unreachable';
}

export class Cluster {
  t = 0;
  readonly nodes = new Map<NodeId, SimNode>();
  /** Nodes not destroyed (up or crashed), in creation order. */
  members: SimNode[] = [];
  readonly net = new Network();
  readonly trace: Trace;
  readonly check: Invariants;
  readonly stats = emptyStats();
  readonly rng: Rng;
  faults: Faults;
  private nextId: number;
  private reports: Report[] = [];
  private pendingCreates: NodeId[] = [];
  private readyNodes: SimNode[] = [];
  private writesDue: SimNode[] = [];
  /** Nodes the nemesis decided to kill, at the end of the current micro-step. */
  private doomed: SimNode[] = [];
  nemesis: Nemesis;
  /** Applied indexes of marked payloads, for the liveness check and the demo. */
  readonly marks = new Map<string, number>();

  constructor(readonly opts: ClusterOptions) {
    this.rng = new Rng(mixSeed(opts.seed, 0x5eed));
    this.trace = new Trace(opts.traceCapacity ?? 60);
    this.check = new Invariants(opts.checks);
    this.faults = opts.faults;
    this.nemesis = opts.nemesis ?? NO_NEMESIS;
    this.nextId = opts.voters + 1;
    const founders = Array.from({ length: opts.voters }, (_, i) => BigInt(i + 1));
    const boot = bootstrapState(founders.map((id) => ({ id, context: new TextEncoder().encode(`member-${id}`) })));
    for (const id of founders) this.addNode(id, boot);
  }

  // ---- membership of the simulation -----------------------------------------

  private addNode(id: NodeId, p: PersistedState): SimNode {
    const snapshot: Snapshot = { meta: p.snapshot, data: new Uint8Array(0) };
    const disk: Disk = { hardState: { ...p.hardState }, snapshot, entries: p.entries.slice(), app: { applied: 0, hash: 0 } };
    let prevTerm = p.snapshot.term;
    for (const e of disk.entries) {
      this.check.persistedEntry(id, e, prevTerm);
      prevTerm = e.term;
    }
    const n = new SimNode(id, disk);
    this.nodes.set(id, n);
    this.members.push(n);
    this.boot(n);
    return n;
  }

  /** Allocates an ID for a member about to be added (IDs are never reused). */
  allocateId(): NodeId {
    return BigInt(this.nextId++);
  }

  private options(n: SimNode, applied: number): RaftOptions {
    const c = this.opts.core;
    return {
      id: n.id,
      electionTick: c.electionTick,
      heartbeatTick: c.heartbeatTick,
      random: new Rng(mixSeed(this.opts.seed, Number(n.id), n.incarnation)).fn(),
      maxSizePerMsg: c.maxSizePerMsg,
      maxInflightMsgs: c.maxInflightMsgs,
      preVote: c.preVote,
      checkQuorum: c.checkQuorum,
      lazyCommit: c.lazyCommit,
      readOnly: 'safe',
      applied,
    };
  }

  /** Starts (or restarts) a node from its disk. */
  private boot(n: SimNode): void {
    const d = n.disk;
    const snapIndex = d.snapshot.meta.index;
    n.app = this.faults.durableApply && d.app.applied >= snapIndex ? { ...d.app } : decodeAppState(n.id, d.snapshot);
    if (n.app.applied > d.hardState.commit) throw new Error(`${node(n.id)}: applied ${n.app.applied} beyond persisted commit ${d.hardState.commit}`);
    const persisted: PersistedState = { hardState: { ...d.hardState }, snapshot: d.snapshot.meta, entries: d.entries.slice() };
    n.raft = new RawNode(this.options(n, n.app.applied), persisted, { plantedBug: this.opts.plantedBug });
    n.incarnation++;
    n.restartAt = -1;
    const st = n.raft.status();
    n.seenState = st.state;
    n.seenTerm = st.term;
    n.seenCommit = st.commit;
    n.seenConf = st.conf;
  }

  crash(n: SimNode, why: string, quick = false): void {
    if (!n.raft) return;
    const wasLeader = n.seenState === StateType.Leader;
    n.raft = undefined;
    if (n.inflight) {
      // The write was issued: whether it reached the disk before the crash is luck.
      const kept = this.rng.next() < 0.5;
      if (kept) this.persistReady(n, n.inflight.rd);
      n.inflight = undefined;
      this.stats.crashesMidWrite++;
      why += ` (write in flight ${kept ? 'kept' : 'lost'})`;
    }
    if (quick && this.nemesis.quickRestart > 0) n.restartAt = this.t + 1 + this.rng.int(this.nemesis.quickRestart);
    this.stats.crashes++;
    this.event(`crash ${node(n.id)}${wasLeader ? ' (leader)' : ''}${why ? ` ${why}` : ''}`);
  }

  restart(n: SimNode): void {
    if (n.raft || n.destroyed) return;
    this.boot(n);
    this.stats.restarts++;
    const d = n.disk;
    this.event(
      `restart ${node(n.id)} (term ${d.hardState.term}, vote ${d.hardState.vote === NONE ? '-' : node(d.hardState.vote)}, log ${d.snapshot.meta.index + 1}..${diskLastIndex(d)}, commit ${d.hardState.commit}, applied ${n.app.applied})`,
    );
  }

  /** A removed member shuts down for good (its disk is kept for the checks). */
  private destroy(n: SimNode): void {
    if (n.destroyed) return;
    n.raft = undefined;
    n.inflight = undefined;
    n.destroyed = true;
    this.members = this.members.filter((m) => m !== n);
    this.stats.membersRemoved++;
    this.event(`${node(n.id)} removed and shut down`);
  }

  private create(id: NodeId): void {
    if (this.nodes.has(id)) return;
    this.addNode(id, emptyState());
    this.stats.membersAdded++;
    this.event(`${node(id)} started (empty, joining)`);
  }

  // ---- time ----------------------------------------------------------------------

  /** Moves time on by one tick: due shutdowns, then every running node ticks. */
  tick(): void {
    this.t++;
    this.stats.ticks++;
    this.net.advanceTo(this.t);
    if (this.healAt >= 0 && this.healAt <= this.t) this.heal();
    for (const n of this.members) if (n.removalIndex >= 0 && this.shutdownDue(n)) this.destroy(n);
    for (const n of this.members) {
      if (!n.raft) continue;
      if (this.opts.core.lazyCommit) n.raft.sendOwedCommits();
      n.raft.tick();
      this.observe(n);
    }
  }

  /**
   * Runs this tick's work to completion: delivers due messages and handles Readies
   * in a random interleaving, until nothing is left (or `cap` steps).
   */
  settle(cap = 20000): void {
    for (let i = 0; i < cap; i++) {
      if (this.doomed.length > 0) this.killDoomed();
      if (this.reports.length > 0) this.flushReports();
      const ready = this.readyNodes;
      ready.length = 0;
      for (const n of this.members) if (n.raft && n.raft.hasReady()) ready.push(n);
      const due = this.net.dueCount();
      const writes = this.writesDue;
      writes.length = 0;
      for (const n of this.members) if (n.inflight && n.inflight.dueAt <= this.t) writes.push(n);
      if (ready.length === 0 && due === 0 && writes.length === 0) return;
      if (this.opts.core.lazyCommit && this.rng.next() < 0.1) {
        const owing = this.members.find((n) => n.raft?.hasOwedCommits());
        if (owing) {
          owing.raft!.sendOwedCommits();
          continue;
        }
      }
      if (writes.length > 0 && ((ready.length === 0 && due === 0) || this.rng.next() < 0.3)) this.completeWrite(this.rng.pick(writes));
      else if (due > 0 && (ready.length === 0 || this.rng.next() < 0.5)) this.deliver(this.net.takeDue(this.rng)!);
      else this.handleReady(ready.length === 1 ? ready[0] : this.rng.pick(ready));
    }
  }

  // ---- the network ------------------------------------------------------------

  private transmit(n: SimNode, m: Message, early: boolean): void {
    if (m.type === MessageType.Vote || m.type === MessageType.PreVote) this.voteRequested(n, m);
    this.check.sent(n.id, m, n.disk, () => this.learnerVote(n, m), early);
    if (m.type === MessageType.Snap && this.opts.snapshotSource !== 'core') m = this.transportSnapshot(n, m);
    this.stats.messagesSent++;
    if (m.type === MessageType.Snap) this.stats.snapshotsSent++;
    const f = this.faults;
    if (f.drop > 0 && this.rng.next() < f.drop) {
      this.stats.messagesDropped++;
      this.trace.message(this.t, 'DROP(lost)', m);
      if (m.type === MessageType.Snap) this.reports.push({ to: m.from, about: m.to, kind: 'snap-failed' });
      return;
    }
    const delay = f.delay > 0 && this.rng.next() < f.delay ? 1 + this.rng.int(f.maxDelay) : 0;
    this.net.send(m, delay);
    if (f.dup > 0 && this.rng.next() < f.dup) {
      this.stats.messagesDuplicated++;
      this.net.send(m, this.rng.int(f.maxDelay + 1), true);
    }
  }

  /** Vote and pre-vote requests sent: "term:candidate>voter". */
  private readonly voteRequests = new Set<string>();

  /**
   * Candidates ask only the voters of their configuration. A node that is a learner
   * in its own configuration may still be asked, by a candidate that has applied its
   * promotion (etcd's raft lets it answer then); such a grant is a violation only
   * with literalLearnerRule, or when nobody asked for it. Returns why a granted vote
   * from `n` is a learner's vote, or undefined if it is not.
   */
  private learnerVote(n: SimNode, m: Message): string | undefined {
    if (!n.raft || !n.raft.status().conf.learners.includes(n.id)) return undefined;
    if (this.opts.literalLearnerRule) return ' (it is a learner in its own configuration)';
    if (this.voteRequests.has(`${m.term}:${m.to}>${n.id}`)) return undefined;
    return ' (a learner in its own configuration, and the candidate never asked it)';
  }

  private voteRequested(n: SimNode, m: Message): void {
    if (!n.raft!.status().conf.voters.includes(m.to)) {
      violation(
        'learner-vote',
        `${node(n.id)} asked ${node(m.to)} for a ${m.type === MessageType.Vote ? 'vote' : 'pre-vote'} in term ${m.term}, but ${node(m.to)} is not a voter in its configuration`,
      );
    }
    this.voteRequests.add(`${m.term}:${n.id}>${m.to}`);
  }

  /** The server's transport sends the sender's current state in place of the core's snapshot. */
  private transportSnapshot(n: SimNode, m: Message): Message {
    const meta = n.raft!.snapshotMetaAt(n.app.applied);
    if (!meta) throw new Error(`${node(n.id)}: no snapshot metadata at its applied index ${n.app.applied}`);
    return { ...m, snapshot: { meta, data: encodeAppState(n.app) } };
  }

  deliver(env: Envelope): void {
    const m = env.m;
    const to = this.nodes.get(m.to);
    let why = '';
    if (!to || !to.raft) why = 'down';
    else if (this.net.blocked(m.from, m.to)) why = 'partition';
    if (why) {
      this.stats.messagesDropped++;
      this.trace.message(this.t, `DROP(${why})`, m);
      if (m.type === MessageType.Snap) this.reports.push({ to: m.from, about: m.to, kind: 'snap-failed' });
      else if (this.rng.next() < 0.3) this.reports.push({ to: m.from, about: m.to, kind: 'unreachable' });
      return;
    }
    this.stats.messagesDelivered++;
    this.trace.message(this.t, env.dup ? 'DUP' : '', m);
    to!.raft!.step(m);
    this.observe(to!);
    if (m.type === MessageType.Snap) this.reports.push({ to: m.from, about: m.to, kind: 'snap-ok' });
  }

  private killDoomed(): void {
    const ds = this.doomed;
    this.doomed = [];
    for (const n of ds) this.crash(n, 'by the nemesis', true);
  }

  /** The transport's reports back to senders (snapshot status, unreachable peers). */
  private flushReports(): void {
    const rs = this.reports;
    this.reports = [];
    for (const r of rs) {
      const n = this.nodes.get(r.to);
      if (!n || !n.raft) continue;
      if (r.kind === 'unreachable') n.raft.reportUnreachable(r.about);
      else n.raft.reportSnapshot(r.about, r.kind === 'snap-ok');
      this.observe(n);
    }
  }

  // ---- the Ready contract --------------------------------------------------------

  /** Handles one Ready of `n`, possibly crashing part-way (then returns early). */
  handleReady(n: SimNode, forceCrash?: CrashPoint): void {
    const raft = n.raft!;
    const rd = raft.ready();
    const saved = raft.takeTrafficCounts();
    this.stats.appendsFolded += saved.appendsFolded;
    this.stats.acksFolded += saved.acksFolded;
    this.stats.commitOnlyUnacked += saved.commitOnly;
    const crashAt = forceCrash ?? this.chooseCrash(n, rd);

    // 1. Send what may leave before the write.
    for (const m of rd.messages) this.transmit(n, m, true);
    if (crashAt === 'after-send') return this.crashMidReady(n, crashAt, rd);

    // 2. Persist: snapshot (replacing the log), entries, hard state; maybe in flight for a while.
    const a = this.faults.asyncWrite ?? 0;
    if (rd.mustSync && a > 0 && this.rng.next() < a) {
      const slow = this.faults.writeTicks ?? 0;
      n.inflight = { rd, crashAt, dueAt: this.t + (slow > 0 ? this.rng.int(slow + 1) : 0) };
      this.stats.writesInFlight++;
      return;
    }
    this.completeReady(n, rd, crashAt);
  }

  /** The write of `n`'s in-flight Ready is durable: carry on with that Ready. */
  private completeWrite(n: SimNode): void {
    const f = n.inflight!;
    n.inflight = undefined;
    this.completeReady(n, f.rd, f.crashAt);
  }

  private persistReady(n: SimNode, rd: Ready): void {
    const d = n.disk;
    if (rd.snapshot) {
      const meta = rd.snapshot.meta;
      if (d.hardState.commit > meta.index)
        violation('committed-entry-lost', `${node(n.id)} replaced its log (commit ${d.hardState.commit}) by an older snapshot at ${meta.index}`);
      d.snapshot = rd.snapshot;
      d.entries = [];
    }
    if (rd.entries.length > 0) this.persistEntries(n, rd.entries);
    if (rd.hardState) this.persistHardState(n, rd.hardState);
  }

  /** Steps 2 to 5 of a Ready: persist, send acks, apply, advance. */
  private completeReady(n: SimNode, rd: Ready, crashAt: CrashPoint | undefined): void {
    const raft = n.raft!;
    const d = n.disk;
    this.persistReady(n, rd);
    if (crashAt === 'after-persist') return this.crashMidReady(n, crashAt, rd);

    // 3. Send the acks and votes that promise what was just written.
    for (const m of rd.messagesAfterPersist) this.transmit(n, m, false);
    if (crashAt === 'after-ack') return this.crashMidReady(n, crashAt, rd);

    // 4. Apply.
    if (rd.snapshot) {
      const s = decodeAppState(n.id, rd.snapshot);
      this.check.restoredSnapshot(n.id, s.applied, s.hash);
      n.app = s;
      if (this.faults.durableApply) d.app = { ...s };
      this.stats.snapshotsApplied++;
      this.trace.note(this.t, `${node(n.id)} restored snapshot ${rd.snapshot.meta.index}@${rd.snapshot.meta.term}`);
    }
    const stopAt = crashAt === 'mid-apply' && rd.committedEntries.length > 0 ? this.rng.int(rd.committedEntries.length) : -1;
    for (let i = 0; i < rd.committedEntries.length; i++) {
      if (i === stopAt) return this.crashMidReady(n, crashAt!, rd);
      this.apply(n, rd.committedEntries[i]);
    }
    for (const rs of rd.readStates) {
      const ctx = rs.context;
      if (ctx.length !== 8) continue;
      this.check.readServed(n.id, new DataView(ctx.buffer, ctx.byteOffset, 8).getFloat64(0), rs.index);
      this.stats.readsServed++;
    }
    this.stats.proposalsRefused += rd.droppedProposals.length;
    if (crashAt === 'before-advance') return this.crashMidReady(n, crashAt, rd);

    // 5. Done.
    raft.advance(rd);
    this.observe(n);
    this.afterReady(n);
  }

  private afterReady(n: SimNode): void {
    if (this.pendingCreates.length > 0) {
      const ids = this.pendingCreates;
      this.pendingCreates = [];
      for (const id of ids) this.create(id);
    }
    if (n.removalIndex >= 0 && this.shutdownDue(n)) this.destroy(n);
  }

  private shutdownDue(n: SimNode): boolean {
    if (this.opts.removedShutdown === 'etcd') return n.destroyAt >= 0 && n.destroyAt <= this.t;
    // Every other member knows the removal is committed (and so will never again
    // count on this node): it applied it, or has a commit index or snapshot past it.
    for (const m of this.members) {
      if (m === n || m.removalIndex >= 0) continue;
      if (Math.max(m.app.applied, m.disk.hardState.commit, m.disk.snapshot.meta.index) < n.removalIndex) return false;
    }
    return true;
  }

  private chooseCrash(n: SimNode, rd: Ready): CrashPoint | undefined {
    const p = this.faults.readyCrash;
    const hs = rd.hardState;
    // Readies that promise something (a vote, new entries, a new term) are where
    // a crash hurts: crash there more often.
    const voting = hs !== undefined && (hs.term !== n.disk.hardState.term || hs.vote !== n.disk.hardState.vote);
    if (voting && this.nemesis.crashOnVote > 0 && this.rng.next() < this.nemesis.crashOnVote) return 'after-send';
    if (p <= 0) return undefined;
    const weighty = voting || rd.entries.length > 0;
    if (this.rng.next() >= (weighty ? p * 4 : p)) return undefined;
    return this.rng.weighted<CrashPoint>([
      ['after-send', 4],
      ['after-persist', 2],
      ['after-ack', 1],
      ['mid-apply', rd.committedEntries.length > 0 ? 1 : 0],
      ['before-advance', 1],
    ]);
  }

  private crashMidReady(n: SimNode, at: CrashPoint, rd: Ready): void {
    this.stats.crashesMidReady++;
    const what = [
      rd.hardState ? `hs=${rd.hardState.term}/${rd.hardState.vote === NONE ? '-' : node(rd.hardState.vote)}/${rd.hardState.commit}` : '',
      rd.entries.length > 0 ? `ents=${rd.entries[0].index}..${rd.entries[rd.entries.length - 1].index}` : '',
      rd.messages.length > 0 ? `early=${rd.messages.map((m) => `${m.type}>${node(m.to)}`).join(',')}` : '',
    ]
      .filter(Boolean)
      .join(' ');
    this.crash(n, `mid-ready ${at}${what ? ` [${what}]` : ''}`, true);
  }

  private persistEntries(n: SimNode, entries: Entry[]): void {
    const d = n.disk;
    const snap = d.snapshot.meta;
    const first = entries[0].index;
    const last = diskLastIndex(d);
    if (first <= snap.index) violation('ready-contract', `${node(n.id)} was given entry ${first} to persist, inside its snapshot at ${snap.index}`);
    if (first > last + 1) violation('ready-contract', `${node(n.id)} was given entry ${first} to persist after its last ${last} (a gap)`);
    if (first <= last) this.check.truncating(n.id, first, d);
    d.entries.length = first - snap.index - 1;
    let prevTerm = first - 1 === snap.index ? snap.term : d.entries[d.entries.length - 1].term;
    for (const e of entries) {
      if (e.index !== snap.index + d.entries.length + 1) violation('ready-contract', `${node(n.id)} was given non-contiguous entries (${e.index})`);
      this.check.persistedEntry(n.id, e, prevTerm);
      d.entries.push(e);
      prevTerm = e.term;
    }
  }

  private persistHardState(n: SimNode, hs: HardState): void {
    this.check.persistedHardState(n.id, n.disk.hardState, hs, diskLastIndex(n.disk));
    n.disk.hardState = { term: hs.term, vote: hs.vote, commit: hs.commit };
  }

  private apply(n: SimNode, e: Entry): void {
    if (e.index !== n.app.applied + 1) violation('state-machine-safety', `${node(n.id)} was handed entry ${e.index} to apply after applying ${n.app.applied}`);
    const h = entryHash(e);
    const chain = chainHash(n.app.hash, e, h);
    n.app = { applied: e.index, hash: chain };
    if (this.faults.durableApply) n.disk.app = n.app;
    const first = this.check.appliedEntry(n.id, e, chain, h);
    if (first) {
      this.stats.entriesCommitted++;
      if (e.data.length > 0 && e.data[0] === 0x21 /* '!' */) this.marks.set(new TextDecoder().decode(e.data), e.index);
    }
    if (e.type !== EntryType.ConfChange) return;
    const cc = decodeConfChange(e.data);
    if (first) {
      this.stats.confChangesApplied++;
      this.event(`conf change ${ccText(cc)} committed at ${e.index}`);
    }
    switch (cc.type) {
      case 'addLearner':
      case 'addVoter':
        if (!this.nodes.has(cc.nodeId) && !this.pendingCreates.includes(cc.nodeId)) this.pendingCreates.push(cc.nodeId);
        break;
      case 'remove': {
        const target = this.nodes.get(cc.nodeId);
        if (!target || target.destroyed) break;
        if (target.removalIndex < 0) target.removalIndex = e.index;
        // A member shuts down a while after it applies its own removal (etcd
        // waits 10 ticks, so the others can still learn the commit from it); one
        // that never hears of it is shut down later by the operator.
        const et = this.opts.core.electionTick;
        const at = target === n ? this.t + et + this.rng.int(et) : n.seenState === StateType.Leader ? this.t + 2 * et + this.rng.int(3 * et) : -1;
        if (at >= 0 && (target.destroyAt < 0 || at < target.destroyAt)) target.destroyAt = at;
        break;
      }
      default:
        break;
    }
  }

  // ---- observing the core ------------------------------------------------------

  /** Called after every input to a node: notices new leaders and commit advances. */
  observe(n: SimNode): void {
    const raft = n.raft;
    if (!raft) return;
    const st = raft.status();
    if (st.term < n.seenTerm) violation('hard-state', `${node(n.id)}'s term went back from ${n.seenTerm} to ${st.term}`);
    if (st.state === StateType.Leader) {
      if (n.seenState !== StateType.Leader || n.seenTerm !== st.term) {
        this.check.becameLeader(n.id, st, (i) => raft.termAt(i));
        this.stats.leaderChanges++;
        if (this.nemesis.crashNewLeader > 0 && this.rng.next() < this.nemesis.crashNewLeader) this.doomed.push(n);
        else if (this.nemesis.isolateNewLeader > 0 && !this.net.partitioned() && this.rng.next() < this.nemesis.isolateNewLeader) {
          this.partition([[n.id], this.members.filter((m) => m !== n).map((m) => m.id)], 2 + this.rng.int(15));
        }
        this.event(`${node(n.id)} became leader (term ${st.term}, last index ${st.lastIndex}, commit ${st.commit})`);
      }
      if (st.commit > n.seenCommit) {
        this.check.leaderCommitted(n.id, st, raft.termAt(st.commit), (v) => this.nodes.get(v)?.disk);
        if (this.nemesis.crashOnCommit > 0 && this.rng.next() < this.nemesis.crashOnCommit) this.doomed.push(n);
      }
    } else if (n.seenState === StateType.Leader) {
      this.event(`${node(n.id)} stepped down (term ${st.term}, now ${st.state})`);
    }
    n.seenState = st.state;
    n.seenTerm = st.term;
    n.seenCommit = st.commit;
    n.seenConf = st.conf;
  }

  // ---- client actions (each returns false when the core refused) -------------------

  propose(n: SimNode, data: Uint8Array): boolean {
    if (!n.raft) return false;
    this.stats.proposals++;
    try {
      n.raft.propose(data);
      return true;
    } catch (err) {
      if (!(err instanceof RaftError)) throw err;
      this.stats.proposalsRefused++;
      return false;
    } finally {
      this.observe(n);
    }
  }

  proposeConfChange(n: SimNode, cc: ConfChange): RaftError | undefined {
    if (!n.raft) return undefined;
    this.stats.confChangesProposed++;
    try {
      n.raft.proposeConfChange(cc);
      this.trace.note(this.t, `${node(n.id)} proposes ${ccText(cc)}`);
      return undefined;
    } catch (err) {
      if (!(err instanceof RaftError)) throw err;
      this.stats.confChangesRefused++;
      return err;
    } finally {
      this.observe(n);
    }
  }

  private readSeq = 0;

  readIndex(n: SimNode): void {
    if (!n.raft) return;
    const id = ++this.readSeq;
    const ctx = new Uint8Array(8);
    new DataView(ctx.buffer).setFloat64(0, id);
    this.check.readRequested(id);
    try {
      n.raft.readIndex(ctx);
    } catch (err) {
      if (!(err instanceof RaftError)) throw err;
    }
    this.observe(n);
  }

  transferLeader(leader: SimNode, to: NodeId): void {
    if (!leader.raft) return;
    try {
      leader.raft.transferLeader(to);
      this.stats.transfers++;
      this.trace.note(this.t, `${node(leader.id)} transfers leadership to ${node(to)}`);
    } catch (err) {
      if (!(err instanceof RaftError)) throw err;
    }
    this.observe(leader);
  }

  campaign(n: SimNode): void {
    if (!n.raft) return;
    this.stats.campaigns++;
    this.trace.note(this.t, `${node(n.id)} campaigns`);
    n.raft.campaign();
    this.observe(n);
  }

  /** Snapshots the state machine at its applied index and compacts the log there. */
  compact(n: SimNode): boolean {
    const raft = n.raft;
    // The server compacts only between Readies (after advance()), never during a write.
    if (!raft || n.inflight) return false;
    const d = n.disk;
    const at = n.app.applied;
    if (at <= d.snapshot.meta.index) return false;
    if (at > diskLastIndex(d)) throw new Error(`${node(n.id)} applied ${at} beyond its persisted log ${diskLastIndex(d)}`);
    const data = encodeAppState(n.app);
    raft.compact(at, data);
    const meta = raft.snapshotMeta();
    if (meta.index !== at) throw new Error(`${node(n.id)}: compact(${at}) left the snapshot at ${meta.index}`);
    d.entries = d.entries.slice(at - d.snapshot.meta.index);
    d.snapshot = { meta, data };
    this.stats.compactions++;
    this.trace.note(this.t, `${node(n.id)} compacted its log through ${at}`);
    this.observe(n);
    return true;
  }

  // ---- partitions ---------------------------------------------------------------

  /** Tick at which the current partition heals (-1: none scheduled). */
  private healAt = -1;

  /** Partitions the cluster into groups, healing after `ticks` (0: until heal()). */
  partition(groups: NodeId[][], ticks = 0): void {
    this.net.partition(groups);
    this.healAt = ticks > 0 ? this.t + ticks : -1;
    this.stats.partitions++;
    this.event(`partition ${this.net.describe}`);
  }

  cutOneWay(from: NodeId[], to: NodeId[], ticks = 0): void {
    this.net.cutOneWay(from, to);
    this.healAt = ticks > 0 ? this.t + ticks : -1;
    this.stats.partitions++;
    this.event(`one-way partition ${this.net.describe}`);
  }

  heal(): void {
    this.healAt = -1;
    if (!this.net.partitioned()) return;
    this.net.heal();
    this.event('partition healed');
  }

  // ---- queries ---------------------------------------------------------------------

  /** The running leader with the highest term, if any. */
  leader(): SimNode | undefined {
    let best: SimNode | undefined;
    for (const n of this.members) {
      if (n.raft && n.seenState === StateType.Leader && (!best || n.seenTerm > best.seenTerm)) best = n;
    }
    return best;
  }

  node(id: NodeId | number): SimNode {
    const n = this.nodes.get(BigInt(id));
    if (!n) throw new Error(`no node ${id}`);
    return n;
  }

  event(text: string): void {
    this.trace.note(this.t, text);
    this.opts.onEvent?.(this.t, text);
  }

  // ---- hand-driven use (scenarios, demo) ---------------------------------------------

  /** Handles Readies and delivers messages matching `pred` (others stay queued) until quiet. */
  stabilize(pred: (m: Message) => boolean = () => true, maxRounds = 1000): void {
    for (let round = 0; round < maxRounds; round++) {
      let moved = false;
      if (this.doomed.length > 0) this.killDoomed();
      if (this.reports.length > 0) this.flushReports();
      for (const n of this.members) {
        if (n.inflight) {
          this.completeWrite(n);
          moved = true;
        }
        while (n.raft && n.raft.hasReady()) {
          this.handleReady(n);
          moved = true;
        }
      }
      for (const env of this.net.take(pred)) {
        this.deliver(env);
        moved = true;
      }
      if (!moved) return;
    }
    throw new Error('cluster did not stabilize');
  }

  /** Drops queued messages matching `pred`. */
  dropQueued(pred: (m: Message) => boolean): number {
    const gone = this.net.take(pred);
    this.stats.messagesDropped += gone.length;
    for (const e of gone) this.trace.message(this.t, 'DROP(test)', e.m);
    return gone.length;
  }
}

export function ccText(cc: ConfChange): string {
  return `${cc.type}(${node(cc.nodeId)})`;
}
