// One seeded run: a fault and workload profile drawn from the seed (each seed
// stresses a different mix: "swarm testing"), `steps` ticks of random faults and
// client actions with the invariants checked as everything happens, then a
// liveness phase: heal everything and require a leader, a commit, and every
// member caught up within bounded ticks.
import { StateType, type ConfChange, type NodeId, type PlantedBug } from '../../src/raft/index.js';
import { Cluster, NO_NEMESIS, ccText, emptyStats, type CoreSettings, type Nemesis, type Faults, type SimNode, type Stats } from './cluster.js';
import { InvariantViolation, violation, type CheckLevel } from './invariants.js';
import { Rng, mixSeed } from './rng.js';
import { node } from './trace.js';

export interface RunOptions {
  seed: number;
  steps: number;
  /** Most members running at once (founding voters + learners added later). */
  nodes: number;
  /** Founding voters (default 3, at most `nodes`). */
  voters?: number;
  plantedBug?: PlantedBug;
  checks?: CheckLevel;
  /** See ClusterOptions.literalLearnerRule. */
  literalLearnerRule?: boolean;
  /** When removed members shut down (see ClusterOptions). */
  removedShutdown?: 'etcd' | 'when-applied';
  /** See ClusterOptions.snapshotSource. */
  snapshotSource?: 'transport' | 'core';
  /** Run the liveness phase after the faults (default true). */
  liveness?: boolean;
  /** Trace lines kept for a failure report (default 60). */
  traceLines?: number;
  /** Overrides the profile's Faults.asyncWrite (0 replays seeds recorded before it existed). */
  asyncWrite?: number;
}

export interface Failure {
  invariant: string;
  detail: string;
  tick: number;
  trace: string[];
  replay: string;
  stack?: string;
}

export interface RunResult {
  ok: boolean;
  seed: number;
  stats: Stats;
  profile: string;
  /** The end state (time, commit, each node's term and state-machine hash): equal runs, equal prints. */
  fingerprint: string;
  failure?: Failure;
}

/** Per-tick rates of the driver's actions and faults. */
interface Workload {
  partition: number;
  partitionTicks: number;
  crash: number;
  downTicks: number;
  leaderBias: number;
  propose: number;
  confChange: number;
  compact: number;
  compactGap: number;
  campaign: number;
  transfer: number;
  read: number;
  maxLearners: number;
}

interface Profile {
  core: CoreSettings;
  faults: Faults;
  work: Workload;
  nemesis: Nemesis;
}

function drawProfile(rng: Rng): Profile {
  const core: CoreSettings = {
    electionTick: 10,
    heartbeatTick: rng.pick([1, 2, 3]),
    preVote: rng.chance(0.7),
    checkQuorum: rng.chance(0.6),
    maxSizePerMsg: rng.pick([1, 64, 1 << 20]),
    maxInflightMsgs: rng.pick([1, 4, 256]),
  };
  const faults: Faults = {
    drop: rng.pick([0, 0.01, 0.05, 0.15]),
    dup: rng.pick([0, 0.01, 0.05]),
    delay: rng.pick([0, 0.1, 0.4]),
    maxDelay: rng.pick([1, 3, 8]),
    readyCrash: rng.pick([0, 0.002, 0.01, 0.03]),
    durableApply: rng.chance(0.5),
  };
  const work: Workload = {
    partition: rng.pick([0, 0.01, 0.03]),
    partitionTicks: rng.pick([10, 30, 80]),
    crash: rng.pick([0, 0.003, 0.01, 0.03]),
    downTicks: rng.pick([3, 20, 60]),
    leaderBias: rng.pick([0.3, 0.7]),
    propose: rng.pick([0.2, 0.6, 2]),
    confChange: rng.pick([0.01, 0.03, 0.08]),
    compact: rng.pick([0.01, 0.05, 0.2]),
    compactGap: rng.pick([3, 10, 40]),
    campaign: rng.pick([0, 0.005, 0.02]),
    transfer: rng.pick([0, 0.005, 0.02]),
    read: rng.pick([0, 0.05, 0.2]),
    maxLearners: rng.pick([1, 2]),
  };
  // Most seeds also get the nemesis, with one-entry appends: Figure 8 needs a
  // follower that acknowledges an old-term entry but not the leader's next one.
  const nemesis: Nemesis = rng.chance(0.6)
    ? {
        crashOnCommit: rng.pick([0.3, 0.5]),
        crashNewLeader: rng.pick([0, 0.2]),
        isolateNewLeader: 0.5,
        crashOnVote: rng.pick([0.3, 0.6]),
        quickRestart: rng.pick([1, 3]),
      }
    : NO_NEMESIS;
  if (nemesis !== NO_NEMESIS) core.maxSizePerMsg = 1;
  // Drawn last, so the draws above (and the seeds recorded with them) are unchanged.
  faults.asyncWrite = rng.pick([0, 0.5, 1]);
  faults.writeTicks = rng.pick([0, 1, 2]);
  core.lazyCommit = rng.chance(0.5);
  return { core, faults, work, nemesis };
}

function describe(p: Profile): string {
  const c = p.core;
  const f = p.faults;
  const w = p.work;
  const n = p.nemesis;
  return (
    `core: hb=${c.heartbeatTick} preVote=${c.preVote} checkQuorum=${c.checkQuorum} maxSize=${c.maxSizePerMsg} inflight=${c.maxInflightMsgs} lazyCommit=${c.lazyCommit ?? false}; ` +
    `net: drop=${f.drop} dup=${f.dup} delay=${f.delay}x${f.maxDelay} readyCrash=${f.readyCrash} durableApply=${f.durableApply} asyncWrite=${f.asyncWrite ?? 0}x${f.writeTicks ?? 0}t; ` +
    `work: partition=${w.partition}/${w.partitionTicks}t crash=${w.crash}/${w.downTicks}t propose=${w.propose} conf=${w.confChange} compact=${w.compact}/${w.compactGap} campaign=${w.campaign} transfer=${w.transfer} read=${w.read}` +
    (n === NO_NEMESIS
      ? ''
      : `; nemesis: crashOnCommit=${n.crashOnCommit} crashNewLeader=${n.crashNewLeader} isolateNewLeader=${n.isolateNewLeader} crashOnVote=${n.crashOnVote} quickRestart=${n.quickRestart}t`)
  );
}

export function replayCommand(o: RunOptions): string {
  let cmd = `npm run sim -- --seed ${o.seed} --steps ${o.steps} --nodes ${o.nodes}`;
  if (o.voters !== undefined && o.voters !== 3) cmd += ` --voters ${o.voters}`;
  if (o.plantedBug) cmd += ` --plant-bug ${o.plantedBug}`;
  if (o.checks && o.checks !== 'all') cmd += ` --checks ${o.checks}`;
  if (o.literalLearnerRule) cmd += ' --literal-learner-rule';
  if (o.removedShutdown === 'etcd') cmd += ' --etcd-removal';
  if (o.snapshotSource === 'core') cmd += ' --snapshots core';
  if (o.liveness === false) cmd += ' --no-liveness';
  if (o.asyncWrite !== undefined) cmd += ` --async-write ${o.asyncWrite}`;
  return cmd;
}

class Driver {
  readonly rng: Rng;
  readonly cluster: Cluster;
  private proposalSeq = 0;
  /** IDs being added: reserved until the change applies or the reservation expires. */
  private reserved = new Map<NodeId, number>();

  constructor(
    readonly o: RunOptions,
    readonly p: Profile,
  ) {
    this.rng = new Rng(mixSeed(o.seed, 0xd21e));
    this.cluster = new Cluster({
      seed: o.seed,
      voters: Math.min(o.voters ?? 3, o.nodes),
      core: p.core,
      faults: p.faults,
      checks: o.checks ?? 'all',
      nemesis: p.nemesis,
      plantedBug: o.plantedBug,
      literalLearnerRule: o.literalLearnerRule,
      removedShutdown: o.removedShutdown,
      snapshotSource: o.snapshotSource,
      traceCapacity: o.traceLines ?? 60,
    });
  }

  /** One tick of the faulty phase. */
  step(): void {
    const c = this.cluster;
    const w = this.p.work;
    const rng = this.rng;
    c.tick();
    // Crashed nodes (here or mid-Ready) come back after a while.
    for (const n of c.members) {
      if (n.up) continue;
      if (n.restartAt < 0) n.restartAt = c.t + 1 + rng.int(w.downTicks);
      else if (n.restartAt <= c.t) c.restart(n);
    }

    if (w.partition > 0 && !c.net.partitioned() && rng.next() < w.partition) this.partition();
    if (w.crash > 0 && rng.next() < w.crash) this.crashSomeone();

    // Proposals, mostly to whoever believes it leads (stale leaders too: their
    // uncommitted entries are what later overwrites must get right).
    let props = Math.floor(w.propose) + (rng.next() < w.propose % 1 ? 1 : 0);
    for (; props > 0; props--) {
      const target = this.proposalTarget();
      if (target) c.propose(target, this.payload());
    }
    if (rng.next() < w.confChange) this.changeMembership();
    if (rng.next() < w.compact) {
      const up = c.members.filter((n) => n.up && n.app.applied - n.disk.snapshot.meta.index >= w.compactGap);
      if (up.length > 0) c.compact(rng.pick(up));
    }
    if (w.campaign > 0 && rng.next() < w.campaign) {
      const up = c.members.filter((n) => n.up && n.seenState !== StateType.Leader);
      if (up.length > 0) c.campaign(rng.pick(up));
    }
    if (w.transfer > 0 && rng.next() < w.transfer) {
      const l = c.leader();
      if (l) {
        const voters = l.raft!.status().conf.voters.filter((v) => v !== l.id);
        if (voters.length > 0) c.transferLeader(l, rng.pick(voters));
      }
    }
    if (w.read > 0 && rng.next() < w.read) {
      const up = c.members.filter((n) => n.up);
      if (up.length > 0) c.readIndex(rng.pick(up));
    }
    c.settle();
  }

  private payload(): Uint8Array {
    return new TextEncoder().encode(`v${++this.proposalSeq}`);
  }

  private proposalTarget(): SimNode | undefined {
    const c = this.cluster;
    const r = this.rng.next();
    if (r < 0.7) return c.leader();
    const leaders = c.members.filter((n) => n.up && n.seenState === StateType.Leader);
    if (r < 0.85 && leaders.length > 0) return this.rng.pick(leaders);
    const up = c.members.filter((n) => n.up);
    return up.length > 0 ? this.rng.pick(up) : undefined;
  }

  private crashSomeone(): void {
    const c = this.cluster;
    const up = c.members.filter((n) => n.up);
    if (up.length === 0) return;
    const leader = c.leader();
    const victim = leader && this.rng.next() < this.p.work.leaderBias ? leader : this.rng.pick(up);
    c.crash(victim, '');
  }

  private partition(): void {
    const c = this.cluster;
    const rng = this.rng;
    const ids = c.members.map((n) => n.id);
    if (ids.length < 2) return;
    const leader = c.leader();
    const others = leader ? ids.filter((id) => id !== leader.id) : ids;
    const ticks = 1 + rng.int(this.p.work.partitionTicks);
    const kind = rng.weighted<string>([
      ['split', 3],
      ['isolate-leader', leader ? 2 : 0],
      ['leader-with-minority', leader && ids.length >= 4 ? 3 : 0],
      ['leader-deaf', leader ? 1 : 0],
      ['leader-mute', leader ? 1 : 0],
      ['one-way', 1],
    ])!;
    switch (kind) {
      case 'split': {
        const shuffled = rng.shuffle(ids.slice());
        const cut = 1 + rng.int(shuffled.length - 1);
        c.partition([shuffled.slice(0, cut), shuffled.slice(cut)], ticks);
        break;
      }
      case 'isolate-leader':
        c.partition([[leader!.id], others], ticks);
        break;
      case 'leader-with-minority': {
        const shuffled = rng.shuffle(others.slice());
        const k = Math.max(1, Math.floor(ids.length / 2) - 1);
        c.partition([[leader!.id, ...shuffled.slice(0, k)], shuffled.slice(k)], ticks);
        break;
      }
      case 'leader-deaf':
        c.cutOneWay(others, [leader!.id], ticks);
        break;
      case 'leader-mute':
        c.cutOneWay([leader!.id], others, ticks);
        break;
      default: {
        const shuffled = rng.shuffle(ids.slice());
        const cut = 1 + rng.int(shuffled.length - 1);
        c.cutOneWay(shuffled.slice(0, cut), shuffled.slice(cut), ticks);
      }
    }
  }

  private changeMembership(): void {
    const c = this.cluster;
    const rng = this.rng;
    const leader = c.leader();
    if (!leader) return;
    const st = leader.raft!.status();
    const { voters, learners } = st.conf;
    for (const [id, until] of this.reserved) if (until < c.t || c.nodes.has(id)) this.reserved.delete(id);
    const room = c.members.length + this.reserved.size < this.o.nodes;
    const caughtUp = learners.filter((l) => (st.progress.get(l)?.match ?? 0) >= st.commit - 5);
    const cc = rng.weighted<() => ConfChange>([
      [() => this.add('addLearner'), room && learners.length < this.p.work.maxLearners ? 4 : 0],
      [() => this.add('addVoter'), room ? 0.5 : 0],
      [() => ({ type: 'promote', nodeId: rng.pick(caughtUp), context: new Uint8Array(0) }), caughtUp.length > 0 ? 3 : 0],
      [() => ({ type: 'promote', nodeId: rng.pick(learners), context: new Uint8Array(0) }), learners.length > 0 ? 0.5 : 0],
      [() => ({ type: 'remove', nodeId: rng.pick(voters), context: new Uint8Array(0) }), voters.length >= 3 ? 2 : voters.length === 2 ? 0.3 : 0],
      [() => ({ type: 'remove', nodeId: rng.pick(learners), context: new Uint8Array(0) }), learners.length > 0 ? 1 : 0],
      [() => ({ type: 'update', nodeId: rng.pick(voters), context: new TextEncoder().encode(`updated@${c.t}`) }), 0.5],
    ]);
    if (!cc) return;
    const change = cc();
    const err = c.proposeConfChange(leader, change);
    if (!err && (change.type === 'addLearner' || change.type === 'addVoter')) this.reserved.set(change.nodeId, c.t + 200);
    if (err && err.code !== 'ConfChangePending' && err.code !== 'ProposalDropped' && err.code !== 'TransferInProgress') {
      c.trace.note(c.t, `${node(leader.id)} refused ${ccText(change)}: ${err.code} ${err.message}`);
    }
  }

  private add(type: 'addLearner' | 'addVoter'): ConfChange {
    return { type, nodeId: this.cluster.allocateId(), context: new TextEncoder().encode('peer-url') };
  }

  /**
   * Liveness: with every fault healed and every member running, a leader must be
   * elected, a proposal committed, and every member must apply it, each within a
   * bounded number of ticks.
   */
  liveness(): void {
    const c = this.cluster;
    c.heal();
    c.faults = { ...c.faults, drop: 0, dup: 0, delay: 0, readyCrash: 0, writeTicks: 0 };
    c.nemesis = NO_NEMESIS;
    // A write still in flight was given its crash point before the faults healed.
    for (const n of c.members) if (n.inflight) n.inflight.crashAt = undefined;
    for (const n of c.members) c.restart(n);
    c.settle();
    const e = this.p.core.electionTick;
    const tickUntil = (limit: number, what: string, done: () => boolean): void => {
      for (let i = 0; i < limit; i++) {
        if (done()) return;
        c.tick();
        c.settle();
      }
      if (!done()) violation('liveness', `${what} within ${limit} ticks after the faults healed (t=${c.t})`);
    };
    const stableLeader = (): SimNode | undefined => {
      const l = c.leader();
      if (!l) return undefined;
      // A leader that is still a voter, and no running member of its configuration has seen a higher term.
      const conf = l.raft!.status().conf;
      if (!conf.voters.includes(l.id)) return undefined;
      for (const id of [...conf.voters, ...conf.learners]) {
        const n = c.nodes.get(id);
        if (n && n.up && n.seenTerm > l.seenTerm) return undefined;
      }
      return l;
    };
    c.event('liveness: faults healed, every member running');
    tickUntil(20 * e, 'no leader elected', () => stableLeader() !== undefined);
    const mark = `!live-${this.o.seed}`;
    const data = new TextEncoder().encode(mark);
    let proposedAt = -1;
    tickUntil(10 * e, `proposal ${mark} not committed`, () => {
      if (c.marks.has(mark)) {
        const l = c.leader();
        return l !== undefined && l.app.applied >= c.marks.get(mark)!;
      }
      // (Re)propose when there is a leader and the last attempt is stale.
      const l = stableLeader();
      if (l && (proposedAt < 0 || c.t - proposedAt > 2 * e)) {
        c.propose(l, data);
        proposedAt = c.t;
        c.settle();
      }
      return false;
    });
    const at = c.marks.get(mark)!;
    c.event(`liveness: ${mark} committed at index ${at}`);
    tickUntil(30 * e, 'members did not all catch up', () => {
      const l = c.leader();
      if (!l) return false;
      const conf = l.raft!.status().conf;
      for (const id of [...conf.voters, ...conf.learners]) {
        const n = c.nodes.get(id);
        if (!n || n.destroyed) continue;
        if (!n.up || n.app.applied < at) return false;
      }
      return true;
    });
    c.stats.livenessPassed++;
  }
}

export function runSeed(o: RunOptions): RunResult {
  const profileRng = new Rng(mixSeed(o.seed, 0xf417));
  const p = drawProfile(profileRng);
  if (o.asyncWrite !== undefined) p.faults.asyncWrite = o.asyncWrite;
  const d = new Driver(o, p);
  const c = d.cluster;
  try {
    c.settle();
    for (let i = 0; i < o.steps; i++) d.step();
    if (o.liveness !== false) d.liveness();
    return { ok: true, seed: o.seed, stats: c.stats, profile: describe(p), fingerprint: fingerprint(c) };
  } catch (err) {
    const failure: Failure =
      err instanceof InvariantViolation
        ? { invariant: err.invariant, detail: err.detail, tick: c.t, trace: c.trace.lines(o.traceLines), replay: replayCommand(o) }
        : {
            invariant: 'core-exception',
            detail: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
            tick: c.t,
            trace: c.trace.lines(o.traceLines),
            replay: replayCommand(o),
            stack: err instanceof Error ? err.stack : undefined,
          };
    return { ok: false, seed: o.seed, stats: c.stats, profile: describe(p), fingerprint: fingerprint(c), failure };
  }
}

function fingerprint(c: Cluster): string {
  const nodes = [...c.nodes.values()].map(
    (n) => `${node(n.id)}:${n.up ? 'up' : n.destroyed ? 'gone' : 'down'}:t${n.disk.hardState.term}:a${n.app.applied}:${n.app.hash.toString(16)}`,
  );
  return `t=${c.t} commit=${c.check.maxCommit} ${nodes.join(' ')}`;
}

export function addStats(into: Stats, s: Stats): Stats {
  for (const k of Object.keys(into) as (keyof Stats)[]) into[k] += s[k];
  return into;
}

export { emptyStats };
