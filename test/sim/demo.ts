// `npm run demo`: a visible, deterministic run of a 5-node cluster through the
// simulator's harness: an election, some writes, the leader crashes, a new leader,
// more writes and a compaction, the old leader returns and catches up by snapshot,
// then a partition cuts the new leader off with a minority, the majority elects
// another, and after healing everyone converges on the same state.
import { StateType } from '../../src/raft/index.js';
import { Cluster, QUIET, type SimNode } from './cluster.js';
import { node } from './trace.js';

const c = new Cluster({
  seed: 2024,
  voters: 5,
  core: { electionTick: 10, heartbeatTick: 2, preVote: true, checkQuorum: true, maxSizePerMsg: 1 << 20, maxInflightMsgs: 64 },
  faults: QUIET,
  checks: 'all',
  onEvent: (t, text) => {
    // The founders' bootstrap configuration is applied at t=0; one line says it all.
    if (t === 0 && text.startsWith('conf change')) return;
    say(text, t);
  },
});

function say(text: string, t = c.t): void {
  console.log(`[tick ${String(t).padStart(3)}] ${text}`);
}

function runUntil(what: string, done: () => boolean, limit = 300): void {
  for (let i = 0; i < limit; i++) {
    if (done()) return;
    c.tick();
    c.settle();
  }
  if (!done()) throw new Error(`demo: ${what} did not happen within ${limit} ticks`);
}

const up = (): SimNode[] => c.members.filter((n) => n.up);
const leaderOf = (nodes: SimNode[]): SimNode | undefined => nodes.find((n) => n.seenState === StateType.Leader);

let writes = 0;
function write(leader: SimNode, count: number): void {
  const first = leader.raft!.status().lastIndex + 1;
  for (let i = 0; i < count; i++) c.propose(leader, new TextEncoder().encode(`put key${++writes}=value${writes}`));
  c.settle();
  const last = leader.raft!.status().lastIndex;
  runUntil('commit', () => leader.app.applied >= last);
  say(`${count} writes committed and applied on ${node(leader.id)} (indexes ${first}..${last})`);
}

say('5 founding voters n1..n5 start from the same bootstrap configuration');
c.settle();
runUntil('first election', () => c.leader() !== undefined);
const first = c.leader()!;
write(first, 5);

c.crash(first, '');
runUntil('second election', () => leaderOf(up()) !== undefined);
const second = leaderOf(up())!;
write(second, 5);
for (const n of up()) c.compact(n);
say(`the running nodes snapshot their state and compact their logs through index ${second.app.applied}`);
write(second, 3);

c.restart(first);
const target = second.app.applied;
runUntil('old leader catches up', () => first.app.applied >= target);
say(`${node(first.id)} caught up to index ${first.app.applied} (${c.stats.snapshotsApplied} snapshot${c.stats.snapshotsApplied === 1 ? '' : 's'} installed)`);

const others = c.members.filter((n) => n !== second && n !== first);
const minority = [second.id, first.id];
c.partition([minority, others.map((n) => n.id)]);
runUntil('majority elects a leader', () => leaderOf(others) !== undefined);
const third = leaderOf(others)!;
write(third, 4);
runUntil('cut-off leader steps down', () => second.seenState !== StateType.Leader);

c.heal();
const final = third.app.applied;
runUntil('everyone converges', () => c.members.every((n) => n.up && n.app.applied >= final));
const hashes = new Set(c.members.map((n) => `${n.app.applied}:${n.app.hash.toString(16)}`));
say(`all ${c.members.length} nodes applied index ${final}; state hashes ${hashes.size === 1 ? 'identical' : 'DIFFER'} (${[...hashes][0]})`);
for (const n of c.members) {
  const st = n.raft!.status();
  say(
    `  ${node(n.id)}: ${st.state.padEnd(9)} term ${st.term}, log ${st.firstIndex}..${st.lastIndex}, applied ${n.app.applied}, state ${n.app.hash.toString(16)}`,
  );
}
say(`safety checked all along: ${c.stats.messagesDelivered} messages, ${c.stats.leaderChanges} leaders, ${c.stats.entriesCommitted} entries committed`);
if (hashes.size !== 1) process.exit(1);
