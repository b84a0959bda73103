// The fault suite: a 3- or 5-member cluster of real members under a client
// workload, faults from a seeded schedule one at a time (kill -9, SIGSTOP pauses,
// partitions, a full disk, failing fsyncs, membership churn), then every fault
// healed and the history checked: linearizable per key, every member back, and
// HashKV equal on every member at one revision.
import fs from 'node:fs';
import path from 'node:path';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { sleep } from '../../src/common/sleep.js';
import { seeded } from '../storage/fixtures.js';
import { LifeboatCluster, type MemberProc } from '../support/lifeboatCluster.js';
import { check, formatWindow } from './linearizability.js';
import { FAULT_KINDS, Nemesis, type FaultKind } from './nemesis.js';
import { Workload } from './workload.js';

export interface TortureOptions {
  seconds: number;
  seed: number;
  members: number;
  /** A planted bug (a failpoint of the member, e.g. stale-local-reads): the run must then report a violation. */
  planted?: string;
  /** Where a violation's window is written (default: the current directory). */
  outDir?: string;
  kinds?: FaultKind[];
  log?: (line: string) => void;
}

export interface TortureResult {
  faults: Map<FaultKind, number>;
  ops: number;
  opsPerSecQuiet: number;
  opsPerSecFaulty: number;
  verdict: 'ok' | 'violation' | 'unknown';
  explored: number;
  windowFile?: string;
  /** The window's text (also in windowFile), for a log that outlives the run's files. */
  window?: string;
  /** Everything else that went wrong: a member that did not come back, HashKV that differs. */
  problems: string[];
}

function alive(m: MemberProc): boolean {
  return !!m.proc && m.proc.exitCode === null && m.proc.signalCode === null;
}

export async function torture(o: TortureOptions): Promise<TortureResult> {
  const log = o.log ?? ((line: string) => console.log(line));
  const rnd = seeded(o.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
  const c = await LifeboatCluster.create(`torture-${o.seed}`, o.members + 1);
  const t0 = Date.now();
  let workload: Workload | undefined;
  // Each fault also at the workload's clock, the one a violation's window is printed in.
  const faultLog = (line: string) =>
    log(`  ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s fault: ${line}${workload ? ` (workload ${workload.now().toFixed(0)} ms)` : ''}`);
  const nemesis = new Nemesis(c, faultLog);
  const problems: string[] = [];
  const kinds = o.kinds ?? (process.getuid?.() === 0 ? FAULT_KINDS : FAULT_KINDS.filter((k) => k !== 'disk-full'));
  const windows: Array<[number, number]> = [];
  let keep = false;
  let args = new Map<MemberProc, string[]>();
  try {
    for (let i = 0; i < o.members; i++) c.members.push(c.define(`m${i + 1}`));
    if (kinds.includes('disk-full')) await nemesis.prepareDisk(c.members.at(-1)!);
    const initial = c.initialCluster();
    args = new Map<MemberProc, string[]>(c.members.map((m) => [m, ['--initial-cluster', initial, '--initial-cluster-state', 'new']]));
    for (const m of c.members) start(m);
    await c.waitStarted(o.members);

    workload = new Workload({ endpoints: c.endpoints(), clients: 2 * o.members, keys: 6, rnd: seeded(o.seed + 1), opTimeoutMs: 2_000 });
    workload.start();
    const deadline = Date.now() + o.seconds * 1000;
    let turn = 0;
    const order = [...kinds].sort(() => rnd() - 0.5);
    while (Date.now() < deadline - 4_000) {
      await sleep(800 + rnd() * 1200);
      const kind = order[turn++ % order.length];
      const from = workload.now();
      // A fault that cannot be carried out (churn's membership calls refused for too long) ends the run with the members' states.
      await inject(kind).catch((e: Error) => {
        throw new Error(`${kind}: ${e.message}; members: ${memberStates()}`);
      });
      await sleep(1500 + rnd() * 1500);
      nemesis.heal();
      await restartDead();
      windows.push([from, workload.now()]);
      await c.waitForLeader(c.running(), 20_000).catch(() => problems.push(`no leader within 20 s after ${kind}`));
    }
    await workload.stop();
    const end = workload.now();

    // Everything healed: every member must come back and agree.
    nemesis.heal();
    await restartDead();
    const leader = await c.waitForLeader(c.members, 30_000);
    await workload.finalReads(leader.client);
    await checkHashes();

    const verdict = check(workload.history, { timeoutMs: 60_000 });
    let windowFile: string | undefined;
    let window: string | undefined;
    if (verdict.verdict === 'violation') {
      window = `seed ${o.seed}, key ${verdict.key}; client cN talks to member m(N mod ${o.members} + 1)\n${formatWindow(verdict.window ?? [], verdict)}`;
      windowFile = path.join(o.outDir ?? process.cwd(), `torture-violation-seed${o.seed}.txt`);
      fs.writeFileSync(windowFile, `${window}\n`);
      keep = !o.planted;
    }
    const faulty = windows.reduce((n, [a, b]) => n + (b - a), 0);
    const faultyOps = windows.reduce((n, [a, b]) => n + workload!.okBetween(a, b), 0);
    const allOps = workload.okBetween(0, end);
    return {
      faults: nemesis.counts,
      ops: workload.history.length,
      opsPerSecFaulty: faulty > 0 ? (faultyOps * 1000) / faulty : 0,
      opsPerSecQuiet: end - faulty > 0 ? ((allOps - faultyOps) * 1000) / (end - faulty) : 0,
      verdict: verdict.verdict,
      explored: verdict.explored,
      windowFile,
      window,
      problems,
    };
  } finally {
    if (workload) await workload.stop().catch(() => undefined);
    nemesis.heal();
    // A run with problems or an unplanted violation keeps its members' logs and data dirs for a person to read.
    keep ||= problems.length > 0;
    if (keep) process.env.LIFEBOAT_KEEP_TEST_DIRS = '1';
    await c.stopAll();
    nemesis.close();
    if (keep) log(`members' logs and data dirs kept in ${c.dir}`);
  }

  function start(m: MemberProc): void {
    const opts = nemesis.spawnOptions(m);
    if (o.planted) opts.env = { ...opts.env, LIFEBOAT_FAULT: o.planted };
    c.spawn(m, args.get(m)!, opts);
  }

  async function inject(kind: FaultKind): Promise<void> {
    const up = c.members.filter(alive);
    const leader = await c.leader(up).catch(() => undefined);
    const followers = up.filter((m) => m !== leader);
    switch (kind) {
      case 'kill': {
        const m = pick(up);
        await nemesis.kill(m);
        await sleep(300 + rnd() * 1000);
        return restartDead();
      }
      case 'pause':
        return nemesis.pause(pick(up));
      case 'isolate':
        return nemesis.isolate(pick(followers.length > 0 ? followers : up));
      case 'isolate-leader':
        return nemesis.isolate(leader ?? pick(up), 'isolate-leader');
      case 'one-way': {
        const a = leader ?? pick(up);
        return nemesis.oneWay(a, pick(up.filter((m) => m !== a)));
      }
      case 'fsync-eio':
        return nemesis.fsyncEio(pick(up));
      case 'disk-full':
        nemesis.fillDisk();
        return;
      case 'churn':
        return churn(pick(followers.filter((m) => m !== nemesis.diskMember).length > 0 ? followers.filter((m) => m !== nemesis.diskMember) : up));
    }
  }

  async function restartDead(): Promise<void> {
    // A member stopping by itself (a full disk, a failed fsync) is let finish first.
    for (const m of c.members) {
      if (alive(m) && m.log.some((l) => l.includes('"msg":"member stopped on an internal error"'))) await c.exitOf(m, 10_000).catch(() => c.kill(m));
    }
    const started: MemberProc[] = [];
    for (const m of c.members) {
      if (alive(m)) continue;
      if (m.proc?.exitCode === 78) continue; // removed by churn: it comes back through churn
      start(m);
      started.push(m);
    }
    // Bounded: a member that cannot start shows up as a problem, not a hang.
    await sleep(1000);
    for (const m of started) {
      if (!alive(m)) {
        const why = m.log.filter((l) => l.includes('"level":"error"') || l.includes('"level":"fatal"')).slice(-2);
        problems.push(`${m.name} exited with ${m.proc?.exitCode ?? m.proc?.signalCode} at restart: ${(why.length > 0 ? why : m.log.slice(-3)).join(' | ')}`);
      }
    }
  }

  /** Each member, alive or how it ended, with its last warning or error line: what a failed step is read with. */
  function memberStates(): string {
    return c.members
      .map((m) => {
        const state = alive(m) ? 'up' : `exited ${m.proc?.exitCode ?? m.proc?.signalCode ?? 'never started'}`;
        const last = m.log.filter((l) => /"level":"(warn|error|fatal)"/.test(l)).at(-1);
        return `${m.name} ${state}${last ? ` (last: ${last.slice(0, 300)})` : ''}`;
      })
      .join('; ');
  }

  /** Removes a member, wipes it, adds it back as a learner, starts it and promotes it. */
  async function churn(m: MemberProc): Promise<void> {
    nemesis.counts.set('churn', (nemesis.counts.get('churn') ?? 0) + 1);
    faultLog(`churn ${m.name}: remove, re-add as a learner, promote`);
    const id = BigInt('0x' + (await nemesis.idOf(m)));
    const others = c.members.filter((x) => x !== m && alive(x));
    const client = new EtcdClient({ endpoints: c.endpoints(others), commandTimeoutMs: 5_000 });
    try {
      // The strict reconfiguration check wants every voter connected for 5 s: the last fault may have just healed.
      await retry(() => client.memberRemove(id), 'member remove', 40_000);
      await c.exitOf(m, 10_000).catch(async () => c.kill(m));
      nemesis.forget(m);
      fs.rmSync(path.join(m.dataDir, 'member'), { recursive: true, force: true });
      // Removing a voter can move the leadership, and a new leader has known its peers for less than 5 s.
      const added = await retry(() => client.memberAdd([m.peerUrl], { learner: true }), 'member add', 40_000);
      const initial = added.members.map((x) => `${x.name || (x.peerURLs[0] === m.peerUrl ? m.name : '')}=${x.peerURLs[0]}`).join(',');
      args.set(m, ['--initial-cluster', initial, '--initial-cluster-state', 'existing']);
      start(m);
      await retry(() => client.memberPromote(added.member.id), 'member promote', 30_000);
    } finally {
      client.close();
    }
  }

  /** Retries a membership call; one that took more than a few tries says how long in the fault log. */
  async function retry<T>(fn: () => Promise<T>, what: string, timeoutMs = 20_000): Promise<T> {
    const started = Date.now();
    for (let tries = 1; ; tries++) {
      try {
        const out = await fn();
        if (tries > 3) faultLog(`${what} took ${tries} tries, ${((Date.now() - started) / 1000).toFixed(1)} s`);
        return out;
      } catch (e) {
        if (Date.now() - started > timeoutMs)
          throw new Error(`${what}: ${(e as Error).message} (${tries} tries, ${((Date.now() - started) / 1000).toFixed(1)} s)`);
        await sleep(300);
      }
    }
  }

  /** Every member applied the same revision and its HashKV there is the same. */
  async function checkHashes(): Promise<void> {
    const clients = c.members.map((m) => new EtcdClient({ endpoints: m.client, commandTimeoutMs: 5_000 }));
    try {
      const until = Date.now() + 30_000;
      for (;;) {
        const statuses = await Promise.all(clients.map((cl) => cl.status().catch(() => undefined)));
        const revs = statuses.map((s) => s?.header.revision);
        if (revs.every((r) => r !== undefined && r === revs[0])) {
          const hashes = await Promise.all(clients.map((cl) => cl.hashKV(revs[0]).then((h) => h.hash)));
          if (!hashes.every((h) => h === hashes[0])) problems.push(`HashKV differs at revision ${revs[0]}: ${hashes.join(', ')}`);
          return;
        }
        if (Date.now() > until) {
          problems.push(`members did not reach one revision within 30 s: ${revs.join(', ')}`);
          return;
        }
        await sleep(200);
      }
    } finally {
      for (const cl of clients) cl.close();
    }
  }
}
