// `npm run bench -- raft [--seconds S] [--batches 1,64,1024]`: committed entries per
// second through the Raft core alone: 3 nodes in memory, no I/O, every message
// delivered at once. A batch is the number of proposals handed to the leader per
// Ready cycle (what the server's group commit does with concurrent clients).
import Table from 'cli-table3';
import { EntryType, RawNode, StateType, bootstrapState, type Message, type NodeId, type RaftConfig } from '../src/raft/index.js';
import { Rng } from '../test/sim/rng.js';

const seededRandom = (seed: number): (() => number) => {
  const r = new Rng(seed);
  return () => r.next();
};

interface Result {
  batch: number;
  entries: number;
  cycles: number;
  seconds: number;
  /** Messages the three nodes sent while those entries committed. */
  messages: number;
}

function measure(batch: number, seconds: number): Result {
  const ids: NodeId[] = [1n, 2n, 3n];
  const boot = bootstrapState(ids.map((id) => ({ id, context: new Uint8Array(0) })));
  const nodes = new Map<NodeId, RawNode>();
  for (const id of ids) {
    const config: RaftConfig = {
      id,
      electionTick: 10,
      heartbeatTick: 1,
      random: seededRandom(Number(id)),
      maxSizePerMsg: 1 << 20,
      maxInflightMsgs: 256,
      preVote: true,
      checkQuorum: true,
      readOnly: 'safe',
    };
    nodes.set(id, new RawNode(config, { hardState: { ...boot.hardState }, snapshot: boot.snapshot, entries: boot.entries.slice() }));
  }
  const leader = nodes.get(1n)!;
  let committed = 0;
  let messages = 0;
  const queue: Message[] = [];

  /** Ready cycles until nothing moves: "persist" (nothing to do), send, apply, advance. */
  const drive = (): void => {
    for (;;) {
      let moved = false;
      for (const r of nodes.values()) {
        while (r.hasReady()) {
          const rd = r.ready();
          for (const m of rd.messages) queue.push(m);
          for (const m of rd.messagesAfterPersist) queue.push(m);
          messages += rd.messages.length + rd.messagesAfterPersist.length;
          if (r === leader) for (const e of rd.committedEntries) if (e.type === EntryType.Normal && e.data.length > 0) committed++;
          r.advance(rd);
          moved = true;
        }
      }
      if (queue.length === 0 && !moved) return;
      const batchOfMsgs = queue.splice(0);
      for (const m of batchOfMsgs) nodes.get(m.to)!.step(m);
    }
  };

  drive();
  leader.campaign();
  drive();
  if (leader.status().state !== StateType.Leader) throw new Error('bench: node 1 did not become leader');

  const payload = new Uint8Array(16).fill(7);
  const snapshotData = new Uint8Array(0);
  let cycles = 0;
  let sinceCompact = 0;
  committed = 0;
  messages = 0;
  const started = performance.now();
  const deadline = started + seconds * 1000;
  while (performance.now() < deadline) {
    for (let burst = 0; burst < 16; burst++) {
      for (let i = 0; i < batch; i++) leader.propose(payload);
      drive();
      cycles++;
      sinceCompact += batch;
    }
    if (sinceCompact >= 20000) {
      // Keep the in-memory logs bounded, as the server does after each snapshot.
      for (const r of nodes.values()) {
        const applied = r.status().applied;
        r.compact(applied, snapshotData);
      }
      sinceCompact = 0;
    }
  }
  const secs = (performance.now() - started) / 1000;
  return { batch, entries: committed, cycles, seconds: secs, messages };
}

export function run(args: string[]): Promise<void> {
  let seconds = 2;
  let batches = [1, 64, 1024];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--seconds') seconds = Number(args[++i]);
    else if (args[i] === '--batches') batches = args[++i].split(',').map(Number);
    else {
      console.error('usage: npm run bench -- raft [--seconds S] [--batches 1,64,1024]');
      process.exit(2);
    }
  }
  if (!(seconds > 0) || batches.some((b) => !Number.isInteger(b) || b < 1)) {
    console.error('--seconds must be positive and --batches positive integers');
    process.exit(2);
  }
  console.log(`Raft core alone: 3 nodes in memory, no I/O, messages delivered at once; ${seconds}s per batch size`);
  const table = new Table({
    head: ['batch (proposals/cycle)', 'committed entries/s', 'ready cycles/s', 'µs per entry', 'messages per entry'],
    style: { head: [], border: [] },
  });
  for (const b of batches) {
    measure(b, Math.min(0.3, seconds)); // warm up the JIT
    const r = measure(b, seconds);
    const eps = r.entries / r.seconds;
    table.push([
      String(b),
      Math.round(eps).toLocaleString('en-US'),
      Math.round(r.cycles / r.seconds).toLocaleString('en-US'),
      (1e6 / eps).toFixed(2),
      (r.messages / r.entries).toFixed(2),
    ]);
  }
  console.log(table.toString());
  return Promise.resolve();
}
