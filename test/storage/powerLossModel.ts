// The power-loss model on one member. A real member runs a workload; at cut
// points it is frozen (SIGSTOP) and its data dir copied: that is the page cache
// at the cut. From each cut, states a power loss can leave are generated
// (powerLossStates.ts) and a member is started on each. Every restart must start,
// serve every write acknowledged before the cut, and take a new write. Seeded: a
// case replays from (seed, case).
//
// One state is not a single member's but a leader's in a cluster: kv.db ahead of
// the log's last entry. The single member stands in for it by losing synced
// records below kv.db's applied index (clusterPowerLossModel.ts runs three members).
// There the writes it must serve are those its kv.db holds: a member answers once
// an entry is applied, and holds its latest applies uncommitted for up to MEMBER_KV_OPTIONS.commitDelayMs, so
// the rest were durable only in the records the stand-in lost (in a cluster, also
// on the followers that acknowledged them).
import fs from 'node:fs';
import path from 'node:path';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { freePorts } from '../support/ports.js';
import { seeded } from './fixtures.js';
import {
  chooseState,
  describeState,
  key,
  logTail,
  materialize,
  memberIdOf,
  kvKeysOf,
  recordCut,
  spawnMember,
  value,
  waitServing,
  type Category,
  type MemberCut,
  type MemberState,
} from './powerLossStates.js';

export { CATEGORIES, type Category } from './powerLossStates.js';

/** One frozen moment of the running member. */
export interface Cut extends MemberCut {
  /** Keys whose put was acknowledged before the freeze. */
  acked: number;
}

export interface CaptureResult {
  root: string;
  cuts: Cut[];
  member: { name: string; advertisePeerUrl: string; memberHex: string };
}

const TIMING = { heartbeatMs: 20, electionMs: 100 };

/**
 * Runs a member through `keys` puts (8 clients) and freezes it every `every`
 * acknowledgements; `planted` plants a bug (failpoint ack-before-fsync).
 */
export async function capture(root: string, opts: { keys: number; every: number; snapshotCount: number; planted?: boolean }): Promise<CaptureResult> {
  fs.mkdirSync(root, { recursive: true });
  // Seeded by the (random) temp dir: two runs of this file at once (other checkouts) take different ports.
  const [peer, client] = await freePorts(2, root);
  const dataDir = path.join(root, 'live');
  const journal = path.join(root, 'sync-journal');
  const peerUrl = `http://127.0.0.1:${peer}`;
  const clientUrl = `http://127.0.0.1:${client}`;
  const faults = [`sync-journal:${journal}`, ...(opts.planted ? ['ack-before-fsync'] : [])];
  const proc = spawnMember({
    name: 'm1',
    dataDir,
    listenPeerUrl: peerUrl,
    advertisePeerUrl: peerUrl,
    clientUrl,
    extra: ['--initial-cluster', `m1=${peerUrl}`, '--snapshot-count', String(opts.snapshotCount)],
    fault: faults.join(','),
    logFile: path.join(root, 'live.log'),
    ...TIMING,
  });
  const cuts: Cut[] = [];
  try {
    await waitServing(proc, clientUrl);
    const c = new EtcdClient({ endpoints: clientUrl, commandTimeoutMs: 10_000 });
    let next = 0;
    let acked = 0;
    const ackedSet = new Set<number>();
    let freezing: Promise<void> = Promise.resolve();
    const freeze = () => {
      // Only keys acknowledged before the stop count as promised.
      const promised = [...ackedSet];
      proc.kill('SIGSTOP');
      try {
        const dir = path.join(root, `cut-${cuts.length}`);
        const cut = recordCut(dataDir, journal, dir, path.basename(dir), path.join(root, 'scratch'));
        fs.writeFileSync(path.join(dir, 'acked.json'), JSON.stringify(promised));
        cuts.push({ ...cut, acked: promised.length });
      } finally {
        proc.kill('SIGCONT');
      }
    };
    const worker = async () => {
      while (next < opts.keys) {
        const i = next++;
        await c.put(key(i), value(i));
        await freezing;
        ackedSet.add(i);
        // The stop happens here, before any other acknowledgement is counted.
        if (++acked % opts.every === 0) freezing = new Promise((resolve) => resolve(freeze()));
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    await freezing;
    c.close();
  } finally {
    proc.kill('SIGKILL');
  }
  return { root, cuts, member: { name: 'm1', advertisePeerUrl: peerUrl, memberHex: memberIdOf(dataDir).toString(16) } };
}

/** A state to restart from: which cut, which kv.db, where the log ends and how. */
export interface Case extends MemberState {
  n: number;
  cut: Cut;
}

/** Generates `count` cases for `category`, seeded. */
export function generate(cap: CaptureResult, category: Category, count: number, seed: number, first: number): Case[] {
  const out: Case[] = [];
  const memberId = BigInt('0x' + cap.member.memberHex);
  for (let attempt = 0; out.length < count && attempt < count * 50; attempt++) {
    const rnd = seeded(seed * 1_000_003 + first + attempt);
    const cut = cap.cuts[Math.floor(rnd() * cap.cuts.length)];
    const s = chooseState(cap.cuts, cut, category, rnd, memberId, { leaderStandIn: true });
    if (s) out.push({ ...s, n: first + out.length, cut });
  }
  return out;
}

export interface CaseResult {
  c: Case;
  error?: string;
}

/** Restarts a member on the case's state and checks it. */
export async function runCase(cap: CaptureResult, c: Case, dir: string, ports: [number, number], seed: number): Promise<CaseResult> {
  materialize(c, dir, seeded(seed * 7919 + c.n));
  const clientUrl = `http://127.0.0.1:${ports[1]}`;
  const logFile = `${dir}.log`;
  const p = spawnMember({
    name: 'm1',
    dataDir: dir,
    listenPeerUrl: `http://127.0.0.1:${ports[0]}`,
    advertisePeerUrl: cap.member.advertisePeerUrl,
    clientUrl,
    extra: [],
    fault: '',
    logFile,
    ...TIMING,
  });
  const exited = new Promise<void>((r) => p.on('exit', () => r()));
  try {
    await waitServing(p, clientUrl);
    const client = new EtcdClient({ endpoints: clientUrl, commandTimeoutMs: 10_000 });
    try {
      const r = await client.range('pl/', { rangeEnd: 'pl0' });
      const got = new Map(r.kvs.map((kv) => [kv.key.toString(), kv.value.toString()]));
      const acked = JSON.parse(fs.readFileSync(path.join(c.cut.dir, 'acked.json'), 'utf8')) as number[];
      // Synced records lost (the leader's stand-in): what the cut's kv.db holds is what is left.
      const inKv = c.cutAt < c.cut.synced ? kvKeysOf(c.kvFrom, `${dir}.kv-copy`, 'pl/', 'pl0') : undefined;
      const lost = acked.filter((i) => (!inKv || inKv.has(key(i))) && got.get(key(i)) !== value(i));
      if (lost.length > 0) return { c, error: `${lost.length} acknowledged writes lost, e.g. ${key(lost[0])}` };
      await client.put('pl/after-restart', 'x');
    } finally {
      client.close();
    }
    return { c };
  } catch (e) {
    return { c, error: `${(e as Error).message}; log: ${logTail(logFile)}` };
  } finally {
    p.kill('SIGKILL');
    await exited;
  }
}

export function describeCase(c: Case): string {
  return `case ${c.n}: ${describeState(c)} [${c.categories.join(', ')}]`;
}
