// A real etcd 3.4 filled the way the migration tests need: several revisions per
// key, deletes and re-creates, a multi-op transaction (sub revisions), large values
// (overflow pages), a physical compaction, and leases with keys. Plus the helpers
// the tests share: the seeded PRNG, etcdctl's JSON with uint64s kept exact, and a
// restored Lifeboat member started as a child process.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { Etcd3 } from 'etcd3';
import { EtcdCluster } from '../support/etcdCluster.js';
import { seeded } from '../storage/fixtures.js';
import { freePorts } from '../support/ports.js';
import { etcdctl, requireTool, ROOT, stopProcess, waitFor } from '../support/tools.js';

/** The tests' one seeded PRNG (a failing run replays from its seed). */
export { seeded as rng };

/** etcdctl -w json prints uint64/int64 IDs as bare numbers above 2^53: keep them as strings. */
export function etcdJson<T = any>(text: string): T {
  return JSON.parse(
    text.replace(/("(?:lease|ID|cluster_id|member_id|hash|revision|raft_term|compact_revision|create_revision|mod_revision|version)":)(-?\d+)/g, '$1"$2"'),
  ) as T;
}

export interface FillOptions {
  keys: number;
  rounds: number;
  seed: number;
  /** Compact (physically) after this many rounds; 0 = never. */
  compactAfter: number;
  leases: number;
  keysPerLease: number;
  bigValues: number[];
}

export interface FillResult {
  /** Lease IDs granted (decimal) with their TTL. */
  leases: Array<{ id: string; ttl: number }>;
  compactedAt: number;
}

async function inChunks<T>(items: T[], size: number, fn: (t: T) => unknown): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

const keyName = (i: number) => `k/${String(i).padStart(5, '0')}`;

/** Fills the etcd at `endpoint` (host:port). */
export async function fillEtcd(endpoint: string, o: FillOptions): Promise<FillResult> {
  const rand = seeded(o.seed);
  const client = new Etcd3({ hosts: `http://${endpoint}`, dialTimeout: 5000 });
  const value = (round: number, i: number) => `v${round}-${i}-${'x'.repeat(Math.floor(rand() * 180))}`;
  const ids = Array.from({ length: o.keys }, (_, i) => i);
  let compactedAt = 0;
  try {
    for (let round = 0; round < o.rounds; round++) {
      const values = ids.map((i) => value(round, i));
      await inChunks(ids, 200, (i) => client.put(keyName(i)).value(values[i]));
      if (o.compactAfter > 0 && round + 1 === o.compactAfter) {
        // Deletes and a re-create before the compaction too: tombstones at or below it are dropped.
        await inChunks(
          ids.filter((i) => i % 13 === 0),
          200,
          (i) => client.delete().key(keyName(i)),
        );
        await client.put(keyName(13)).value('recreated before compaction');
        const rev = Number((await client.get('k/').exec()).header.revision);
        const r = await etcdctl('--endpoints', endpoint, 'compact', String(rev), '--physical');
        if (r.code !== 0) throw new Error(`etcdctl compact failed: ${r.stderr}`);
        compactedAt = rev;
      }
    }
    // Deletes, some keys re-created (a new generation), a prefix delete.
    await inChunks(
      ids.filter((i) => i % 10 === 0),
      200,
      (i) => client.delete().key(keyName(i)),
    );
    await inChunks(
      ids.filter((i) => i % 20 === 0),
      200,
      (i) => client.put(keyName(i)).value(`again-${i}`),
    );
    await inChunks(
      Array.from({ length: 50 }, (_, i) => i),
      50,
      (i) => client.put(`tmp/${i}`).value('gone soon'),
    );
    await client.delete().prefix('tmp/');
    // One transaction: several changes at one main revision (sub 0..n).
    await client
      .if('txn/guard', 'Version', '==', 0)
      .then(client.put('txn/a').value('1'), client.put('txn/b').value('2'), client.put('txn/c').value('3'), client.delete().key(keyName(1)))
      .commit();
    // Values larger than a page: overflow pages.
    for (const [n, size] of o.bigValues.entries()) await client.put(`big/${n}`).value(Buffer.alloc(size, 65 + n));
    const leases: FillResult['leases'] = [];
    for (let l = 0; l < o.leases; l++) {
      const ttl = 600 + l * 60;
      const lease = client.lease(ttl, { autoKeepAlive: false });
      const id = await lease.grant();
      await inChunks(
        Array.from({ length: o.keysPerLease }, (_, j) => j),
        50,
        (j) => lease.put(`lease/${l}/${j}`).value(`held by ${id}`),
      );
      // one leased key overwritten without a lease
      await client.put(`lease/${l}/0`).value('no lease now');
      lease.release();
      leases.push({ id, ttl });
    }
    return { leases, compactedAt };
  } finally {
    client.close();
  }
}

/** A one-member etcd; fails at once, in one line naming the Debian package, when etcd or etcdctl is missing. */
export async function startEtcd(portSeed: string): Promise<EtcdCluster> {
  try {
    requireTool('etcd');
    requireTool('etcdctl');
  } catch (err) {
    (err as Error).stack = `Error: ${(err as Error).message}`;
    throw err;
  }
  return EtcdCluster.start({ size: 1, portSeed });
}

export interface RunningMember {
  proc: ChildProcess;
  client: string;
  stop(): Promise<void>;
}

/** Starts `lifeboat server` on a restored data dir (one member) and waits until it is healthy. */
export async function startRestoredMember(dataDir: string, name: string, peerUrl: string, portSeed: string): Promise<RunningMember> {
  const [clientPort] = await freePorts(1, portSeed);
  const client = `127.0.0.1:${clientPort}`;
  const log: string[] = [];
  const proc = spawn(
    process.execPath,
    [
      path.join(ROOT, 'bin', 'run.js'),
      'server',
      '--name',
      name,
      '--data-dir',
      dataDir,
      '--listen-peer-urls',
      peerUrl,
      '--initial-advertise-peer-urls',
      peerUrl,
      '--listen-client-urls',
      `http://${client}`,
      '--advertise-client-urls',
      `http://${client}`,
      '--initial-cluster',
      `${name}=${peerUrl}`,
      '--heartbeat-interval',
      '50',
      '--election-timeout',
      '500',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  proc.stderr.on('data', (d: Buffer) => log.push(d.toString()));
  const stop = () => stopProcess(proc);
  try {
    await waitFor(
      `restored member ${name} at ${client} to be healthy`,
      async () => {
        if (proc.exitCode !== null) throw new Error(`exited with ${proc.exitCode}: ${log.join('').trim().split('\n').slice(-3).join(' | ')}`);
        return (await etcdctl('--endpoints', client, '--dial-timeout', '1s', 'endpoint', 'health')).code === 0;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { proc, client, stop };
}
