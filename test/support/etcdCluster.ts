// Real etcd clusters for interop tests: members on 127.0.0.1 with free ports,
// data dirs under os.tmpdir(), logs in the cluster's temp dir, every wait bounded,
// and stop() that ends every process this helper started.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, openSync, readFileSync, rmSync, closeSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { TestCerts } from './certs.js';
import { freePorts } from './ports.js';
import { etcdctl, requireEtcdTools, stopProcess, waitFor } from './tools.js';

export interface EtcdMember {
  name: string;
  clientUrl: string;
  peerUrl: string;
  dataDir: string;
  logFile: string;
  /** the arguments it was started with (its "unit"), to start it again as an operator's unit would */
  args: string[];
  proc?: ChildProcess;
}

export interface ClusterOptions {
  size: number;
  /** per-test-file seed for port picking (see ports.ts), e.g. the file's name */
  portSeed: string;
  /** serve clients over TLS with client-certificate auth */
  tls?: TestCerts;
  /** with `tls`: peers too, on https:// with peer certificate auth (the server certificate, good for both ends) */
  peerTls?: boolean;
  /** with `tls`: false serves clients over TLS without asking for their certificates */
  clientCertAuth?: boolean;
  /** more flags for every member, e.g. ['--enable-v2'] */
  extraArgs?: string[];
}

export class EtcdCluster {
  readonly members: EtcdMember[] = [];
  private readonly token = `lifeboat-test-${process.pid}-${Date.now()}`;

  private constructor(
    readonly dir: string,
    private readonly opts: ClusterOptions,
  ) {}

  /** Start a new cluster of `size` members and wait until every member is healthy (30 s). */
  static async start(opts: ClusterOptions): Promise<EtcdCluster> {
    requireEtcdTools();
    const cluster = new EtcdCluster(mkdtempSync(path.join(os.tmpdir(), 'lifeboat-etcd-')), opts);
    try {
      const ports = await freePorts(opts.size * 2, opts.portSeed);
      const scheme = opts.tls ? 'https' : 'http';
      const specs = Array.from({ length: opts.size }, (_, i) => ({
        name: `infra${i + 1}`,
        clientUrl: `${scheme}://127.0.0.1:${ports[2 * i]}`,
        peerUrl: `${opts.tls && opts.peerTls ? 'https' : 'http'}://127.0.0.1:${ports[2 * i + 1]}`,
      }));
      const initialCluster = specs.map((s) => `${s.name}=${s.peerUrl}`).join(',');
      for (const s of specs) {
        cluster.spawnMember(s.name, s.clientUrl, s.peerUrl, [
          '--name',
          s.name,
          '--initial-advertise-peer-urls',
          s.peerUrl,
          '--initial-cluster',
          initialCluster,
          '--initial-cluster-state',
          'new',
          '--initial-cluster-token',
          cluster.token,
          ...(opts.extraArgs ?? []),
        ]);
      }
      await Promise.all(cluster.members.map((m) => cluster.waitReady(m)));
      return cluster;
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  }

  /** Client endpoints as `host:port` (plain) or `https://host:port` (TLS), comma-separated. */
  get endpoints(): string {
    return this.members
      .filter((m) => m.proc)
      .map((m) => this.endpointOf(m))
      .join(',');
  }

  endpointOf(m: EtcdMember): string {
    return this.opts.tls ? m.clientUrl : m.clientUrl.replace(/^http:\/\//, '');
  }

  member(name: string): EtcdMember {
    const m = this.members.find((x) => x.name === name);
    if (!m) throw new Error(`no member ${name}`);
    return m;
  }

  /** TLS flags for etcdctl and lifeboat alike (they share the names). */
  tlsArgs(): string[] {
    const t = this.opts.tls;
    return t ? ['--cacert', t.ca, '--cert', t.clientCert, '--key', t.clientKey] : [];
  }

  /** Two free ports for a member added later: [client, peer]. */
  async freePorts(): Promise<[number, number]> {
    const [c, p] = await freePorts(2, this.opts.portSeed);
    return [c, p];
  }

  /**
   * Start a member that joins the running cluster (phase 2 of a member add),
   * configured through `env` (ETCD_NAME, ETCD_INITIAL_CLUSTER, …) as printed by
   * `member add`, with only the listen/advertise URLs and data dir as flags.
   */
  async startJoining(name: string, clientPort: number, peerPort: number, env: Record<string, string>, opts: { learner: boolean }): Promise<EtcdMember> {
    const scheme = this.opts.tls ? 'https' : 'http';
    const peerScheme = this.opts.tls && this.opts.peerTls ? 'https' : 'http';
    const m = this.spawnMember(name, `${scheme}://127.0.0.1:${clientPort}`, `${peerScheme}://127.0.0.1:${peerPort}`, [], env);
    await this.waitReady(m, opts);
    return m;
  }

  private spawnMember(name: string, clientUrl: string, peerUrl: string, extra: string[], env: Record<string, string> = {}): EtcdMember {
    const dataDir = path.join(this.dir, `${name}.etcd`);
    const logFile = path.join(this.dir, `${name}.log`);
    const tls = this.opts.tls;
    const args = [
      '--data-dir',
      dataDir,
      '--listen-client-urls',
      clientUrl,
      '--advertise-client-urls',
      clientUrl,
      '--listen-peer-urls',
      peerUrl,
      '--logger',
      'zap',
      '--log-outputs',
      'stderr',
      ...(tls ? ['--cert-file', tls.serverCert, '--key-file', tls.serverKey] : []),
      ...(tls && this.opts.clientCertAuth !== false ? ['--client-cert-auth', '--trusted-ca-file', tls.ca] : []),
      ...(tls && this.opts.peerTls
        ? ['--peer-client-cert-auth', '--peer-trusted-ca-file', tls.ca, '--peer-cert-file', tls.serverCert, '--peer-key-file', tls.serverKey]
        : []),
      ...extra,
    ];
    const fd = openSync(logFile, 'a');
    const cleanEnv: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('ETCD')) cleanEnv[k] = v;
    const proc = spawn('etcd', args, { env: { ...cleanEnv, ...env }, stdio: ['ignore', fd, fd] });
    closeSync(fd);
    const m: EtcdMember = { name, clientUrl, peerUrl, dataDir, logFile, args, proc };
    this.members.push(m);
    return m;
  }

  /** Healthy (voters: a linearizable read) or, for a learner, answering Status; 30 s. */
  async waitReady(m: EtcdMember, opts: { learner?: boolean } = {}): Promise<void> {
    await waitFor(
      `etcd member ${m.name} at ${m.clientUrl} to be ${opts.learner ? 'up' : 'healthy'}`,
      async () => {
        if (m.proc && m.proc.exitCode !== null) {
          throw new Error(`etcd ${m.name} exited with code ${m.proc.exitCode}; log tail: ${this.logTail(m)}`);
        }
        const r = await etcdctl(
          '--endpoints',
          m.clientUrl,
          '--dial-timeout',
          '1s',
          '--command-timeout',
          '2s',
          ...this.tlsArgs(),
          'endpoint',
          opts.learner ? 'status' : 'health',
        );
        return r.code === 0;
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; log tail: ${this.logTail(m)}`);
    });
  }

  logTail(m: EtcdMember, lines = 5): string {
    try {
      return readFileSync(m.logFile, 'utf8').trim().split('\n').slice(-lines).join(' | ');
    } catch {
      return '(no log)';
    }
  }

  /** Start a stopped member again with the arguments it first had (wait with waitReady). */
  restart(m: EtcdMember): void {
    if (m.proc) throw new Error(`etcd ${m.name} is running`);
    const fd = openSync(m.logFile, 'a');
    m.proc = spawn('etcd', m.args, { stdio: ['ignore', fd, fd] });
    closeSync(fd);
  }

  /** Stop one member (SIGTERM, then SIGKILL after 10 s). */
  async stopMember(m: EtcdMember): Promise<void> {
    const proc = m.proc;
    if (!proc) return;
    m.proc = undefined;
    await stopProcess(proc);
  }

  /** Stop every member this helper started and remove the temp dir. */
  async stop(): Promise<void> {
    await Promise.all(this.members.map((m) => this.stopMember(m)));
    if (!process.env.LIFEBOAT_KEEP_TEST_DIRS) rmSync(this.dir, { recursive: true, force: true });
  }
}
