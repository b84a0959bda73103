// Hand-driven situations built with the simulator's harness: every message is
// delivered (or held back) on purpose, and the invariants are still checked.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MessageType, RaftError, StateType, type ConfChange, type Message } from '../../src/raft/index.js';
import { Cluster, QUIET, type SimNode } from './cluster.js';

function quietCluster(voters: number): Cluster {
  const c = new Cluster({
    seed: 1,
    voters,
    // No check-quorum: a follower that just heard from the old leader would ignore the campaign.
    core: { electionTick: 10, heartbeatTick: 1, preVote: true, checkQuorum: false, maxSizePerMsg: 1 << 20, maxInflightMsgs: 256 },
    faults: QUIET,
    checks: 'all',
    traceCapacity: 200,
  });
  c.stabilize(); // every founder applies the bootstrap configuration
  return c;
}

const addLearner = (id: bigint): ConfChange => ({ type: 'addLearner', nodeId: id, context: new Uint8Array(0) });

/** Delivers the queued messages matching `pred`, in order, without handling any Ready. */
function deliver(c: Cluster, pred: (m: Message) => boolean): number {
  const envs = c.net.take(pred);
  for (const e of envs) c.deliver(e);
  return envs.length;
}

function refusal(n: SimNode, cc: ConfChange): string | undefined {
  try {
    n.raft!.proposeConfChange(cc);
    return undefined;
  } catch (err) {
    assert.ok(err instanceof RaftError, `expected a RaftError, got ${String(err)}`);
    return err.code;
  }
}

test('a new leader accepts no membership change until it has applied every entry up to the index at which it was elected', () => {
  const c = quietCluster(3);
  const [n1, n2, n3] = [c.node(1), c.node(2), c.node(3)];
  n1.raft!.campaign();
  c.stabilize();
  assert.equal(n1.raft!.status().state, StateType.Leader);

  // n1 proposes adding learner 4; n2 and n3 persist it and acknowledge, and n1
  // commits it, but the append that would carry the new commit index never arrives.
  assert.equal(refusal(n1, addLearner(4n)), undefined);
  const ccIndex = n1.raft!.status().lastIndex;
  c.handleReady(n1);
  deliver(c, (m) => m.type === MessageType.App && m.from === 1n);
  c.handleReady(n2);
  c.handleReady(n3);
  deliver(c, (m) => m.type === MessageType.AppResp && m.to === 1n);
  assert.ok(n1.raft!.status().commit >= ccIndex, 'the leader committed the change');
  c.crash(n1, 'before telling anyone the change committed');
  c.dropQueued(() => true);
  for (const n of [n2, n3]) {
    const st = n.raft!.status();
    assert.equal(st.lastIndex, ccIndex, `${n.id} holds the change`);
    assert.ok(st.commit < ccIndex, `${n.id} does not know it committed`);
  }

  // n2 is elected with the change in its log, neither known committed nor applied.
  n2.raft!.campaign();
  c.stabilize((m) => m.type !== MessageType.App); // votes flow; the new leader's first append is held back
  const elected = n2.raft!.status();
  assert.equal(elected.state, StateType.Leader);
  assert.ok(elected.applied < ccIndex);
  assert.equal(refusal(n2, addLearner(5n)), 'ConfChangePending', 'refused while the earlier change is not even known committed');

  // The new leader's empty entry reaches n3 and is acknowledged: now everything up
  // to the election index is committed on n2, but not yet applied.
  deliver(c, (m) => m.type === MessageType.App && m.to === 3n);
  c.handleReady(n3);
  deliver(c, (m) => m.type === MessageType.AppResp && m.to === 2n);
  const committed = n2.raft!.status();
  assert.ok(committed.commit > ccIndex, 'the new leader committed past the change');
  assert.ok(committed.applied < ccIndex, 'but has not applied it');
  assert.equal(refusal(n2, addLearner(5n)), 'ConfChangePending', 'refused while committed but not applied');

  // Applying (the Ready that hands over the committed entries) lifts the block.
  while (n2.raft!.hasReady()) c.handleReady(n2);
  const applied = n2.raft!.status();
  assert.ok(applied.applied >= ccIndex);
  assert.deepEqual(applied.conf.learners, [4n], 'the earlier change is in force on the new leader');
  assert.equal(refusal(n2, addLearner(5n)), undefined, 'accepted once applied');

  // And it goes through: learner 5 joins and catches up like the others.
  c.restart(n1);
  c.stabilize();
  for (let i = 0; i < 30; i++) {
    c.tick();
    c.stabilize();
  }
  const conf = n2.raft!.status().conf;
  assert.deepEqual(conf.learners, [4n, 5n]);
  const target = n2.app.applied;
  for (const id of [1n, 2n, 3n, 4n, 5n]) assert.equal(c.node(id).app.applied, target, `n${id} caught up`);
});

// ---- defects the simulator found in the core, now fixed: regression tests that must pass ----

test('a restarted single voter serves no read index below an entry a learner has already applied', () => {
  const c = quietCluster(1);
  const n1 = c.node(1);
  c.tick();
  c.stabilize();
  assert.equal(n1.raft!.status().state, StateType.Leader, 'a single voter elects itself');
  assert.equal(refusal(n1, addLearner(2n)), undefined);
  c.stabilize();
  const n2 = c.node(2);

  // n1 commits x at once (it is the only voter) and tells the learner, then crashes
  // before its own commit index reaches the disk.
  c.propose(n1, new TextEncoder().encode('x'));
  c.handleReady(n1);
  const x = n1.raft!.status().commit;
  c.handleReady(n1, 'after-send');
  c.stabilize();
  assert.ok(n2.app.applied >= x, 'the learner applied x: a client may have seen it');

  // Restarted, n1 elects itself; its commit index is below x until its new term's
  // entry commits, and a read served from it then misses x.
  c.restart(n1);
  c.tick();
  assert.equal(n1.raft!.status().state, StateType.Leader);
  c.readIndex(n1);
  c.stabilize(); // throws linearizable-read if the read is served below x
});

test('after a leader removes itself, the remaining voter elects a leader', () => {
  const c = quietCluster(2);
  const [n1, n2] = [c.node(1), c.node(2)];
  n1.raft!.campaign();
  c.stabilize();
  assert.equal(n1.raft!.status().state, StateType.Leader);

  // n1 proposes its own removal, then (still leader until it applies it) one more
  // entry, which n2 never receives.
  assert.equal(refusal(n1, { type: 'remove', nodeId: 1n, context: new Uint8Array(0) }), undefined);
  const removal = n1.raft!.status().lastIndex;
  c.handleReady(n1);
  c.propose(n1, new TextEncoder().encode('late'));
  c.handleReady(n1);
  c.dropQueued((m) => m.type === MessageType.App && m.entries.some((e) => e.index > removal));
  deliver(c, (m) => m.type === MessageType.App);
  c.handleReady(n2);
  deliver(c, (m) => m.type === MessageType.AppResp);
  while (n1.raft!.hasReady()) c.handleReady(n1);
  assert.ok(!n1.raft!.status().conf.voters.includes(1n), 'n1 applied its removal');
  // The append that would tell n2 the removal committed is lost.
  c.dropQueued(() => true);
  assert.ok(n2.raft!.status().commit < removal, 'n2 does not know the removal committed');

  // n2 still counts n1 as a voter, and n1 would not vote for n2 (its log is longer).
  // The core keeps n1 leading until n2 holds its whole log and the commit; then n1
  // steps down and n2, alone in its configuration, elects itself.
  for (let i = 0; i < 200 && n2.seenState !== StateType.Leader; i++) {
    c.tick();
    c.stabilize();
  }
  assert.equal(n2.seenState, StateType.Leader, `n2 is still ${n2.seenState} after 200 ticks (n1 is ${n1.seenState})`);
});
