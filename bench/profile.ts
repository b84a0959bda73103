// `npm run bench -- profile [--seconds S] [--clients N] [--op put|get|serializable-get|check-perf-s|m|l]`:
// a 3-member Lifeboat cluster whose members run under `node --cpu-prof`, N clients of
// puts (or linearizable or serializable gets of the keys the puts wrote, or etcdctl
// check perf with its own clients and connections to every member) against it,
// then a clean stop (the profile is written at exit) and where the leader's CPU went,
// its worker threads' included.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LifeboatCluster } from '../test/support/lifeboatCluster.js';
import { cleanupAll, onCleanup } from './cleanup.js';
import { summarize } from './cpuProfileSummary.js';
import { checkPerf, type PerfLoad } from './checkPerf.js';
import { runLoad } from './loadGenerator.js';

const OPS = ['put', 'get', 'serializable-get', 'check-perf-s', 'check-perf-m', 'check-perf-l'];

export async function run(args: string[]): Promise<void> {
  let seconds = 15;
  let clients = 100;
  let opName = 'put';
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--seconds') seconds = Number(args[++i]);
    else if (args[i] === '--clients') clients = Number(args[++i]);
    else if (args[i] === '--op' && OPS.includes(args[i + 1])) opName = args[++i];
    else {
      console.error(`usage: npm run bench -- profile [--seconds S] [--clients N] [--op ${OPS.join('|')}]`);
      process.exit(2);
    }
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-profile-'));
  // --cpu-prof is refused in NODE_OPTIONS: it goes on each member's node command line.
  const cluster = await LifeboatCluster.start('bench-profile', 3, [], { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`], defaultTiming: true });
  onCleanup(() => cluster.stopAll());
  let leaderPid = 0;
  try {
    const leader = await cluster.waitForLeader();
    leaderPid = leader.proc?.pid ?? 0;
    const endpoints = [leader.client, ...cluster.endpoints().filter((e) => e !== leader.client)];
    const put = { kind: 'put', keyPrefix: 'bench/put/', keySpace: 10_000 } as const;
    const load = (op: Parameters<typeof runLoad>[0]['op'], durationMs: number) => runLoad({ endpoints, clients, workers: 4, op, valueSize: 256, durationMs });
    if (opName.startsWith('check-perf-')) {
      // check perf runs its own 60 s, with its clients spread over every member.
      const r = await checkPerf(cluster.endpoints(), opName.slice(-1) as PerfLoad);
      console.log(`etcdctl check perf --load=${r.load}: ${r.pass ? 'PASS' : 'FAIL'}, ${r.writesPerSecond} writes/s`);
    } else {
      // Gets read keys the puts wrote: a few seconds of puts first.
      if (opName !== 'put') await load(put, 3000);
      const op =
        opName === 'put' ? put : { kind: 'get' as const, serializable: opName === 'serializable-get', keyPrefix: put.keyPrefix, keySpace: put.keySpace };
      const r = await load(op, seconds * 1000);
      console.log(`${clients} clients, ${seconds} s: ${Math.round(r.perSecond)} ${opName}s/s, p50 ${r.p50Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms`);
    }
    // SIGTERM: a clean exit, so each member writes its profile.
    for (const m of cluster.running()) await cluster.kill(m, 'SIGTERM');
  } finally {
    await cleanupAll();
  }
  summarizeDir(dir, leaderPid);
}

function summarizeDir(dir: string, leaderPid: number): void {
  // Node writes one file per thread, CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile: thread 0 is
  // the member's main thread, the others its worker threads (checkpoints, hashes, snapshots), shown together.
  const files = fs.readdirSync(dir).filter((x) => x.endsWith('.cpuprofile'));
  const threadOf = (f: string) => /\.(\d+)\.(\d+)\.\d+\.cpuprofile$/.exec(f);
  for (const f of files.filter((x) => threadOf(x)?.[2] === '0')) {
    const pid = threadOf(f)?.[1];
    const s = summarize(path.join(dir, f));
    const role = pid === String(leaderPid) ? 'leader' : 'follower';
    console.log(`\n${f} (${role}): ${(s.total / 1000).toFixed(1)} s sampled on the main thread`);
    for (const a of s.byArea) console.log(`  ${a.percent.toFixed(1).padStart(5)}%  ${a.name}`);
    const workers = files.filter((x) => threadOf(x)?.[1] === pid && threadOf(x)?.[2] !== '0');
    if (workers.length > 0) {
      const w = summarize(workers.map((x) => path.join(dir, x)));
      const busy = (x: typeof s) => x.total - (x.byArea.find((a) => a.name === 'idle')?.ms ?? 0);
      console.log(
        `  worker threads (${workers.length} profiles): ${(busy(w) / 1000).toFixed(2)} s busy, against ${(busy(s) / 1000).toFixed(1)} s on the main thread; by area, idle left out:`,
      );
      for (const a of w.byArea.filter((x) => x.name !== 'idle').slice(0, 8)) console.log(`  ${((100 * a.ms) / busy(w)).toFixed(1).padStart(5)}%  ${a.name}`);
    }
    if (role !== 'leader') continue;
    console.log('  top functions (self time):');
    for (const a of s.byFunction) console.log(`  ${a.percent.toFixed(1).padStart(5)}%  ${a.name}`);
  }
  console.log(`\nprofiles kept in ${dir}`);
}
