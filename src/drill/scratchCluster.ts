// The scratch cluster a drill restores into: members of either runtime on
// 127.0.0.1 ports nobody else uses, data dirs under the drill's scratch dir,
// started detached like a playbook's start-member, and stopped again by the
// drill itself (SIGTERM, then SIGKILL, each bounded) unless it was asked to keep
// them. Members after the first join as learners and are promoted once caught
// up, through the same operations recovery uses (src/ops).
import path from 'node:path';
import { ephemeralLoopbackPort, portIsFree } from '../common/ports.js';
import { clientFor, type ConnectionOptions } from '../client/etcdClient.js';
import type { RuntimeName } from '../common/memberCommand.js';
import { promoteWhenReady, statusOf, waitCaughtUp, waitHealthy, waitUntil } from '../ops/memberOps.js';
import { logTail, spawnMember, type StartedMember } from '../ops/startMember.js';
import { answers } from '../recovery/fence.js';

export interface ScratchMember {
  name: string;
  peerUrl: string;
  clientUrl: string;
  dataDir: string;
  logFile: string;
  /** hex, once known */
  id?: string;
  pid?: number;
  started?: StartedMember;
}

/**
 * `count` free loopback ports: from `from` upwards (skipping ports in use), or
 * chosen by the OS when `from` is not given.
 */
export async function loopbackPorts(count: number, from?: number): Promise<number[]> {
  const out: number[] = [];
  if (from === undefined) {
    for (let i = 0; i < count * 20 && out.length < count; i++) {
      const p = await ephemeralLoopbackPort();
      if (!out.includes(p)) out.push(p);
    }
  } else {
    for (let port = from; port <= 65535 && out.length < count && port < from + 2000; port++) {
      if (await portIsFree(port)) out.push(port);
    }
  }
  if (out.length < count) throw new Error(`could not find ${count} free ports on 127.0.0.1${from === undefined ? '' : ` from ${from}`}`);
  return out;
}

export interface ScratchOptions {
  runtime: RuntimeName;
  /** the scratch dir: data dirs go here */
  dir: string;
  /** member logs go here (the run's directory) */
  logDir: string;
  /** members: 1, or more (re-added as learners and promoted) */
  size: number;
  portsFrom?: number;
  etcdBin?: string;
  conn: ConnectionOptions;
  /** more flags for every member (a backup replay raises --max-txn-ops and --max-request-bytes) */
  extraArgs?: string[];
  signal?: AbortSignal;
}

/** The scratch cluster: its members' names, URLs and processes. */
export class ScratchCluster {
  readonly members: ScratchMember[] = [];

  private constructor(readonly o: ScratchOptions) {}

  /** Names and ports for every member (nothing started). */
  static async plan(o: ScratchOptions): Promise<ScratchCluster> {
    const c = new ScratchCluster(o);
    const ports = await loopbackPorts(2 * o.size, o.portsFrom);
    for (let i = 0; i < o.size; i++) {
      const name = `drill-${i + 1}`;
      c.members.push({
        name,
        peerUrl: `http://127.0.0.1:${ports[2 * i]}`,
        clientUrl: `http://127.0.0.1:${ports[2 * i + 1]}`,
        dataDir: path.join(o.dir, name),
        logFile: path.join(o.logDir, `${name}.log`),
      });
    }
    return c;
  }

  get first(): ScratchMember {
    return this.members[0];
  }

  /** Client URLs of the members started so far. */
  endpoints(): string[] {
    return this.members.filter((m) => m.started).map((m) => m.clientUrl);
  }

  /** Starts a member and waits until it answers Status (bounded); a member that exits fails at once, naming its log. */
  async start(m: ScratchMember, state: 'new' | 'existing', initialCluster: string, token?: string, timeoutMs = 60_000): Promise<void> {
    m.started = spawnMember({
      runtime: this.o.runtime,
      name: m.name,
      dataDir: m.dataDir,
      peerUrl: m.peerUrl,
      clientUrl: m.clientUrl,
      initialCluster,
      state,
      ...(token ? { initialClusterToken: token } : {}),
      ...(this.o.etcdBin ? { etcdBin: this.o.etcdBin } : {}),
      ...(this.o.extraArgs ? { extraArgs: this.o.extraArgs } : {}),
      logFile: m.logFile,
    });
    m.pid = m.started.pid;
    const local = new AbortController();
    const answering = waitUntil(
      `${m.name} to answer at ${m.clientUrl}`,
      timeoutMs,
      async () => {
        if (!(await answers(m.clientUrl, 500))) return undefined;
        await statusOf(m.clientUrl, { ...this.o.conn, dialTimeoutMs: 1000 });
        return true;
      },
      50,
      this.o.signal ? AbortSignal.any([local.signal, this.o.signal]) : local.signal,
    );
    answering.catch(() => undefined);
    // A member that exits (a port taken, bad flags, a refused join) fails at once.
    const stopped = m.started.exited.then((how) => {
      throw new Error(`${m.name} (${this.o.runtime}) stopped at once (${how}); last lines of ${m.logFile}: ${logTail(m.logFile, 3).replace(/\n/g, ' | ')}`);
    });
    stopped.catch(() => undefined); // an exit after it answered is not this wait's failure
    try {
      await Promise.race([answering, stopped]);
    } finally {
      local.abort(); // no wait goes on after this one ended
    }
  }

  /** Waits for a leader that serves a linearizable read. */
  async waitLeader(timeoutMs = 60_000): Promise<string> {
    return (await waitHealthy(this.endpoints(), this.o.conn, timeoutMs, this.o.signal)).leader;
  }

  /**
   * Adds `m` as a learner, starts it, waits until it has caught up and stayed so
   * for `stabilizationMs`, and promotes it: recovery's add-learner, start-member,
   * wait-caught-up and promote, in that order.
   */
  async addMember(m: ScratchMember, stabilizationMs: number): Promise<{ id: string; caughtUpMs: number }> {
    const endpoints = this.endpoints();
    const added = await waitUntil(
      `${m.name} to be added as a learner`,
      60_000,
      async () => {
        const c = clientFor(endpoints, this.o.conn);
        try {
          return await c.memberAdd([m.peerUrl], { learner: true });
        } catch (e) {
          if (/unhealthy cluster|not enough started/.test((e as Error).message)) return undefined;
          throw e;
        } finally {
          c.close();
        }
      },
      250,
      this.o.signal,
    );
    m.id = added.member.id.toString(16);
    const initial = [...this.members.filter((x) => x.started), m].map((x) => `${x.name}=${x.peerUrl}`).join(',');
    await this.start(m, 'existing', initial);
    const t0 = Date.now();
    await waitCaughtUp(m.clientUrl, endpoints, this.o.conn, { lag: 2, stabilizationMs, stallMs: 30_000, ...(this.o.signal ? { signal: this.o.signal } : {}) });
    await promoteWhenReady(endpoints, added.member.id, this.o.conn, 60_000, this.o.signal);
    return { id: m.id, caughtUpMs: Date.now() - t0 };
  }

  /**
   * Stops every member this cluster started: SIGTERM, then SIGKILL after
   * `graceMs`; each wait bounded. The re-added members go first and the restored
   * one last, so a stopping leader has no one left to hand leadership to (etcd
   * would try for seconds); the data dirs are thrown away, so SIGKILL loses nothing.
   */
  async stop(graceMs = 5000): Promise<string[]> {
    const problems: string[] = [];
    const stopOne = async (m: ScratchMember) => {
      const s = m.started;
      if (!s) return;
      signal(s.pid, 'SIGTERM');
      if (!(await within(s.exited, graceMs)) && alive(s.pid)) {
        signal(s.pid, 'SIGKILL');
        if (!(await within(s.exited, 5000)) && alive(s.pid)) problems.push(`${m.name} (pid ${s.pid}) did not stop`);
      }
      m.started = undefined;
    };
    await Promise.all(this.members.slice(1).map(stopOne));
    await stopOne(this.first);
    return problems;
  }
}

/** Whether `p` settled within `ms` (the timer is cleared either way, so nothing waits on it). */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([p.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
