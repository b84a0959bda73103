// The two systems under test behind one interface, built on the test helpers
// that already start, wait for and stop real etcd and Lifeboat clusters.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { silenceTlsServerNameWarning } from '../src/cli/warnings.js';
import { EtcdClient } from '../src/client/etcdClient.js';
import type { TlsOptions } from '../src/client/tls.js';
import { makeCerts, type TestCerts } from '../test/support/certs.js';
import { EtcdCluster } from '../test/support/etcdCluster.js';
import { BIN, LifeboatCluster } from '../test/support/lifeboatCluster.js';
import { TlsCluster } from '../test/tls/tlsCluster.js';
import { freePorts } from '../test/support/ports.js';
import { run, waitFor, type RunResult } from '../test/support/tools.js';
import { onCleanup } from './cleanup.js';
import { stallsInLog, type StallRecord } from './stalls.js';

export type SystemName = 'etcd' | 'lifeboat';

export interface Learner {
  /** host:port of the learner's client URL */
  endpoint: string;
  pid: number;
}

export interface BenchCluster {
  readonly name: SystemName;
  /** with TLS: the CA and client certificate to connect with */
  readonly tls?: TlsOptions;
  /** client endpoints as host:port (https://host:port with TLS), the leader's first */
  endpoints(): Promise<string[]>;
  /** pids of the three founding members */
  pids(): number[];
  /** the founding members' /metrics URLs */
  metricsUrls(): string[];
  /** every event-loop stall the founding members logged so far (Lifeboat's watchdog; none for etcd) */
  stalls(): StallRecord[];
  /** `<tool> snapshot save FILE` against one endpoint */
  snapshotSave(endpoint: string, file: string): Promise<RunResult>;
  /** `<tool> snapshot restore FILE` into a new data dir (not started) */
  snapshotRestore(file: string, dataDir: string): Promise<RunResult>;
  /** member add --learner, then start it: timing starts just before the add */
  addLearner(): Promise<Learner>;
  stop(): Promise<void>;
}

const SNAPSHOT_TIMEOUT_MS = 600_000;
// Port blocks are chosen by seed; with the pid in it, benches run at the same time
// on one machine (several worktrees) do not take each other's learner ports.
/** Restored members are never started: a peer URL is only recorded. */
const RESTORE_PEER = 'http://127.0.0.1:2380';

/** A CA, member and client certificates for a bench run with --tls, removed at the end of the run. */
export async function benchCerts(): Promise<TestCerts> {
  silenceTlsServerNameWarning();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-bench-certs-'));
  onCleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
  return makeCerts(dir);
}

/** The CA and client certificate of `tls` as command-line flags, which etcdctl and lifeboat name alike (none without). */
export function cliTlsArgs(tls?: TlsOptions): string[] {
  return tls?.caFile && tls.certFile && tls.keyFile ? ['--cacert', tls.caFile, '--cert', tls.certFile, '--key', tls.keyFile] : [];
}

/** What a client connects with to members started with `certs`: their CA and the test client certificate. */
export function clientTls(certs: TestCerts): TlsOptions {
  return { caFile: certs.ca, certFile: certs.clientCert, keyFile: certs.clientKey };
}

/** The endpoints with the leader's first: a single client then talks to the leader on both systems. */
async function leaderFirst(endpoints: string[], tls?: TlsOptions): Promise<string[]> {
  const statuses = await Promise.all(
    endpoints.map(async (e) => {
      const c = new EtcdClient({ endpoints: [e], tls, dialTimeoutMs: 3000, commandTimeoutMs: 5000 });
      try {
        const s = await c.status();
        return s.leader !== 0n && s.leader === s.header.memberId;
      } catch {
        return false;
      } finally {
        c.close();
      }
    }),
  );
  const i = statuses.indexOf(true);
  return i <= 0 ? endpoints : [endpoints[i], ...endpoints.filter((_, j) => j !== i)];
}

async function addLearnerMember(endpoints: string[], name: string, peerUrl: string, tls?: TlsOptions): Promise<string> {
  const c = new EtcdClient({ endpoints, tls, dialTimeoutMs: 3000, commandTimeoutMs: 10_000 });
  let initial: string;
  try {
    const added = await c.memberAdd([peerUrl], { learner: true });
    // The new member has no name yet; it is known by its peer URL.
    initial = added.members.map((m) => `${m.peerURLs.includes(peerUrl) ? name : m.name}=${m.peerURLs[0]}`).join(',');
  } finally {
    c.close();
  }
  // A joining member checks the member list of whichever peer it asks first: wait
  // until every member has applied the add, or a lagging one turns it away.
  await waitFor(
    `every member to list the learner ${peerUrl}`,
    async () => {
      const lists = await Promise.all(
        endpoints.map(async (e) => {
          const one = new EtcdClient({ endpoints: [e], tls, dialTimeoutMs: 2000, commandTimeoutMs: 5000 });
          try {
            return (await one.memberList()).members.some((m) => m.peerURLs.includes(peerUrl));
          } finally {
            one.close();
          }
        }),
      );
      return lists.every(Boolean);
    },
    { timeoutMs: 30_000, intervalMs: 100 },
  );
  return initial;
}

/** `certs`: client and peer URLs on https://, with client and peer certificate auth. */
export async function startEtcd(certs?: TestCerts): Promise<BenchCluster> {
  const cluster = await EtcdCluster.start({ size: 3, portSeed: `bench-etcd-${process.pid}`, tls: certs, peerTls: !!certs });
  const unregister = onCleanup(() => cluster.stop());
  const founders = [...cluster.members];
  const tls = certs && clientTls(certs);
  return {
    name: 'etcd',
    tls,
    endpoints: () =>
      leaderFirst(
        founders.map((m) => cluster.endpointOf(m)),
        tls,
      ),
    pids: () => founders.map((m) => m.proc?.pid ?? 0),
    // etcd serves /metrics on its client URLs.
    metricsUrls: () => founders.map((m) => `${cluster.endpointOf(m).replace(/^(?!https?:\/\/)/, 'http://')}/metrics`),
    stalls: () => [],
    snapshotSave: (endpoint, file) =>
      run('etcdctl', ['--endpoints', endpoint, ...cluster.tlsArgs(), '--command-timeout=600s', 'snapshot', 'save', file], {
        env: { ...process.env, ETCDCTL_API: '3' },
        timeoutMs: SNAPSHOT_TIMEOUT_MS,
      }),
    snapshotRestore: (file, dataDir) =>
      run(
        'etcdctl',
        [
          'snapshot',
          'restore',
          file,
          '--data-dir',
          dataDir,
          '--name',
          'restored',
          '--initial-cluster',
          `restored=${RESTORE_PEER}`,
          '--initial-advertise-peer-urls',
          RESTORE_PEER,
        ],
        {
          env: { ...process.env, ETCDCTL_API: '3' },
          timeoutMs: SNAPSHOT_TIMEOUT_MS,
        },
      ),
    async addLearner() {
      const [clientPort, peerPort] = await cluster.freePorts();
      const peerUrl = `${certs ? 'https' : 'http'}://127.0.0.1:${peerPort}`;
      const initial = await addLearnerMember(
        founders.map((m) => cluster.endpointOf(m)),
        'learner',
        peerUrl,
        tls,
      );
      const env = { ETCD_NAME: 'learner', ETCD_INITIAL_CLUSTER: initial, ETCD_INITIAL_ADVERTISE_PEER_URLS: peerUrl, ETCD_INITIAL_CLUSTER_STATE: 'existing' };
      const m = await cluster.startJoining('learner', clientPort, peerPort, env, { learner: true });
      return { endpoint: cluster.endpointOf(m), pid: m.proc?.pid ?? 0 };
    },
    async stop() {
      await cluster.stop();
      unregister();
    },
  };
}

/** Where a build keeps the helper that starts its members with TLS (dist/ relative to its root). */
export const TLS_CLUSTER_JS = path.join('dist', 'test', 'tls', 'tlsCluster.js');

/**
 * `before`: the root of an older build (its own dist/ and bin/), run instead of this one.
 * `certs`: client and peer URLs on https://, with client and peer certificate auth
 * (the build's own TlsCluster; an older build must have one).
 */
export async function startLifeboat(before?: string, certs?: TestCerts): Promise<BenchCluster> {
  const build = before
    ? ((await import(path.join(before, 'dist', 'test', 'support', 'lifeboatCluster.js'))) as { LifeboatCluster: typeof LifeboatCluster; BIN: string })
    : { LifeboatCluster, BIN };
  const seed = `bench-lifeboat-${process.pid}`;
  // Every member serves /metrics (event-loop delay, stalls, memory) on a URL of its own.
  const metricsPorts = await freePorts(8, `${seed}-metrics`);
  const metricsUrls = new Map<string, string>();
  const withMetrics = (c: LifeboatCluster) => {
    const spawn = c.spawn.bind(c);
    c.spawn = (m, args, opts) => {
      let url = metricsUrls.get(m.name);
      if (!url) {
        const port = metricsPorts.shift();
        if (port === undefined) throw new Error('out of metrics ports');
        metricsUrls.set(m.name, (url = `${certs ? 'https' : 'http'}://127.0.0.1:${port}`));
      }
      return spawn(m, [...args, '--listen-metrics-urls', url], opts);
    };
  };
  let secure: TlsCluster | undefined;
  let cluster: LifeboatCluster;
  if (certs) {
    const tlsBuild = before ? ((await import(path.join(before, TLS_CLUSTER_JS))) as { TlsCluster: typeof TlsCluster }) : { TlsCluster };
    secure = await tlsBuild.TlsCluster.create(seed, certs, 3);
    cluster = secure.c;
    cluster.timing = [];
    withMetrics(cluster);
    try {
      await secure.startFounders('m1', 'm2', 'm3');
    } catch (e) {
      await cluster.stopAll();
      throw e;
    }
  } else {
    // As LifeboatCluster.start, with etcd's heartbeat and election timeout, which etcd runs with here (the tests' are faster).
    cluster = await build.LifeboatCluster.create(seed, 3);
    cluster.timing = [];
    withMetrics(cluster);
    for (let i = 1; i <= 3; i++) cluster.members.push(cluster.define(`m${i}`));
    const initial = cluster.initialCluster();
    for (const m of cluster.members) cluster.spawn(m, ['--initial-cluster', initial, '--initial-cluster-state', 'new']);
    try {
      await cluster.waitStarted(3);
    } catch (e) {
      await cluster.stopAll();
      throw e;
    }
  }
  const unregister = onCleanup(() => cluster.stopAll());
  const founders = [...cluster.members];
  const tls = certs && clientTls(certs);
  const lifeboat = (args: string[]) => run(process.execPath, [build.BIN, ...args], { env: { ...process.env, NO_COLOR: '1' }, timeoutMs: SNAPSHOT_TIMEOUT_MS });
  return {
    name: 'lifeboat',
    tls,
    endpoints: () =>
      leaderFirst(
        founders.map((m) => m.client),
        tls,
      ),
    pids: () => founders.map((m) => m.proc?.pid ?? 0),
    metricsUrls: () => founders.map((m) => `${metricsUrls.get(m.name) ?? ''}/metrics`),
    stalls: () => founders.flatMap((m) => stallsInLog(m.name, m.log)),
    snapshotSave: (endpoint, file) => lifeboat(['snapshot', 'save', file, '--endpoints', endpoint, ...cliTlsArgs(tls), '--command-timeout', '600s']),
    snapshotRestore: (file, dataDir) =>
      lifeboat(['snapshot', 'restore', file, '--data-dir', dataDir, '--name', 'restored', '--initial-advertise-peer-urls', RESTORE_PEER]),
    async addLearner() {
      const m = (secure ?? cluster).define('learner');
      const initial = await addLearnerMember(
        founders.map((f) => f.client),
        m.name,
        m.peerUrl,
        tls,
      );
      cluster.spawn(m, [...(secure?.tlsArgs(m) ?? []), '--initial-cluster', initial, '--initial-cluster-state', 'existing']);
      return { endpoint: m.client, pid: m.proc?.pid ?? 0 };
    },
    async stop() {
      await cluster.stopAll();
      unregister();
    },
  };
}
