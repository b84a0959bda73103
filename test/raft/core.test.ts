// Unit tests of the Raft core, one per rule it must keep.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  EntryType,
  MessageType,
  RawNode,
  RaftError,
  StateType,
  decodeConfChange,
  emptyState,
  forceNewClusterState,
  type ConfChange,
} from '../../src/raft/index.js';
import { TestNetwork, bytes, options, rng, text } from './testNetwork.js';

const cc = (type: ConfChange['type'], id: number): ConfChange => ({ type, nodeId: BigInt(id), context: new Uint8Array(0) });
const appliedData = (net: TestNetwork, id: number) =>
  net
    .node(id)
    .applied.filter((e) => e.type === EntryType.Normal && e.data.length > 0)
    .map((e) => text(e.data));

/** Propose on `id`, deliver everything. */
function put(net: TestNetwork, id: number | bigint, value: string): void {
  net.node(id).raft.propose(bytes(value));
  net.stabilize();
}

/** A cluster of `voters` with node 1 elected leader. */
function clusterWithLeader(voters: number, extra = {}): TestNetwork {
  const net = new TestNetwork(voters, extra);
  net.stabilize(); // apply the bootstrap configuration
  net.node(1).raft.campaign();
  net.stabilize();
  assert.equal(net.leader(), 1n);
  return net;
}

function addMember(net: TestNetwork, type: 'addVoter' | 'addLearner', id: number): void {
  net.node(net.leader()!).raft.proposeConfChange(cc(type, id));
  net.add(BigInt(id), emptyState());
  net.stabilize();
  net.tickAll(3);
}

describe('elections', () => {
  test('randomized election timeout: followers campaign at different ticks within [e, 2e)', () => {
    const seen = new Set<number>();
    for (let seed = 1; seed <= 20; seed++) {
      const r = new RawNode(
        { ...options(1n), random: rng(seed), preVote: false },
        {
          hardState: { term: 1, vote: 0n, commit: 0 },
          snapshot: { index: 0, term: 1, conf: { voters: [1n, 2n, 3n], learners: [] } },
          entries: [],
        },
      );
      let ticks = 0;
      while (r.status().state === StateType.Follower && ticks < 100) {
        r.tick();
        ticks++;
      }
      assert.ok(ticks >= 10 && ticks < 20, `campaigned after ${ticks} ticks`);
      seen.add(ticks);
    }
    assert.ok(seen.size > 3, `timeouts not randomized: ${[...seen].join(',')}`);
  });

  test('pre-vote: a node rejoining after a partition does not unseat a healthy leader', () => {
    const net = clusterWithLeader(3);
    const term = net.node(1).raft.status().term;
    net.isolate(3);
    for (let i = 0; i < 100; i++) {
      net.tick(3);
      net.tickAll();
    }
    assert.equal(net.node(3).raft.status().term, term, 'isolated node raised its term');
    net.heal();
    net.tickAll(20);
    assert.equal(net.leader(), 1n);
    assert.equal(net.node(1).raft.status().term, term);
  });

  test('check-quorum: a leader that hears no quorum for an election timeout steps down', () => {
    const net = clusterWithLeader(3);
    net.filter = (m) => m.from !== 1n && m.to !== 1n;
    for (let i = 0; i < 25; i++) {
      net.tick(1);
      net.stabilize();
    }
    assert.notEqual(net.node(1).raft.status().state, StateType.Leader);
  });

  test('a vote is in the hard state to persist before the vote response is sent', () => {
    const net = new TestNetwork(3);
    net.stabilize();
    const n2 = net.node(2).raft;
    n2.step({
      type: MessageType.Vote,
      from: 1n,
      to: 2n,
      term: 5,
      logTerm: 1,
      index: 3,
      entries: [],
      commit: 0,
      reject: false,
      rejectHint: 0,
    });
    const rd = n2.ready();
    assert.equal(rd.hardState?.vote, 1n);
    assert.equal(rd.hardState?.term, 5);
    assert.ok(rd.mustSync);
    assert.equal(rd.messages.length, 0, 'vote response must not be sent before the vote is persisted');
    const resp = rd.messagesAfterPersist.find((m) => m.type === MessageType.VoteResp);
    assert.ok(resp && !resp.reject);
    n2.advance(rd);
  });

  test("a stale candidate learns the voter's term from its refusal, and can win the next election", () => {
    const net = new TestNetwork(3, { preVote: false, checkQuorum: false });
    net.stabilize();
    const n3 = net.node(3).raft;
    n3.step({ type: MessageType.Vote, from: 2n, to: 3n, term: 9, logTerm: 0, index: 0, entries: [], commit: 0, reject: false, rejectHint: 0 });
    const rd3 = n3.ready();
    n3.advance(rd3);
    // Node 1 campaigns in term 2 < 9: node 3 refuses and tells it its term.
    const n1 = net.node(1).raft;
    n1.campaign();
    const rd1 = n1.ready();
    const vote = [...rd1.messages, ...rd1.messagesAfterPersist].find((m) => m.type === MessageType.Vote && m.to === 3n)!;
    n1.advance(rd1);
    n3.step(vote);
    const rd = n3.ready();
    const resp = [...rd.messages, ...rd.messagesAfterPersist].find((m) => m.type === MessageType.VoteResp);
    assert.ok(resp && resp.reject && resp.term === 9, `refusal carries term 9: ${JSON.stringify(resp, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`);
    n3.advance(rd);
    n1.step(resp);
    assert.equal(n1.status().term, 9);
    assert.equal(n1.status().state, StateType.Follower);
  });

  test('a voter that refuses a vote tells its commit: a remaining voter that missed the commit of a removal is not stuck', () => {
    const net = clusterWithLeader(2);
    const n1 = net.node(1);
    // The leader removes node 2; node 2 acknowledges the entry.
    n1.raft.proposeConfChange(cc('remove', 2));
    net.processReady(n1);
    for (const m of net.queue.splice(0)) net.node(m.to).raft.step(m);
    net.processReady(net.node(2));
    for (const m of net.queue.splice(0)) n1.raft.step(m);
    // Committed in the leader's memory; its next append carries the commit and a new entry,
    // leaves before the leader's write, and the leader crashes before writing either.
    n1.raft.propose(bytes('lost'));
    const rd = n1.raft.ready();
    const removal = rd.hardState?.commit ?? 0;
    assert.ok(removal > (n1.persisted.hardState.commit ?? 0), 'the removal is committed in memory only');
    net.queue.push(...rd.messages);
    net.restart(1);
    net.stabilize();
    // Node 2 applied its removal and holds the longer log; node 1 still counts it as a voter.
    assert.deepEqual(net.node(2).raft.status().conf.voters, [1n]);
    assert.deepEqual(net.node(1).raft.status().conf.voters.sort(), [1n, 2n]);
    net.tickAll(60);
    assert.equal(net.leader(), 1n);
    assert.ok(net.node(1).raft.status().commit >= removal);
  });

  test('a node votes for at most one candidate per term', () => {
    const net = new TestNetwork(3);
    net.stabilize();
    const n3 = net.node(3).raft;
    const vote = (from: bigint) =>
      n3.step({ type: MessageType.Vote, from, to: 3n, term: 4, logTerm: 1, index: 3, entries: [], commit: 0, reject: false, rejectHint: 0 });
    vote(1n);
    vote(2n);
    const rd = n3.ready();
    const resps = rd.messagesAfterPersist.filter((m) => m.type === MessageType.VoteResp);
    assert.deepEqual(
      resps.map((m) => [m.to, m.reject]),
      [
        [1n, false],
        [2n, true],
      ],
    );
    n3.advance(rd);
  });
});

describe('replication', () => {
  test('consistency check with fast backtracking: a diverged follower is repaired in few round trips', () => {
    // Node 3 leads first and appends a tail nobody else receives (a stale leader's
    // uncommitted entries); then it misses 50 entries of the next leader.
    const net = new TestNetwork(3);
    net.stabilize();
    net.node(3).raft.campaign();
    net.stabilize();
    assert.equal(net.leader(), 3n);
    net.isolate(3);
    for (let i = 0; i < 20; i++) net.node(3).raft.propose(bytes(`stale${i}`));
    net.stabilize();
    const isLeader = (id: number) => net.node(id).raft.status().state === StateType.Leader;
    for (let i = 0; i < 60 && !isLeader(1) && !isLeader(2); i++) net.tickAll();
    const lead = isLeader(1) ? 1 : 2;
    assert.ok(isLeader(lead), 'no new leader while 3 was away');
    for (let i = 0; i < 50; i++) put(net, lead, `v${i}`);
    const tail = net.node(3).persisted.entries.filter((e) => e.data.length > 0 && text(e.data).startsWith('stale'));
    assert.equal(tail.length, 20, 'node 3 holds the divergent tail');
    const leaderLog = new Map(net.node(lead).persisted.entries.map((e) => [e.index, e.term]));
    assert.ok(
      tail.every((e) => leaderLog.has(e.index) && leaderLog.get(e.index) !== e.term),
      'the tail conflicts with the leader log',
    );
    net.heal();
    const before = net.node(lead).sent.filter((m) => m.to === 3n && m.type === MessageType.App).length;
    net.tickAll(3);
    const apps = net.node(lead).sent.filter((m) => m.to === 3n && m.type === MessageType.App).length - before;
    assert.deepEqual(appliedData(net, 3), appliedData(net, lead));
    assert.ok(!appliedData(net, 3).some((v) => v.startsWith('stale')));
    assert.ok(apps <= 10, `took ${apps} appends to repair`);
  });

  test('fast backtracking skips a whole conflicting term at once', () => {
    const net = clusterWithLeader(3);
    // Leader 1 writes 30 entries nobody else sees, then loses leadership.
    net.filter = (m) => m.from !== 1n && m.to !== 1n;
    for (let i = 0; i < 30; i++) net.node(1).raft.propose(bytes(`lost${i}`));
    net.stabilize();
    for (let i = 0; i < 40 && net.leader() !== 2n && net.leader() !== 3n; i++) net.tickAll();
    const newLeader = net.leader()!;
    assert.ok(newLeader === 2n || newLeader === 3n);
    put(net, newLeader, 'kept');
    net.heal();
    const before = net.node(newLeader).sent.filter((m) => m.to === 1n && m.type === MessageType.App).length;
    net.tickAll(5);
    const apps = net.node(newLeader).sent.filter((m) => m.to === 1n && m.type === MessageType.App).length - before;
    assert.ok(apps <= 6, `took ${apps} appends to skip 30 conflicting entries`);
    assert.ok(appliedData(net, 1).includes('kept'));
    assert.ok(!appliedData(net, 1).some((v) => v.startsWith('lost')));
  });

  test('flow control: in-flight appends per follower are capped, and so are bytes per message', () => {
    const net = clusterWithLeader(3, { maxInflightMsgs: 3, maxSizePerMsg: 64 });
    // Acks from node 2 are lost: the leader must stop at the window, and not before it.
    net.filter = (m) => !(m.from === 2n && m.type === MessageType.AppResp);
    const before = net.node(1).sent.length;
    for (let i = 0; i < 50; i++) net.node(1).raft.propose(new Uint8Array(40));
    net.stabilize();
    const sent = net
      .node(1)
      .sent.slice(before)
      .filter((m) => m.type === MessageType.App && m.entries.length > 0);
    const to2 = sent.filter((m) => m.to === 2n);
    assert.equal(to2.length, 3, `${to2.length} appends in flight to node 2, window 3`);
    // 40-byte entries under a 64-byte cap: one entry per message.
    for (const m of sent) assert.equal(m.entries.length, 1, `${m.entries.length} entries in one message`);
    // Node 3 acks: the cap is per follower, so it gets everything.
    const to3 = sent.filter((m) => m.to === 3n).reduce((n, m) => n + m.entries.length, 0);
    assert.equal(to3, 50);
    net.heal();
    net.tickAll(3);
    assert.equal(appliedData(net, 2).length, appliedData(net, 1).length);
  });

  test('a restarted member hands out its committed backlog in Readies of at most maxSizePerMsg bytes, in order', () => {
    const net = clusterWithLeader(3);
    for (let i = 0; i < 30; i++) net.node(1).raft.propose(new Uint8Array(40).fill(i));
    net.stabilize();
    // Node 2 restarts with everything committed and nothing applied past its snapshot.
    const restarted = new RawNode(options(2n, { maxSizePerMsg: 100 }), net.node(2).persisted);
    const batches: number[][] = [];
    for (let i = 0; i < 200 && restarted.hasReady(); i++) {
      const rd = restarted.ready();
      if (rd.committedEntries.length > 0) batches.push(rd.committedEntries.map((e) => e.index));
      restarted.advance(rd);
    }
    const byIndex = new Map(net.node(2).persisted.entries.map((e) => [e.index, e.data.length]));
    for (const b of batches) {
      const bytes = b.reduce((n, i) => n + byIndex.get(i)!, 0);
      assert.ok(b.length === 1 || bytes <= 100, `a Ready handed out ${b.length} entries of ${bytes} bytes`);
    }
    const handed = batches.flat();
    assert.deepEqual(
      handed,
      [...byIndex.keys()].filter((i) => i >= handed[0]),
      'not every committed entry, in order',
    );
    assert.equal(handed.filter((i) => byIndex.get(i) === 40).length, 30);
    // 40-byte entries under a 100-byte cap: two per Ready.
    assert.ok(batches.length >= 15, `${batches.length} Readies for 30 entries`);
  });

  test('one append per follower per Ready: proposals made before a Ready leave together, taking one slot of the window', () => {
    const net = clusterWithLeader(3, { maxInflightMsgs: 1 });
    const leader = net.node(1).raft;
    for (let i = 0; i < 10; i++) leader.propose(bytes(`a${i}`));
    const rd = leader.ready();
    const apps = rd.messages.filter((m) => m.type === MessageType.App);
    assert.deepEqual(apps.map((m) => m.to).sort(), [2n, 3n]);
    for (const m of apps)
      assert.deepEqual(
        m.entries.map((e) => text(e.data)),
        ['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7', 'a8', 'a9'],
      );
    leader.advance(rd);
    // Window 1, not yet acknowledged: nothing more may leave until the ack.
    leader.propose(bytes('b'));
    const rd2 = leader.ready();
    assert.equal(rd2.messages.filter((m) => m.type === MessageType.App).length, 0);
    leader.advance(rd2);
    net.queue.push(...apps);
    net.stabilize();
    assert.deepEqual(appliedData(net, 3).slice(-11), [...apps[0].entries.map((e) => text(e.data)), 'b']);
  });

  test('a follower acknowledges the appends it took in before one Ready once, after persisting them', () => {
    const net = clusterWithLeader(3);
    const leader = net.node(1).raft;
    const apps = [];
    for (const v of ['x', 'y']) {
      leader.propose(bytes(v));
      const rd = leader.ready();
      apps.push(...rd.messages.filter((m) => m.type === MessageType.App && m.to === 2n));
      leader.advance(rd);
    }
    assert.equal(apps.length, 2);
    const f = net.node(2).raft;
    for (const m of apps) f.step(m);
    const rd = f.ready();
    assert.equal(rd.messages.filter((m) => m.type === MessageType.AppResp).length, 0, 'an ack before the write');
    const acks = rd.messagesAfterPersist.filter((m) => m.type === MessageType.AppResp);
    const last = apps[1].entries[0].index;
    assert.deepEqual(
      acks.map((m) => m.index),
      [last],
    );
    assert.equal(rd.entries[rd.entries.length - 1].index, last, 'the acknowledged entry is in the write');
    f.advance(rd);
  });

  test('the commit rides on the next append; a commit alone goes out at once and a follower that holds everything does not acknowledge it', () => {
    const net = clusterWithLeader(3);
    const n1 = net.node(1);
    put(net, 1, 'warm');
    // A commit with new entries waiting: both leave in one message per follower.
    n1.raft.propose(bytes('p'));
    net.processReady(n1);
    for (const id of [2, 3]) net.processReady(net.node(id)); // nothing to do yet: the appends are queued
    const toFollowers = net.queue.splice(0);
    for (const m of toFollowers) net.node(m.to).raft.step(m);
    for (const id of [2, 3]) net.processReady(net.node(id));
    const acks = net.queue.splice(0);
    for (const m of acks) n1.raft.step(m);
    n1.raft.propose(bytes('q'));
    const rd = n1.raft.ready();
    const apps = rd.messages.filter((m) => m.type === MessageType.App);
    assert.equal(apps.length, 2);
    const pIndex = acks[0].index;
    for (const m of apps) {
      assert.deepEqual(
        m.entries.map((e) => text(e.data)),
        ['q'],
      );
      assert.equal(m.commit, pIndex, 'the commit of p rides on the append of q');
    }
    net.queue.push(...rd.messages, ...rd.messagesAfterPersist);
    n1.sent.push(...rd.messages, ...rd.messagesAfterPersist);
    n1.raft.advance(rd);
    net.stabilize();
    // Quiet now: one more put costs an append and an ack per follower, then a commit alone that is not acknowledged.
    const sentBefore = new Map([1, 2, 3].map((id) => [id, net.node(id).sent.length]));
    put(net, 1, 'r');
    const sent = (id: number) => net.node(id).sent.slice(sentBefore.get(id));
    const commitOnly = sent(1).filter((m) => m.type === MessageType.App && m.entries.length === 0);
    assert.equal(commitOnly.length, 2);
    assert.equal(sent(1).filter((m) => m.type === MessageType.App).length, 4);
    for (const id of [2, 3]) {
      assert.equal(sent(id).filter((m) => m.type === MessageType.AppResp).length, 1, `acks from ${id}`);
      assert.equal(net.node(id).raft.status().commit, n1.raft.status().commit, `node ${id} learned the commit`);
    }
    assert.deepEqual(appliedData(net, 3), ['warm', 'p', 'q', 'r']);
  });

  test('lazyCommit: the follower that forwarded a put hears its commit at once; the others from the next append or sendOwedCommits()', () => {
    const net = clusterWithLeader(3, { lazyCommit: true });
    const n1 = net.node(1);
    put(net, 1, 'warm');
    n1.raft.sendOwedCommits();
    net.stabilize();
    const commitOnlyFrom1 = (since: number) => n1.sent.slice(since).filter((m) => m.type === MessageType.App && m.entries.length === 0);
    const commitOf = (id: number) => net.node(id).raft.status().commit;

    // A put on the leader: no follower waits on it, so no commit-only append yet.
    let mark = n1.sent.length;
    put(net, 1, 'r');
    assert.equal(commitOnlyFrom1(mark).length, 0);
    assert.equal(n1.raft.hasOwedCommits(), true);
    for (const id of [2, 3]) assert.ok(commitOf(id) < commitOf(1), `node ${id} does not know the commit yet`);
    n1.raft.sendOwedCommits();
    net.stabilize();
    assert.equal(commitOnlyFrom1(mark).length, 2);
    assert.equal(n1.raft.hasOwedCommits(), false);
    for (const id of [2, 3]) assert.equal(commitOf(id), commitOf(1), `node ${id} learned the commit`);

    // A put forwarded by node 2: node 2 is told at once (its client waits on its apply), node 3 is owed.
    mark = n1.sent.length;
    put(net, 2, 's');
    assert.deepEqual(
      commitOnlyFrom1(mark).map((m) => m.to),
      [2n],
    );
    assert.equal(commitOf(2), commitOf(1));
    assert.deepEqual(appliedData(net, 2), ['warm', 'r', 's']);
    assert.ok(commitOf(3) < commitOf(1));
    assert.equal(n1.raft.hasOwedCommits(), true);
    // The next append to node 3 carries it.
    put(net, 1, 't');
    assert.deepEqual(appliedData(net, 3), ['warm', 'r', 's']);
    n1.raft.sendOwedCommits();
    net.stabilize();
    assert.deepEqual(appliedData(net, 3), ['warm', 'r', 's', 't']);

    // Without lazyCommit every commit goes out at once (the test above).
    const eager = clusterWithLeader(3);
    put(eager, 1, 'warm');
    assert.equal(eager.node(1).raft.hasOwedCommits(), false);
  });

  test('per-follower progress: probe, then replicate, then snapshot when behind compaction', () => {
    const net = new TestNetwork(3);
    net.stabilize();
    // Node 3 never answers the new leader: it stays in Probe, one append at a time.
    net.isolate(3);
    net.node(1).raft.campaign();
    net.stabilize();
    assert.equal(net.leader(), 1n);
    const progress = (id: bigint) => net.node(1).raft.status().progress.get(id)?.state;
    const before = net.node(1).sent.length;
    for (let i = 0; i < 5; i++) put(net, 1, `p${i}`);
    assert.equal(progress(2n), 'Replicate');
    assert.equal(progress(3n), 'Probe');
    const probes = net
      .node(1)
      .sent.slice(before)
      .filter((m) => m.to === 3n && m.type === MessageType.App);
    assert.ok(probes.length <= 1, `${probes.length} appends to a probed follower without a heartbeat in between`);
    // Once it answers, the leader finds the match and streams.
    net.heal();
    net.tickAll(2);
    assert.equal(progress(3n), 'Replicate');
    assert.deepEqual(appliedData(net, 3), appliedData(net, 1));
    // Behind the leader's compaction: a snapshot (held back here, so the state stays).
    net.isolate(3);
    for (let i = 0; i < 20; i++) put(net, 1, `x${i}`);
    net.compact(1, net.node(1).raft.status().applied);
    net.filter = (m) => !(m.to === 3n && m.type === MessageType.Snap);
    net.tickAll(3);
    assert.equal(progress(3n), 'Snapshot');
  });
});

describe('commit', () => {
  test('an entry is committed by counting only if it is from the current term', () => {
    for (const planted of [undefined, 'commit-previous-term-by-counting'] as const) {
      const net = clusterWithLeader(3, { plantedBug: planted });
      // Leader 1 appends E that nobody receives.
      net.filter = (m) => m.from !== 1n && m.to !== 1n;
      net.node(1).raft.propose(bytes('E'));
      net.stabilize();
      const eIndex = net.node(1).raft.status().lastIndex;
      // It steps down (check-quorum) and wins again in a later term; followers
      // may receive only E itself, never the new leader's own-term entry.
      for (let i = 0; i < 25; i++) {
        net.tick(1);
        net.stabilize();
      }
      // Followers stop trusting the old lease without electing each other.
      net.filter = () => false;
      for (let i = 0; i < 10; i++) {
        net.tick(2);
        net.tick(3);
        net.stabilize();
      }
      net.filter = (m) => {
        if (m.type === MessageType.App) m.entries = m.entries.filter((e) => e.index <= eIndex);
        return true;
      };
      net.node(1).raft.campaign();
      net.stabilize();
      assert.equal(net.leader(), 1n);
      net.stabilize();
      const commit = net.node(1).raft.status().commit;
      if (planted) assert.ok(commit >= eIndex, 'planted bug did not commit the old entry');
      else assert.ok(commit < eIndex, `entry of an earlier term committed by counting (commit ${commit})`);
    }
  });

  test('a commit needs a quorum of voters: learners never count', () => {
    for (const planted of [undefined, 'learner-counts-toward-commit'] as const) {
      const net = clusterWithLeader(2, { plantedBug: planted });
      addMember(net, 'addLearner', 3);
      net.filter = (m) => m.to !== 2n && m.from !== 2n;
      const before = net.node(1).raft.status().commit;
      put(net, 1, 'needs-two-voters');
      const after = net.node(1).raft.status().commit;
      if (planted) assert.ok(after > before, 'planted bug did not count the learner');
      else assert.equal(after, before, 'commit advanced with one voter and a learner');
    }
  });

  test('learners never count as votes: a candidate cannot win with a learner', () => {
    const net = clusterWithLeader(2);
    addMember(net, 'addLearner', 3);
    net.isolate(2);
    for (let i = 0; i < 100; i++) {
      net.tick(1);
      net.tick(3);
      net.stabilize();
    }
    assert.notEqual(net.leader(), 1n);
    assert.equal(net.node(3).sent.filter((m) => m.type === MessageType.Vote || m.type === MessageType.PreVote).length, 0, 'learner campaigned');
  });

  test('a write in flight when a new leader replaces its tail: the kept prefix is not written again', () => {
    const net = clusterWithLeader(3);
    const n2 = net.node(2).raft;
    const last = n2.status().lastIndex;
    const term = n2.status().term;
    const e = (index: number, t: number) => ({ index, term: t, type: EntryType.Normal, data: bytes(`e${index}@${t}`) });
    const app = (t: number, prev: number, prevTerm: number, ents: ReturnType<typeof e>[]) =>
      n2.step({ type: MessageType.App, from: 1n, to: 2n, term: t, logTerm: prevTerm, index: prev, entries: ents, commit: 0, reject: false, rejectHint: 0 });
    app(term, last, term, [e(last + 1, term), e(last + 2, term)]);
    const inflight = n2.ready();
    assert.deepEqual(
      inflight.entries.map((x) => x.index),
      [last + 1, last + 2],
    );
    // While the write is in flight, a leader of the next term replaces the last entry.
    app(term + 1, last + 1, term, [e(last + 2, term + 1)]);
    n2.advance(inflight);
    const next = n2.ready();
    assert.deepEqual(
      next.entries.map((x) => [x.index, x.term]),
      [[last + 2, term + 1]],
      'only the replaced entry is written again',
    );
    n2.advance(next);
  });

  test('the leader sends appends before its own write is durable, and counts itself only once it is', () => {
    const net = clusterWithLeader(3);
    const leader = net.node(1).raft;
    leader.propose(bytes('x'));
    const rd = leader.ready();
    const index = rd.entries[rd.entries.length - 1].index;
    assert.ok(
      rd.messages.some((m) => m.type === MessageType.App && m.entries.some((e) => e.index === index)),
      'appends wait for the leader',
    );
    leader.advance(rd);
    // Single voter: the commit follows only the durable write.
    const solo = clusterWithLeader(1);
    const r = solo.node(1).raft;
    r.propose(bytes('y'));
    const rd1 = r.ready();
    const idx = rd1.entries[rd1.entries.length - 1].index;
    assert.ok(!rd1.committedEntries.some((e) => e.index === idx), 'committed before durable');
    assert.ok((rd1.hardState?.commit ?? 0) < idx);
    r.advance(rd1);
    const rd2 = r.ready();
    assert.ok(rd2.committedEntries.some((e) => e.index === idx));
    r.advance(rd2);
  });
});

describe('proposals', () => {
  test('followers and learners forward proposals to the leader', () => {
    const net = clusterWithLeader(3);
    addMember(net, 'addLearner', 4);
    put(net, 2, 'from-follower');
    put(net, 4, 'from-learner');
    for (const id of [1, 2, 3, 4]) assert.deepEqual(appliedData(net, id), ['from-follower', 'from-learner']);
  });

  test('a proposal with no leader known fails at once', () => {
    const net = new TestNetwork(3);
    net.stabilize();
    assert.throws(
      () => net.node(2).raft.propose(bytes('x')),
      (e: unknown) => e instanceof RaftError && e.code === 'ProposalDropped',
    );
  });

  test('a proposal during a leader transfer fails at once, and a forwarded one comes back dropped', () => {
    const net = clusterWithLeader(3);
    net.filter = (m) => m.to !== 3n; // the transfer cannot complete
    net.node(1).raft.transferLeader(3n);
    net.stabilize();
    assert.throws(
      () => net.node(1).raft.propose(bytes('x')),
      (e: unknown) => e instanceof RaftError && e.code === 'TransferInProgress',
    );
    net.node(2).raft.propose(bytes('forwarded'));
    net.stabilize();
    assert.equal(net.node(2).dropped.length, 1);
    assert.equal(text(net.node(2).dropped[0].entries[0].data), 'forwarded');
    assert.match(net.node(2).dropped[0].reason, /transfer/);
  });
});

describe('membership', () => {
  test('add voter, add learner, promote, remove: each takes effect when applied', () => {
    const net = clusterWithLeader(3);
    const leader = net.node(1).raft;
    leader.proposeConfChange(cc('addLearner', 4));
    assert.deepEqual(leader.status().conf.learners, [], 'took effect before it was applied');
    net.add(4n);
    net.stabilize();
    assert.deepEqual(leader.status().conf.learners, [4n]);
    leader.proposeConfChange(cc('promote', 4));
    net.stabilize();
    assert.deepEqual(leader.status().conf.voters, [1n, 2n, 3n, 4n]);
    leader.proposeConfChange(cc('remove', 2));
    net.stabilize();
    assert.deepEqual(leader.status().conf.voters, [1n, 3n, 4n]);
    leader.proposeConfChange(cc('addVoter', 5));
    net.add(5n);
    net.stabilize();
    assert.deepEqual(net.node(5).raft.status().conf.voters, [1n, 3n, 4n, 5n]);
    put(net, 1, 'after');
    assert.ok(appliedData(net, 5).includes('after'));
  });

  test('at most one membership change is pending until it is applied', () => {
    const net = clusterWithLeader(3);
    const leader = net.node(1).raft;
    leader.proposeConfChange(cc('addLearner', 4));
    assert.throws(
      () => leader.proposeConfChange(cc('remove', 3)),
      (e: unknown) => e instanceof RaftError && e.code === 'ConfChangePending',
    );
    net.add(4n);
    net.stabilize();
    leader.proposeConfChange(cc('remove', 3));
    net.stabilize();
    assert.deepEqual(leader.status().conf.voters, [1n, 2n]);
  });

  test('invalid changes are refused with an error: promote a voter, remove a stranger, add twice', () => {
    const net = clusterWithLeader(3);
    const leader = net.node(1).raft;
    for (const bad of [cc('promote', 2), cc('remove', 9), cc('addVoter', 2), cc('addLearner', 3)]) {
      assert.throws(
        () => leader.proposeConfChange(bad),
        (e: unknown) => e instanceof RaftError && e.code === 'InvalidConfChange',
      );
    }
    assert.throws(
      () => net.node(2).raft.proposeConfChange(cc('addLearner', 4)),
      (e: unknown) => e instanceof RaftError && e.code === 'NotLeader',
    );
  });

  test('removing the leader works: it steps down once the others hold the commit, and the rest elect a new one', () => {
    const net = clusterWithLeader(3);
    net.node(1).raft.proposeConfChange(cc('remove', 1));
    net.stabilize();
    // It leads on until the others hold its log and the commit, then steps down.
    assert.throws(
      () => net.node(1).raft.propose(bytes('x')),
      (e: unknown) => e instanceof RaftError && e.code === 'ProposalDropped',
    );
    net.tick(1, 3);
    net.stabilize();
    assert.notEqual(net.node(1).raft.status().state, StateType.Leader);
    net.nodes.delete(1n);
    const lead = net.electLeader();
    assert.ok(lead === 2n || lead === 3n);
    put(net, lead, 'after-removal');
    assert.ok(appliedData(net, 2).includes('after-removal'));
  });

  test('a node no longer in the configuration never campaigns', () => {
    const net = clusterWithLeader(3);
    net.node(1).raft.proposeConfChange(cc('remove', 3));
    net.stabilize();
    const sentBefore = net.node(3).sent.length;
    net.isolate(3);
    net.tick(3, 200);
    net.stabilize();
    const campaigns = net
      .node(3)
      .sent.slice(sentBefore)
      .filter((m) => m.type === MessageType.Vote || m.type === MessageType.PreVote);
    assert.equal(campaigns.length, 0);
  });
});

describe('snapshots', () => {
  test('a learner added after compaction receives a snapshot and its configuration', () => {
    const net = clusterWithLeader(3);
    for (let i = 0; i < 10; i++) put(net, 1, `k${i}`);
    for (const id of [1, 2, 3]) net.compact(id, net.node(id).raft.status().applied);
    addMember(net, 'addLearner', 4);
    const n4 = net.node(4);
    assert.ok(n4.persisted.snapshot.index > 0, 'learner did not get a snapshot');
    assert.deepEqual(n4.raft.status().conf, { voters: [1n, 2n, 3n], learners: [4n] });
    put(net, 1, 'after-snapshot');
    assert.deepEqual(appliedData(net, 4), ['after-snapshot']);
  });

  test('a restarted follower that fell behind compaction catches up by snapshot', () => {
    const net = clusterWithLeader(3);
    net.isolate(3);
    for (let i = 0; i < 10; i++) put(net, 1, `k${i}`);
    net.compact(1, net.node(1).raft.status().applied);
    net.restart(3);
    net.heal();
    net.tickAll(5);
    put(net, 1, 'tail');
    assert.equal(net.node(3).raft.status().commit, net.node(1).raft.status().commit);
    assert.ok(appliedData(net, 3).includes('tail'));
  });
});

describe('leadership transfer and reads', () => {
  test('leader transfer goes to a voter only', () => {
    const net = clusterWithLeader(3);
    addMember(net, 'addLearner', 4);
    assert.throws(
      () => net.node(1).raft.transferLeader(4n),
      (e: unknown) => e instanceof RaftError && e.code === 'BadTransferee',
    );
    net.node(1).raft.transferLeader(3n);
    net.stabilize();
    assert.equal(net.leader(), 3n);
  });

  test('ReadIndex: a read is released only after a quorum confirms the leadership', () => {
    const net = clusterWithLeader(3);
    put(net, 1, 'a');
    net.filter = (m) => m.type !== MessageType.HeartbeatResp;
    net.node(1).raft.readIndex(bytes('r1'));
    net.stabilize();
    assert.equal(net.node(1).readStates.length, 0, 'read released without a quorum');
    net.heal();
    net.node(1).raft.readIndex(bytes('r2'));
    net.stabilize();
    assert.deepEqual(
      net.node(1).readStates.map((r) => text(r.context)),
      ['r1', 'r2'],
    );
    assert.equal(net.node(1).readStates[0].index, net.node(1).raft.status().commit);
    net.node(2).raft.readIndex(bytes('f1'));
    net.stabilize();
    assert.deepEqual(
      net.node(2).readStates.map((r) => text(r.context)),
      ['f1'],
    );
  });
});

describe('force-new-cluster primitive', () => {
  test('from persisted state: a single voter that elects itself at once and keeps every entry', () => {
    const net = clusterWithLeader(3);
    put(net, 1, 'committed');
    // An entry past the commit index: appended by the leader, never acknowledged.
    net.filter = () => false;
    net.node(1).raft.propose(bytes('uncommitted'));
    net.stabilize();
    const survivor = net.node(1).persisted;
    for (const discard of [false, true]) {
      const forced = forceNewClusterState(structuredClone(survivor), 1n, { discardUncommitted: discard });
      const r = new RawNode(options(1n), forced);
      r.tick();
      let rd = r.ready();
      const applied = [...rd.committedEntries];
      r.advance(rd);
      assert.equal(r.status().state, StateType.Leader);
      assert.deepEqual(r.status().conf, { voters: [1n], learners: [] });
      for (let i = 0; i < 3 && r.hasReady(); i++) {
        rd = r.ready();
        applied.push(...rd.committedEntries);
        r.advance(rd);
      }
      const values = applied.filter((e) => e.data.length > 0).map((e) => text(e.data));
      assert.ok(values.includes('committed'));
      assert.equal(values.includes('uncommitted'), !discard);
      assert.ok(!applied.some((e) => e.type === EntryType.ConfChange && decodeConfChange(e.data).type !== 'update'));
    }
  });
});
