// Real Lifeboat members as child processes on 127.0.0.1, for tests that drive
// them through etcdctl and the gRPC API. Every wait is bounded, every process
// is stopped by stopAll().
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { lifeboatServerArgv } from '../../src/common/memberCommand.js';
import { KV_PAGE_SIZE } from '../../src/kv/kvSchema.js';
import { freePorts } from './ports.js';
import { requireTool } from './tools.js';

/** The project root, from dist/test/support. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const BIN = path.join(ROOT, 'bin', 'run.js');
/** `lifeboat` with failpoints (test/support/lifeboatWithFaults.ts), for a process a test faults. */
export const FAULTS_BIN = path.join(ROOT, 'dist', 'test', 'support', 'lifeboatWithFaults.js');

/** The entry a process started with `env` runs: the one with failpoints when it sets any. */
export function binFor(env: NodeJS.ProcessEnv | undefined): string {
  return env?.LIFEBOAT_FAULT || env?.LIFEBOAT_FAULT_FILE ? FAULTS_BIN : BIN;
}
/**
 * A --quota-backend-bytes that a few hundred 2 KB puts exceed: an empty kv.db's 11
 * pages and 20 such keys, once compacted and defragmented, fit under it.
 */
export const SMALL_QUOTA_BYTES = 11 * KV_PAGE_SIZE + 224 * 1024;

export interface MemberProc {
  name: string;
  peerUrl: string;
  clientUrl: string;
  client: string;
  dataDir: string;
  /** Advertised peer URL when it differs from the one listened on (e.g. the identity test vector's). */
  advertisePeerUrl?: string;
  proc?: ChildProcess;
  exit?: Promise<number | null>;
  log: string[];
}

export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 30_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v !== undefined && v !== false) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`);
}

/** etcdctl's JSON prints uint64 IDs as numbers above 2^53: read them as decimal strings. */
export function parseEtcdJson<T = any>(text: string): T {
  return JSON.parse(text.replace(/("(?:ID|cluster_id|member_id|leader|memberID|raft_term)":)(\d{16,})/g, '$1"$2"')) as T;
}

/** SIGKILLs a member a playbook started (detached), found through its data dir lock. */
export function killByLock(dataDir: string): void {
  const pid = pidByLock(dataDir);
  if (pid > 0) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** The pid holding a data dir's lock (0 if none). */
export function pidByLock(dataDir: string): number {
  try {
    return (
      Number(
        fs
          .readFileSync(path.join(dataDir, 'member', 'lock'), 'utf8')
          .trim()
          .split(/\s+/)[0],
      ) || 0
    );
  } catch {
    return 0;
  }
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion (bounded). */
export function run(cmd: string, args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv; input?: string } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { env: { ...process.env, ...opts.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => (stdout += d));
    p.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => p.kill('SIGKILL'), opts.timeoutMs ?? 30_000);
    p.on('error', reject);
    p.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    // A child that exits without reading its stdin must not fail the test with EPIPE.
    p.stdin.on('error', () => undefined);
    p.stdin.end(opts.input ?? '');
  });
}

export function etcdctl(endpoints: string | string[], ...args: string[]): Promise<RunResult> {
  requireTool('etcdctl');
  const ep = Array.isArray(endpoints) ? endpoints.join(',') : endpoints;
  return run('etcdctl', ['--endpoints', ep, '--command-timeout=10s', ...args], { env: { ETCDCTL_API: '3' } });
}

/** The keys under `prefix` that `endpoint` serves, once it answers at all (a member just restarted), and those of `acked` among them missing. */
export async function missingKeys(endpoint: string, prefix: string, acked: string[]): Promise<string[]> {
  const served = await waitFor(`${endpoint} to answer`, async () => {
    const r = await etcdctl(endpoint, 'get', prefix, '--prefix', '--keys-only');
    return r.code === 0 ? new Set(r.stdout.split('\n').filter(Boolean)) : undefined;
  });
  return acked.filter((k) => !served.has(k));
}

export function lifeboat(...args: string[]): Promise<RunResult> {
  return run(process.execPath, [BIN, ...args], { timeoutMs: 60_000 });
}

/**
 * The tests' Raft timing: elections within half a second instead of the default
 * second. Members otherwise run with the defaults, etcd's (100 / 1000 ms), as the
 * benchmarks do: etcd runs with them there.
 */
const TEST_TIMING: readonly string[] = ['--heartbeat-interval', '50', '--election-timeout', '500'];

export interface SpawnOptions {
  /** LIFEBOAT_* settings for the member (the test's own LIFEBOAT_* variables are then left out) */
  env?: Record<string, string>;
  /** arguments for node itself, e.g. --cpu-prof */
  nodeArgs?: string[];
  /** a command that runs the member, e.g. ['nsenter', '-t', PID, '-m', '--'] (it must exec, not fork) */
  wrap?: string[];
  /** the entry it runs: by default bin/run.js, or FAULTS_BIN when `env` sets failpoints */
  bin?: string;
}

export class LifeboatCluster {
  readonly members: MemberProc[] = [];
  readonly dir: string;
  private ports: number[] = [];
  /** The members' timing flags; empty for the defaults (`start`'s `defaultTiming`). */
  timing: readonly string[] = TEST_TIMING;

  private constructor(readonly seed: string) {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), `lifeboat-${seed}-`));
  }

  /**
   * Starts `n` founding members m1..mn and waits for a leader. `opts.nodeArgs` go to
   * node itself (e.g. --cpu-prof); `opts.defaultTiming`: the default heartbeat and
   * election timeout instead of the tests' faster ones.
   */
  static async start(seed: string, n: number, extra: string[] = [], opts: SpawnOptions & { defaultTiming?: boolean } = {}): Promise<LifeboatCluster> {
    const c = await LifeboatCluster.create(seed, n);
    if (opts.defaultTiming) c.timing = [];
    for (let i = 0; i < n; i++) c.members.push(c.define(`m${i + 1}`));
    const initial = c.initialCluster();
    for (const m of c.members) c.spawn(m, ['--initial-cluster', initial, '--initial-cluster-state', 'new', ...extra], opts);
    try {
      await c.waitStarted(n);
    } catch (e) {
      // The caller never gets the cluster to stop: stop it here, or its members keep the test process alive.
      await c.stopAll();
      throw e;
    }
    return c;
  }

  /** An empty cluster with ports for `n` members and a few spares, for tests that spawn members themselves. */
  static async create(seed: string, n: number): Promise<LifeboatCluster> {
    requireTool('etcdctl');
    const c = new LifeboatCluster(seed);
    c.ports = await freePorts(2 * (n + 4), seed);
    return c;
  }

  /** Waits for a leader and for `n` members to have published their names ("started"), as after a real start. */
  async waitStarted(n: number): Promise<void> {
    await this.waitForLeader();
    await waitFor('every member to publish its name', async () => {
      const r = await etcdctl(this.endpoints(), 'member', 'list');
      return r.code === 0 && r.stdout.split('\n').filter((l) => l.includes(', started, ')).length === n;
    });
  }

  /** A new member's name and URLs (not started). */
  define(name: string): MemberProc {
    const peer = this.ports.shift();
    const client = this.ports.shift();
    if (peer === undefined || client === undefined) throw new Error('out of test ports');
    return {
      name,
      peerUrl: `http://127.0.0.1:${peer}`,
      clientUrl: `http://127.0.0.1:${client}`,
      client: `127.0.0.1:${client}`,
      dataDir: path.join(this.dir, name),
      log: [],
    };
  }

  initialCluster(members = this.members): string {
    return members.map((m) => `${m.name}=${m.advertisePeerUrl ?? m.peerUrl}`).join(',');
  }

  /** Starts (or restarts) a member process with its flags plus `args` (and `opts.env` added to the environment). */
  spawn(m: MemberProc, args: string[], opts: SpawnOptions = {}): MemberProc {
    return this.spawnServer(m, [...this.memberFlags(m), ...this.timing, ...args], opts);
  }

  /** The member's name, data dir and URLs as `lifeboat server` flags. */
  memberFlags(m: MemberProc): string[] {
    return [
      '--name',
      m.name,
      '--data-dir',
      m.dataDir,
      '--listen-peer-urls',
      m.peerUrl,
      '--initial-advertise-peer-urls',
      m.advertisePeerUrl ?? m.peerUrl,
      '--listen-client-urls',
      m.clientUrl,
      '--advertise-client-urls',
      m.clientUrl,
    ];
  }

  /**
   * `lifeboat server ARGS` exactly as given (no flags added), e.g. a line printed
   * by `member add`, or settings taken from LIFEBOAT_* variables in `env`.
   */
  spawnServer(m: MemberProc, args: string[], opts: SpawnOptions & { cwd?: string } = {}): MemberProc {
    // A second process would lose track of the first, which then outlives stopAll and hangs the test file.
    if (m.proc && m.proc.exitCode === null && m.proc.signalCode === null)
      throw new Error(`${m.name} is still running (pid ${m.proc.pid}); stop it before starting it again`);
    // Settings given as variables: none may leak in from the test's own environment.
    const env: NodeJS.ProcessEnv = { ...process.env };
    if (opts.env && Object.keys(opts.env).length > 0) for (const k of Object.keys(env)) if (k.startsWith('LIFEBOAT_')) delete env[k];
    const command = [...(opts.wrap ?? []), process.execPath, ...(opts.nodeArgs ?? []), ...lifeboatServerArgv(opts.bin ?? binFor(opts.env), args)];
    const p = spawn(command[0], command.slice(1), { stdio: ['ignore', 'ignore', 'pipe'], env: { ...env, ...opts.env }, cwd: opts.cwd });
    m.proc = p;
    m.log = [];
    let partial = '';
    p.stderr.on('data', (d: Buffer) => {
      const lines = (partial + d.toString()).split('\n');
      partial = lines.pop() ?? '';
      m.log.push(...lines);
      fs.appendFileSync(path.join(this.dir, `${m.name}.log`), lines.join('\n') + '\n');
    });
    m.exit = new Promise((resolve) => p.on('exit', (code) => resolve(code)));
    if (!this.members.includes(m)) this.members.push(m);
    return m;
  }

  member(name: string): MemberProc {
    const m = this.members.find((x) => x.name === name);
    if (!m) throw new Error(`no member ${name}`);
    return m;
  }

  running(): MemberProc[] {
    return this.members.filter((m) => m.proc && m.proc.exitCode === null && m.proc.signalCode === null);
  }

  endpoints(members = this.running()): string[] {
    return members.map((m) => m.client);
  }

  /** The member that reports itself leader in Maintenance.Status (via etcdctl). */
  async leader(members = this.running()): Promise<MemberProc | undefined> {
    for (const m of members) {
      const r = await etcdctl(m.client, 'endpoint', 'status', '-w', 'json');
      if (r.code !== 0) continue;
      const s = parseEtcdJson(r.stdout)[0]?.Status;
      if (s && s.leader !== undefined && String(s.leader) === String(s.header.member_id)) return m;
    }
    return undefined;
  }

  waitForLeader(members = this.running(), timeoutMs = 30_000): Promise<MemberProc> {
    return waitFor('a leader', () => this.leader(members), timeoutMs, 200);
  }

  async kill(m: MemberProc, signal: NodeJS.Signals = 'SIGKILL'): Promise<number | null> {
    if (!m.proc || m.proc.exitCode !== null || m.proc.signalCode !== null) return m.proc?.exitCode ?? null;
    m.proc.kill(signal);
    return this.exitOf(m);
  }

  /** The member's exit code (bounded wait). */
  async exitOf(m: MemberProc, timeoutMs = 30_000): Promise<number | null> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${m.name} did not exit within ${timeoutMs} ms`)), timeoutMs);
    });
    try {
      return await Promise.race([m.exit!, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async stopAll(): Promise<void> {
    await Promise.all(this.members.map((m) => this.kill(m, 'SIGKILL').catch(() => undefined)));
    if (!process.env.LIFEBOAT_KEEP_TEST_DIRS) fs.rmSync(this.dir, { recursive: true, force: true });
  }

  logHas(m: MemberProc, msg: string): boolean {
    return m.log.some((l) => l.includes(`"msg":"${msg}"`));
  }
}
