// The power-loss model on a 3-member cluster: a power cut that hits the whole
// rack at once. Three real members run a put workload; at cut points all three
// are frozen (SIGSTOP, one after the other, microseconds apart) and each data dir
// is copied: the page cache of each at the cut. Each member journals its own log
// fsyncs (failpoint `sync-journal`), so its durable prefix is known. From each
// cut, every member gets its own power-loss state (powerLossStates.ts, as in the
// single-member model), and the three are started together, each on its own copy,
// on the peer URLs they were created with. The cluster must come back whole:
// every member starts and stays up, a leader is elected, every write acknowledged
// before the cut is served by a linearizable read through each member, a new write
// commits, and HashKV agrees on all three at one revision once they have caught up.
// Seeded: a case replays from (seed, case) against the same capture.
//
// kv.db above the log's last index does not arise here from the cut alone: a
// Lifeboat leader applies only entries that were in an earlier Ready, and the
// driver takes the next Ready only after that one's fsync returned (the leader
// also counts itself toward a commit only then). So kv.db is never ahead of the
// member's own durable log; the capture measures it (`aheadOfDurableLog`). etcd's
// leader can get there (it applies what its followers made durable while its own
// fsync runs), and the restart fix is for that state, so the cases of that kind
// simulate it on the member that led at the cut: its log also loses synced
// records below its kv.db's applied index, as long as both followers' durable logs
// hold every entry it applied or made durable (a commit without the leader needs
// both of them; the writes it acknowledged are among those entries).
import fs from 'node:fs';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { MEMBER_KV_OPTIONS } from '../../src/server/apply.js';
import { freePorts } from '../support/ports.js';
import { seeded } from './fixtures.js';
import {
  CATEGORIES,
  chooseState,
  describeState,
  durableLastIndex,
  key,
  logTail,
  materialize,
  memberIdOf,
  recordCut,
  spawnMember,
  value,
  waitServing,
  type Category,
  type MemberCut,
  type MemberState,
} from './powerLossStates.js';

/** How long the workload pauses before every other cut: past the members' commit of held applies. */
const QUIET_MS = MEMBER_KV_OPTIONS.commitDelayMs + 100;

export interface ClusterMember {
  name: string;
  peerUrl: string;
  clientUrl: string;
  memberHex: string;
}

/** One frozen moment of the whole cluster. */
export interface ClusterCut {
  dir: string;
  /** Keys whose put was acknowledged before the freeze (listed in `dir`/acked.json). */
  acked: number;
  /** The members' cuts, in the order of ClusterCapture.members. */
  members: MemberCut[];
  /** The member that last said it was leader before the freeze ('' if none was seen yet). */
  leader: string;
}

export interface ClusterCapture {
  root: string;
  members: ClusterMember[];
  cuts: ClusterCut[];
}

/** Faster than a member's defaults, slow enough for three members and the test on two cores. */
const TIMING = { heartbeatMs: 25, electionMs: 250 };
const NAMES = ['m1', 'm2', 'm3'];

function stopped(p: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (p.exitCode !== null || p.signalCode !== null) resolve();
    else p.on('exit', () => resolve());
  });
}

/** Whether a client URL is served by some other process's member (a port taken meanwhile), and which. */
async function answeringAsOthers(members: ClusterMember[], clients: EtcdClient[]): Promise<string | undefined> {
  const ids = await Promise.all(clients.map((cl) => cl.status().then((st) => st.header.memberId.toString(16))));
  const i = ids.findIndex((id, k) => id !== members[k].memberHex);
  return i < 0
    ? undefined
    : `${members[i].clientUrl} answers as member ${ids[i]}, not ${members[i].name} (${members[i].memberHex}): another process took the port`;
}

/**
 * Runs a 3-member cluster through `keys` puts (8 clients, spread over the
 * members) and freezes all three every `every` acknowledgements; `planted` plants
 * a bug in every member (failpoint ack-before-fsync).
 */
export async function captureCluster(root: string, opts: { keys: number; every: number; snapshotCount: number; planted?: boolean }): Promise<ClusterCapture> {
  fs.mkdirSync(root, { recursive: true });
  // Seeded by the (random) temp dir: two runs of this file at once (other checkouts) take different ports.
  const ports = await freePorts(6, `${root}-cluster`);
  const members: ClusterMember[] = NAMES.map((name, i) => ({
    name,
    peerUrl: `http://127.0.0.1:${ports[2 * i]}`,
    clientUrl: `http://127.0.0.1:${ports[2 * i + 1]}`,
    memberHex: '',
  }));
  const initial = members.map((m) => `${m.name}=${m.peerUrl}`).join(',');
  const live = (m: ClusterMember) => path.join(root, 'live', m.name);
  const journal = (m: ClusterMember) => path.join(root, `sync-journal-${m.name}`);
  const procs = members.map((m) =>
    spawnMember({
      name: m.name,
      dataDir: live(m),
      listenPeerUrl: m.peerUrl,
      advertisePeerUrl: m.peerUrl,
      clientUrl: m.clientUrl,
      extra: ['--initial-cluster', initial, '--initial-cluster-state', 'new', '--snapshot-count', String(opts.snapshotCount)],
      fault: [`sync-journal:${journal(m)}`, ...(opts.planted ? ['ack-before-fsync'] : [])].join(','),
      logFile: path.join(root, `live-${m.name}.log`),
      ...TIMING,
    }),
  );
  const cuts: ClusterCut[] = [];
  const clients: EtcdClient[] = [];
  let polling = true;
  try {
    await Promise.all(procs.map((p, i) => waitServing(p, members[i].clientUrl, 30_000)));
    members.forEach((m) => (m.memberHex = memberIdOf(live(m)).toString(16)));
    for (const m of members) clients.push(new EtcdClient({ endpoints: m.clientUrl, commandTimeoutMs: 10_000 }));
    const strangers = await answeringAsOthers(members, clients);
    if (strangers) throw new Error(strangers);
    // Who leads, polled (a cut must not wait for an answer): only for the cases' descriptions.
    let leader = '';
    const poll = (async () => {
      const watcher = new EtcdClient({ endpoints: members.map((m) => m.clientUrl), commandTimeoutMs: 2_000 });
      try {
        for (let i = 0; polling && i < 10_000; i++) {
          const id = await watcher.status().then(
            (s) => s.leader.toString(16),
            () => '',
          );
          leader = members.find((m) => m.memberHex === id)?.name ?? leader;
          await new Promise((r) => setTimeout(r, 100));
        }
      } finally {
        watcher.close();
      }
    })();
    let next = 0;
    let acked = 0;
    const ackedSet = new Set<number>();
    let freezing: Promise<unknown> = Promise.resolve();
    const freeze = () => {
      // Only keys acknowledged before the stop count as promised.
      const promised = [...ackedSet];
      for (const p of procs) p.kill('SIGSTOP');
      try {
        const dir = path.join(root, `cut-${cuts.length}`);
        const memberCuts = members.map((m) =>
          recordCut(live(m), journal(m), path.join(dir, m.name), `${path.basename(dir)}/${m.name}`, path.join(root, 'scratch')),
        );
        fs.writeFileSync(path.join(dir, 'acked.json'), JSON.stringify(promised));
        cuts.push({ dir, acked: promised.length, members: memberCuts, leader });
      } finally {
        for (const p of procs) p.kill('SIGCONT');
      }
    };
    const worker = async (k: number) => {
      while (next < opts.keys) {
        const i = next++;
        await clients[k % clients.length].put(key(i), value(i));
        await freezing;
        ackedSet.add(i);
        // The stop happens here, before any other acknowledgement is counted. Every other cut
        // comes after a quiet moment: kv.db has committed what the members applied (they hold
        // applies up to MEMBER_KV_OPTIONS.commitDelayMs), while the hard state that moved the commit is still unsynced.
        if (++acked % opts.every === 0) {
          const quiet = cuts.length % 2 === 1 ? new Promise((r) => setTimeout(r, QUIET_MS)) : Promise.resolve();
          freezing = quiet.then(freeze);
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: 8 }, (_, k) => worker(k)));
      await freezing;
    } finally {
      polling = false;
      await poll;
    }
  } finally {
    for (const c of clients) c.close();
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map(stopped));
  }
  const capture = { root, members, cuts };
  fs.writeFileSync(path.join(root, 'capture.json'), JSON.stringify(capture, null, 1));
  return capture;
}

/** A capture written by captureCluster (kept with LIFEBOAT_KEEP_TEST_DIRS), to replay its cases. */
export function loadCapture(root: string): ClusterCapture {
  return JSON.parse(fs.readFileSync(path.join(root, 'capture.json'), 'utf8')) as ClusterCapture;
}

/**
 * How far kv.db got ahead of the log's durable last index at the cuts (the most
 * over every member of every cut; 0 or less: never), and how many member cuts were
 * ahead of it.
 */
export function aheadOfDurableLog(cap: ClusterCapture): { most: number; cuts: number; where: string } {
  let most = -Infinity;
  let ahead = 0;
  let where = '';
  for (const cut of cap.cuts) {
    cut.members.forEach((mc, i) => {
      const { durable } = durableLastIndex(mc, BigInt('0x' + cap.members[i].memberHex));
      if (mc.applied - durable > most) {
        most = mc.applied - durable;
        where = `${mc.label}${cut.leader === cap.members[i].name ? ' (leader)' : ''}: applied ${mc.applied}, durable last index ${durable}`;
      }
      if (mc.applied > durable) ahead++;
    });
  }
  return { most, cuts: ahead, where };
}

/** One case: a cut, and a power-loss state for each member. */
export interface ClusterCase {
  n: number;
  cut: ClusterCut;
  states: MemberState[];
  /** Every kind that some member's state shows. */
  categories: Category[];
  /** The member whose state stands in for etcd's leader (kv.db above its durable log), if any. */
  standIn?: string;
}

/**
 * Generates `count` cases that show `category`, seeded. Each member gets a state
 * of that kind if its cut allows one, else any state: a power cut treats every
 * member differently. "kv above last index" is simulated on the cut's leader (see
 * above).
 */
export function generateCluster(cap: ClusterCapture, category: Category, count: number, seed: number, first: number): ClusterCase[] {
  const out: ClusterCase[] = [];
  const ids = cap.members.map((m) => BigInt('0x' + m.memberHex));
  const cutsOf = cap.members.map((_, i) => cap.cuts.map((c) => c.members[i]));
  for (let attempt = 0; out.length < count && attempt < count * 50; attempt++) {
    const rnd = seeded(seed * 1_000_003 + first + attempt);
    const cut = cap.cuts[Math.floor(rnd() * cap.cuts.length)];
    const states: MemberState[] = [];
    const standIn = category === 'kv above last index' ? cut.leader : undefined;
    for (let i = 0; i < cap.members.length; i++) {
      const choose = (k: Category | undefined, leaderStandIn = false) => chooseState(cutsOf[i], cut.members[i], k, rnd, ids[i], { leaderStandIn });
      let s: MemberState | undefined;
      if (standIn === cap.members[i].name) {
        // etcd's leader: what it applied, and every entry it had made durable, is durable on both
        // followers. Its acknowledged writes are among those entries but not all in its kv.db: a
        // member answers once an entry is applied, and commits kv.db up to MEMBER_KV_OPTIONS.commitDelayMs later.
        s = choose(category, true);
        const followers = cut.members.flatMap((mc, j) => (j === i ? [] : [durableLastIndex(mc, ids[j]).durable]));
        const ownDurable = durableLastIndex(cut.members[i], ids[i]).durable;
        if (s && Math.max(s.kvFrom.applied, ownDurable) > Math.min(...followers)) s = undefined;
      } else s = choose(category) ?? choose(undefined);
      if (!s) break;
      states.push(s);
    }
    if (states.length < cap.members.length) continue;
    const categories = CATEGORIES.filter((k) => states.some((s) => s.categories.includes(k)));
    if (!categories.includes(category)) continue;
    out.push({ n: first + out.length, cut, states, categories, ...(standIn ? { standIn } : {}) });
  }
  return out;
}

export interface ClusterCaseResult {
  c: ClusterCase;
  error?: string;
  /** How long the cluster took to serve again, in ms. */
  tookMs: number;
}

/** Starts the three members on the case's states (in `dir`) and checks the cluster. */
export async function runClusterCase(cap: ClusterCapture, c: ClusterCase, dir: string, seed: number): Promise<ClusterCaseResult> {
  const t0 = Date.now();
  fs.rmSync(dir, { recursive: true, force: true });
  const dirs = cap.members.map((m) => path.join(dir, m.name));
  c.states.forEach((s, i) => materialize(s, dirs[i], seeded(seed * 7919 + c.n * cap.members.length + i)));
  const logs = cap.members.map((m) => path.join(dir, `${m.name}.log`));
  const procs = cap.members.map((m, i) =>
    spawnMember({
      name: m.name,
      dataDir: dirs[i],
      listenPeerUrl: m.peerUrl,
      advertisePeerUrl: m.peerUrl,
      clientUrl: m.clientUrl,
      extra: [],
      fault: '',
      logFile: logs[i],
      ...TIMING,
    }),
  );
  const clients: EtcdClient[] = [];
  const fail = (error: string): ClusterCaseResult => ({ c, error, tookMs: Date.now() - t0 });
  try {
    await Promise.all(procs.map((p, i) => waitServing(p, cap.members[i].clientUrl, 30_000)));
    for (const m of cap.members) clients.push(new EtcdClient({ endpoints: m.clientUrl, commandTimeoutMs: 10_000 }));
    const strangers = await answeringAsOthers(cap.members, clients);
    if (strangers) return fail(strangers);
    const acked = JSON.parse(fs.readFileSync(path.join(c.cut.dir, 'acked.json'), 'utf8')) as number[];
    for (const [i, client] of clients.entries()) {
      const r = await client.range('pl/', { rangeEnd: 'pl0' });
      const got = new Map(r.kvs.map((kv) => [kv.key.toString(), kv.value.toString()]));
      const lost = acked.filter((k) => got.get(key(k)) !== value(k));
      if (lost.length > 0) return fail(`${lost.length} acknowledged writes lost (read through ${cap.members[i].name}), e.g. ${key(lost[0])}`);
    }
    const rev = (await clients[c.n % clients.length].put('pl/after-restart', `case ${c.n}`)).header.revision;
    // Once every member has applied the new write: HashKV at one revision on all three.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const revs = await Promise.all(
        clients.map((cl) =>
          cl.status().then(
            (s) => s.header.revision,
            () => -1,
          ),
        ),
      );
      if (revs.every((r) => r >= rev)) break;
      if (Date.now() > deadline) return fail(`the members did not all apply revision ${rev} within 30 s: ${revs.join(', ')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    const hashes = await Promise.all(clients.map((cl) => cl.hashKV(rev).then((h) => h.hash)));
    if (hashes.some((h) => h !== hashes[0])) return fail(`HashKV differs at revision ${rev}: ${hashes.join(', ')}`);
    const dead = procs.findIndex((p) => p.exitCode !== null || p.signalCode !== null);
    if (dead >= 0) return fail(`${cap.members[dead].name} exited (${procs[dead].exitCode ?? procs[dead].signalCode})`);
    return { c, tookMs: Date.now() - t0 };
  } catch (e) {
    return fail((e as Error).message);
  } finally {
    for (const cl of clients) cl.close();
    for (const p of procs) p.kill('SIGKILL');
    await Promise.all(procs.map(stopped));
  }
}

/** The case and, for a failure, each member's last log lines. */
export function describeClusterCase(c: ClusterCase, withLogsIn?: string): string {
  const members = c.states.map((s, i) => {
    const name = NAMES[i];
    const leader = c.cut.leader === name ? (c.standIn === name ? " (leader at the cut, standing in for etcd's)" : ' (leader at the cut)') : '';
    const log = withLogsIn ? `; log: ${logTail(path.join(withLogsIn, `${name}.log`))}` : '';
    return `${name}${leader}: ${describeState(s)}${log}`;
  });
  return `case ${c.n}: ${path.basename(c.cut.dir)}, ${c.cut.acked} acknowledged [${c.categories.join(', ')}]; ${members.join('; ')}`;
}
