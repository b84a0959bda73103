// The safety properties the simulator checks after every step, each kept cheap
// and incremental: registries filled the first time anything is seen, and
// every later sighting compared against them.
//
// End-to-end properties (what a user of the cluster could observe going wrong):
//   election-safety        at most one leader per term
//   log-matching           one (index, term) names one entry and one predecessor term
//   leader-completeness    a leader of term T holds every entry committed in a term < T
//   state-machine-safety   no two nodes apply different entries (or states) at one index
//   committed-entry-lost   a node never truncates an entry it persisted as committed
//   commit-durability      a leader's commit to c means a quorum of its voters persisted c
//   learner-vote           a candidate asks only voters; a learner never grants a vote or
//                          pre-vote nobody asked it for (with literalLearnerRule: never, even
//                          when the candidate has applied its promotion and it has not)
//   vote-quorum            a leader won the votes of a quorum of its voters
//   linearizable-read      a read index is never below an entry some node applied (a write a
//                          client could have seen complete) before the read was asked
//   hard-state             on disk: term never decreases, a vote never changes within a term
//   snapshot-data          a snapshot holds the state machine image its metadata names
//   liveness               after the faults heal: a leader, a commit, every member caught up
// Implementation-level checks (level 'all' only), which catch a defect where it
// happens rather than when it has consequences:
//   persist-before-send    an ack or a granted vote leaves only after what it promises is on disk
//   commit-current-term    a leader moves its commit index only onto an entry of its own term (§5.4.2)
// The harness itself reports 'ready-contract' (a Ready it cannot follow, e.g. entries
// with a gap) and 'core-exception' (the core threw from an input it must accept).
import { MessageType, type Entry, type HardState, type Message, type NodeId, type RaftStatus, type Snapshot } from '../../src/raft/index.js';
import { node } from './trace.js';

export type CheckLevel = 'all' | 'end-to-end';

export class InvariantViolation extends Error {
  constructor(
    readonly invariant: string,
    readonly detail: string,
  ) {
    super(`${invariant}: ${detail}`);
    this.name = 'InvariantViolation';
  }
}

export function violation(invariant: string, detail: string): never {
  throw new InvariantViolation(invariant, detail);
}

/** What a node has on disk. */
export interface DiskLog {
  hardState: HardState;
  snapshot: Snapshot;
  /** Entries after snapshot.meta.index, contiguous. */
  entries: Entry[];
}

export function diskLastIndex(d: DiskLog): number {
  return d.snapshot.meta.index + d.entries.length;
}

/** Term of the persisted entry at index; undefined if compacted or absent. */
export function diskTermAt(d: DiskLog, index: number): number | undefined {
  const s = d.snapshot.meta.index;
  if (index === s) return d.snapshot.meta.term;
  if (index < s || index > s + d.entries.length) return undefined;
  return d.entries[index - s - 1].term;
}

/** FNV-1a over an entry's type and data. */
export function entryHash(e: Entry): number {
  let h = Math.imul(0x811c9dc5 ^ e.type, 0x01000193);
  const d = e.data;
  for (let i = 0; i < d.length; i++) h = Math.imul(h ^ d[i], 0x01000193);
  return h >>> 0;
}

/** The state machine's running hash after applying e on top of `prev`. */
export function chainHash(prev: number, e: Entry, dataHash: number): number {
  let h = Math.imul(prev ^ 0x5bd1e995, 0x01000193);
  h = Math.imul(h ^ e.index, 0x01000193);
  h = Math.imul(h ^ e.term, 0x01000193);
  h = Math.imul(h ^ dataHash, 0x01000193);
  return h >>> 0;
}

const KEY_TERMS = 2 ** 21;
const logKey = (index: number, term: number): number => index * KEY_TERMS + term;

interface LogRecord {
  hash: number;
  prevTerm: number;
  by: NodeId;
}

interface AppliedRecord {
  term: number;
  hash: number;
  chain: number;
  by: NodeId;
}

const quorum = (n: number): number => Math.floor(n / 2) + 1;

export class Invariants {
  private readonly log = new Map<number, LogRecord>();
  private readonly leaders = new Map<number, NodeId>();
  /** Commit term -> the highest (index, entry term) a leader of that term committed. */
  private readonly commitPoints = new Map<number, { index: number; entryTerm: number }>();
  private readonly applied = new Map<number, AppliedRecord>();
  /** term -> candidate -> voters that sent it a granting VoteResp. */
  private readonly grants = new Map<number, Map<NodeId, Set<NodeId>>>();
  /** read context -> the highest index applied anywhere when the read was asked. */
  private readonly reads = new Map<number, number>();
  /** The highest index any leader has committed so far. */
  maxCommit = 0;
  /** The highest index any node has applied so far. */
  maxApplied = 0;

  constructor(readonly level: CheckLevel) {}

  // ---- persistence ---------------------------------------------------------

  /** A node persisted e after an entry (or snapshot) of term prevTerm. */
  persistedEntry(id: NodeId, e: Entry, prevTerm: number): void {
    if (e.term < prevTerm) violation('log-matching', `${node(id)} persisted ${e.index}@${e.term} after an entry of term ${prevTerm}`);
    if (e.term >= KEY_TERMS) throw new Error(`term ${e.term} too large for the log registry`);
    const key = logKey(e.index, e.term);
    const h = entryHash(e);
    const rec = this.log.get(key);
    if (!rec) {
      this.log.set(key, { hash: h, prevTerm, by: id });
      return;
    }
    if (rec.hash !== h) {
      violation('log-matching', `${node(id)} persisted ${e.index}@${e.term} with different data than ${node(rec.by)} did`);
    }
    if (rec.prevTerm !== prevTerm) {
      violation(
        'log-matching',
        `${node(id)} persisted ${e.index}@${e.term} after an entry of term ${prevTerm}, ${node(rec.by)} after one of term ${rec.prevTerm}: logs agree at ${e.index} but not before it`,
      );
    }
  }

  /** A node is about to overwrite its persisted log from index `first`. */
  truncating(id: NodeId, first: number, disk: DiskLog): void {
    if (first <= diskLastIndex(disk) && first <= disk.hardState.commit) {
      violation('committed-entry-lost', `${node(id)} overwrote its log from ${first}, but it had persisted commit index ${disk.hardState.commit}`);
    }
  }

  persistedHardState(id: NodeId, old: HardState, next: HardState, lastIndex: number): void {
    if (next.term < old.term) violation('hard-state', `${node(id)} persisted term ${next.term} over term ${old.term}`);
    if (next.term === old.term && old.vote !== 0n && next.vote !== old.vote) {
      violation('hard-state', `${node(id)} changed its persisted vote in term ${next.term} from ${node(old.vote)} to ${node(next.vote)}`);
    }
    if (next.commit < old.commit) violation('hard-state', `${node(id)} persisted commit ${next.commit} below ${old.commit}`);
    if (next.commit > lastIndex) violation('hard-state', `${node(id)} persisted commit ${next.commit} beyond its persisted log (last ${lastIndex})`);
  }

  // ---- messages --------------------------------------------------------------

  /** A node hands `m` to the network; `disk` is what it has persisted at that moment. */
  sent(id: NodeId, m: Message, disk: DiskLog, learnerVote: () => string | undefined, early: boolean): void {
    switch (m.type) {
      case MessageType.VoteResp:
      case MessageType.PreVoteResp: {
        if (m.reject) return;
        const why = learnerVote();
        if (why !== undefined)
          violation(
            'learner-vote',
            `learner ${node(id)} granted a ${m.type === MessageType.VoteResp ? 'vote' : 'pre-vote'} to ${node(m.to)} in term ${m.term}${why}`,
          );
        if (m.type === MessageType.PreVoteResp) return;
        let byCand = this.grants.get(m.term);
        if (!byCand) this.grants.set(m.term, (byCand = new Map()));
        let voters = byCand.get(m.to);
        if (!voters) byCand.set(m.to, (voters = new Set()));
        voters.add(id);
        // Kept if the disk holds this vote, or a later term (no second vote in m.term possible).
        const kept = disk.hardState.term > m.term || (disk.hardState.term === m.term && disk.hardState.vote === m.to);
        if (this.level === 'all' && !kept) {
          violation(
            'persist-before-send',
            `${node(id)} granted its term-${m.term} vote to ${node(m.to)} ${early ? 'before persisting' : 'without persisting'} it (disk: term ${disk.hardState.term}, vote ${node(disk.hardState.vote)})`,
          );
        }
        return;
      }
      case MessageType.AppResp:
        // An ack to a leader of an older term than the one on disk is exempt: the log
        // it described may have been replaced by a newer leader's entries before it was
        // written, but a deposed leader cannot complete a quorum with it (every quorum
        // that elected the newer leader holds what the deposed one could commit).
        if (this.level === 'all' && !m.reject && m.index > diskLastIndex(disk) && m.term >= disk.hardState.term) {
          violation('persist-before-send', `${node(id)} acknowledged index ${m.index} to ${node(m.to)} with only ${diskLastIndex(disk)} on disk`);
        }
        return;
      default:
        return;
    }
  }

  // ---- leaders and commits ----------------------------------------------------

  becameLeader(id: NodeId, st: RaftStatus, termAt: (i: number) => number | undefined): void {
    const prev = this.leaders.get(st.term);
    if (prev !== undefined && prev !== id) violation('election-safety', `${node(id)} and ${node(prev)} were both leader in term ${st.term}`);
    this.leaders.set(st.term, id);

    const granted = this.grants.get(st.term)?.get(id);
    let votes = 0;
    for (const v of st.conf.voters) if (v === id ? st.vote === id : granted?.has(v)) votes++;
    if (votes < quorum(st.conf.voters.length)) {
      violation(
        'vote-quorum',
        `${node(id)} became leader of term ${st.term} with ${votes} voter votes of ${st.conf.voters.length} (voters ${st.conf.voters.map(node).join(',')})`,
      );
    }

    for (const [commitTerm, p] of this.commitPoints) {
      if (commitTerm >= st.term) continue;
      if (p.index < st.firstIndex - 1) continue; // inside its snapshot: committed there too
      const t = termAt(p.index);
      if (t !== p.entryTerm) {
        violation(
          'leader-completeness',
          `${node(id)} became leader of term ${st.term} without ${p.index}@${p.entryTerm}, committed in term ${commitTerm} (it has ${t === undefined ? 'nothing' : `term ${t}`} there, last index ${st.lastIndex})`,
        );
      }
    }
  }

  /**
   * A leader's commit index advanced to st.commit. At that moment a quorum of the
   * voters of its configuration must hold that entry on disk.
   */
  leaderCommitted(id: NodeId, st: RaftStatus, entryTerm: number | undefined, diskOf: (v: NodeId) => DiskLog | undefined): void {
    const c = st.commit;
    if (entryTerm === undefined) violation('commit-durability', `${node(id)} committed ${c} but has no entry there`);
    if (this.level === 'all' && entryTerm !== st.term) {
      violation('commit-current-term', `leader ${node(id)} of term ${st.term} advanced its commit index to ${c}, an entry of term ${entryTerm}`);
    }
    let holders = 0;
    const missing: string[] = [];
    for (const v of st.conf.voters) {
      const d = diskOf(v);
      if (d && (d.snapshot.meta.index >= c || diskTermAt(d, c) === entryTerm)) holders++;
      else missing.push(node(v));
    }
    if (holders < quorum(st.conf.voters.length)) {
      violation(
        'commit-durability',
        `leader ${node(id)} (term ${st.term}) committed ${c}@${entryTerm} but only ${holders} of voters ${st.conf.voters.map(node).join(',')} have it on disk (missing: ${missing.join(',')}; learners ${st.conf.learners.map(node).join(',') || 'none'})`,
      );
    }
    const p = this.commitPoints.get(st.term);
    if (!p || p.index < c) this.commitPoints.set(st.term, { index: c, entryTerm });
    if (c > this.maxCommit) this.maxCommit = c;
  }

  // ---- state machines --------------------------------------------------------

  /** A node applied e, reaching state `chain`. Returns true the first time any node applies this index. */
  appliedEntry(id: NodeId, e: Entry, chain: number, dataHash: number): boolean {
    const rec = this.applied.get(e.index);
    if (!rec) {
      this.applied.set(e.index, { term: e.term, hash: dataHash, chain, by: id });
      if (e.index > this.maxApplied) this.maxApplied = e.index;
      return true;
    }
    if (rec.term !== e.term || rec.hash !== dataHash) {
      violation(
        'state-machine-safety',
        `${node(id)} applied ${e.index}@${e.term} but ${node(rec.by)} applied ${e.index}@${rec.term} (different entries at one index)`,
      );
    }
    if (rec.chain !== chain) {
      violation('state-machine-safety', `${node(id)} reached a different state than ${node(rec.by)} after applying index ${e.index}`);
    }
    return false;
  }

  /** A node restored its state machine to (index, chain) from a snapshot. */
  restoredSnapshot(id: NodeId, index: number, chain: number): void {
    const rec = this.applied.get(index);
    if (!rec) violation('state-machine-safety', `${node(id)} restored a snapshot at ${index}, a state no node ever reached by applying`);
    if (rec.chain !== chain) violation('state-machine-safety', `${node(id)} restored a snapshot at ${index} whose state differs from ${node(rec.by)}'s`);
  }

  // ---- reads -------------------------------------------------------------------

  readRequested(ctx: number): void {
    this.reads.set(ctx, this.maxApplied);
  }

  readServed(id: NodeId, ctx: number, index: number): void {
    const min = this.reads.get(ctx);
    if (min === undefined) return; // not asked through the harness
    if (index < min)
      violation(
        'linearizable-read',
        `${node(id)} served read #${ctx} at index ${index}, but index ${min} had been applied (by some node) before the read was asked`,
      );
  }
}
