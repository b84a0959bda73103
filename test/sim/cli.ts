// `npm run sim -- --seeds 100000 [--steps N] [--nodes N] [--seed S] [--plant-bug NAME]`
// Runs seeds S..S+N-1; stops at the first failure, prints it with the trace of the
// last steps and the one command that replays it, and exits 1.
import { PLANTED_BUGS, type PlantedBug } from '../../src/raft/index.js';
import type { CheckLevel } from './invariants.js';
import { addStats, emptyStats, runSeed, type RunOptions, type RunResult } from './run.js';
import type { Stats } from './cluster.js';

const USAGE = `usage: npm run sim -- [--seeds N] [--seed S] [--steps N] [--nodes N] [--voters N]
                      [--plant-bug ${PLANTED_BUGS.join('|')}]
                      [--checks all|end-to-end] [--literal-learner-rule] [--no-liveness]
                      [--etcd-removal] [--snapshots transport|core] [--async-write P]
                      [--trace LINES] [--verbose] [--keep-going]
  --seeds N      how many seeds to run, starting at --seed (default 1 when --seed is given, else 1000)
  --seed S       first seed (default 1)
  --steps N      ticks per seed before the liveness phase (default 1000)
  --nodes N      most members running at once (default 5; 3 founding voters)
  --keep-going   run every seed; list the failing ones at the end
  --checks       'end-to-end' leaves out the implementation-level checks
                 (persist-before-send, commit-current-term)
  --literal-learner-rule  flag any vote granted by a node that is a learner in its own
                 configuration, even to a candidate that has applied its promotion
  --etcd-removal a removed member stops 1-2 election timeouts after applying its own
                 removal (as etcd does) instead of once no other member lists it
  --snapshots    what a snapshot message carries: 'transport' (default, as the server
                 does: the sender's current state) or 'core' (the data given to compact())
  --async-write P  per Ready with an fsync, the chance its write stays in flight while
                 the node goes on (default: drawn per seed from 0, 0.5, 1)`;

interface Args {
  seeds: number;
  seed: number;
  steps: number;
  nodes: number;
  voters: number;
  plantedBug?: PlantedBug;
  checks: CheckLevel;
  liveness: boolean;
  literalLearnerRule: boolean;
  etcdRemoval: boolean;
  snapshots: 'transport' | 'core';
  asyncWrite?: number;
  trace: number;
  verbose: boolean;
  keepGoing: boolean;
}

function parse(argv: string[]): Args {
  const a: Args = {
    seeds: 0,
    seed: 1,
    steps: 1000,
    nodes: 5,
    voters: 3,
    checks: 'all',
    liveness: true,
    literalLearnerRule: false,
    etcdRemoval: false,
    snapshots: 'transport',
    trace: 60,
    verbose: false,
    keepGoing: false,
  };
  let seedGiven = false;
  const int = (flag: string, v: string | undefined): number => {
    const n = Number(v);
    if (v === undefined || !Number.isSafeInteger(n) || n < 0) fail(`${flag} needs a non-negative integer, got ${v ?? 'nothing'}`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const f = argv[i];
    switch (f) {
      case '--seeds':
        a.seeds = int(f, argv[++i]);
        break;
      case '--seed':
        a.seed = int(f, argv[++i]);
        seedGiven = true;
        break;
      case '--steps':
        a.steps = int(f, argv[++i]);
        break;
      case '--nodes':
        a.nodes = int(f, argv[++i]);
        break;
      case '--voters':
        a.voters = int(f, argv[++i]);
        break;
      case '--trace':
        a.trace = int(f, argv[++i]);
        break;
      case '--plant-bug': {
        const b = argv[++i];
        if (!PLANTED_BUGS.includes(b as PlantedBug)) fail(`unknown planted bug ${b ?? ''}; one of ${PLANTED_BUGS.join(', ')}`);
        a.plantedBug = b as PlantedBug;
        break;
      }
      case '--checks': {
        const c = argv[++i];
        if (c !== 'all' && c !== 'end-to-end') fail(`--checks is all or end-to-end, got ${c ?? 'nothing'}`);
        a.checks = c;
        break;
      }
      case '--literal-learner-rule':
        a.literalLearnerRule = true;
        break;
      case '--etcd-removal':
        a.etcdRemoval = true;
        break;
      case '--snapshots': {
        const v = argv[++i];
        if (v !== 'transport' && v !== 'core') fail(`--snapshots is transport or core, got ${v ?? 'nothing'}`);
        a.snapshots = v;
        break;
      }
      case '--async-write': {
        const v = Number(argv[++i]);
        if (!(v >= 0 && v <= 1)) fail(`--async-write is a probability from 0 to 1, got ${argv[i] ?? 'nothing'}`);
        a.asyncWrite = v;
        break;
      }
      case '--no-liveness':
        a.liveness = false;
        break;
      case '--keep-going':
        a.keepGoing = true;
        break;
      case '--verbose':
        a.verbose = true;
        break;
      case '-h':
      case '--help':
        console.log(USAGE);
        process.exit(0);
        break;
      default:
        fail(`unknown argument ${f}`);
    }
  }
  if (a.seeds === 0) a.seeds = seedGiven ? 1 : 1000;
  if (a.nodes < 1 || a.voters < 1) fail('--nodes and --voters must be at least 1');
  return a;
}

function fail(msg: string): never {
  console.error(`${msg}\n${USAGE}`);
  process.exit(2);
}

export function printStats(s: Stats, seeds: number): void {
  const rows: [string, number][] = [
    ['ticks', s.ticks],
    ['messages sent', s.messagesSent],
    ['messages dropped', s.messagesDropped],
    ['messages duplicated', s.messagesDuplicated],
    ['partitions', s.partitions],
    ['crashes (of which mid-Ready)', s.crashes],
    ['restarts', s.restarts],
    ['membership changes applied', s.confChangesApplied],
    ['members added / removed', s.membersAdded],
    ['leader changes', s.leaderChanges],
    ['entries committed', s.entriesCommitted],
    ['snapshots sent', s.snapshotsSent],
    ['snapshots applied', s.snapshotsApplied],
    ['compactions', s.compactions],
    ['reads served', s.readsServed],
    ['leader transfers / forced campaigns', s.transfers],
    ['appends / acks folded, commits unacked', s.appendsFolded],
    ['liveness checks passed', s.livenessPassed],
  ];
  const extra: Record<string, string> = {
    'members added / removed': `${s.membersAdded} / ${s.membersRemoved}`,
    'leader transfers / forced campaigns': `${s.transfers} / ${s.campaigns}`,
    'crashes (of which mid-Ready)': `${s.crashes} (${s.crashesMidReady})`,
    'appends / acks folded, commits unacked': `${s.appendsFolded} / ${s.acksFolded} / ${s.commitOnlyUnacked}`,
  };
  console.log(`exercised over ${seeds} seed${seeds === 1 ? '' : 's'}:`);
  for (const [k, v] of rows) {
    console.log(`  ${k.padEnd(38)} ${extra[k] ?? v}`);
  }
}

export function printFailure(r: RunResult, o: RunOptions): void {
  const f = r.failure!;
  console.log(`\nFAILED seed ${r.seed} at tick ${f.tick}: ${f.invariant}`);
  console.log(`  ${f.detail}`);
  console.log(`  profile: ${r.profile}`);
  if (o.plantedBug) console.log(`  planted bug: ${o.plantedBug}`);
  console.log(`\nlast ${f.trace.length} events:`);
  for (const l of f.trace) console.log(`  ${l}`);
  if (f.stack) console.log(`\n${f.stack}`);
  console.log(`\nreplay: ${f.replay}`);
}

function main(): void {
  const a = parse(process.argv.slice(2));
  const total = emptyStats();
  const started = performance.now();
  let lastReport = started;
  let ran = 0;
  const failed: string[] = [];
  for (let seed = a.seed; seed < a.seed + a.seeds; seed++) {
    const o: RunOptions = {
      seed,
      steps: a.steps,
      nodes: a.nodes,
      voters: a.voters,
      plantedBug: a.plantedBug,
      checks: a.checks,
      liveness: a.liveness,
      literalLearnerRule: a.literalLearnerRule,
      removedShutdown: a.etcdRemoval ? 'etcd' : 'when-applied',
      snapshotSource: a.snapshots,
      asyncWrite: a.asyncWrite,
      traceLines: a.trace,
    };
    const r = runSeed(o);
    ran++;
    addStats(total, r.stats);
    if (a.verbose)
      console.log(`seed ${seed}: ${r.ok ? 'ok' : r.failure!.invariant} (${r.stats.leaderChanges} leaders, ${r.stats.entriesCommitted} committed) ${r.profile}`);
    if (!r.ok && a.keepGoing) {
      failed.push(`seed ${seed}: ${r.failure!.invariant} at t=${r.failure!.tick}: ${r.failure!.detail}`);
    } else if (!r.ok) {
      const secs = (performance.now() - started) / 1000;
      printFailure(r, o);
      console.log(`(${ran} seed${ran === 1 ? '' : 's'} in ${secs.toFixed(1)}s)`);
      process.exit(1);
    }
    const now = performance.now();
    if (now - lastReport > 5000) {
      lastReport = now;
      console.error(`... ${ran}/${a.seeds} seeds, ${(ran / ((now - started) / 1000)).toFixed(1)} seeds/s`);
    }
  }
  const secs = (performance.now() - started) / 1000;
  printStats(total, ran);
  if (failed.length > 0) {
    console.log(`\n${failed.length} of ${ran} seeds failed:`);
    for (const f of failed) console.log(`  ${f}`);
    process.exit(1);
  }
  console.log(
    `\n${ran} seeds x ${a.steps} steps, ${a.nodes} nodes${a.plantedBug ? `, planted bug ${a.plantedBug}` : ''}: all passed in ${secs.toFixed(1)}s (${(ran / secs).toFixed(1)} seeds/s)`,
  );
}

main();
