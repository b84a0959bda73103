// The nemesis: faults injected into a running cluster of real members, each one
// undone by heal(). Partitions and failing fsyncs go through the members'
// runtime failpoints (LIFEBOAT_FAULT_FILE, which they poll); a full disk is a
// size-limited tmpfs in a mount namespace of its own (unshare -m, as root).
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { EtcdClient } from '../../src/client/etcdClient.js';
import type { LifeboatCluster, MemberProc, SpawnOptions } from '../support/lifeboatCluster.js';

export type FaultKind = 'kill' | 'pause' | 'isolate' | 'isolate-leader' | 'one-way' | 'disk-full' | 'fsync-eio' | 'churn';
export const FAULT_KINDS: FaultKind[] = ['kill', 'pause', 'isolate', 'isolate-leader', 'one-way', 'disk-full', 'fsync-eio', 'churn'];

const MiB = 1024 * 1024;

export class Nemesis {
  readonly counts = new Map<FaultKind, number>();
  private readonly ids = new Map<string, string>();
  private paused = new Set<MemberProc>();
  /** The member whose data dir is a tmpfs in its own mount namespace, and the process holding it. */
  private disk: { m: MemberProc; holder: ChildProcess } | undefined;
  private diskFull = false;

  constructor(
    private readonly c: LifeboatCluster,
    private readonly log: (line: string) => void,
  ) {}

  faultFile(m: MemberProc): string {
    return path.join(this.c.dir, `${m.name}.faults`);
  }

  /** How every member is started (and restarted): its fault file, and the disk member's namespace. */
  spawnOptions(m: MemberProc): SpawnOptions {
    const opts: SpawnOptions = { env: { LIFEBOAT_FAULT_FILE: this.faultFile(m) } };
    if (this.disk?.m === m) opts.wrap = ['nsenter', '-t', String(this.disk.holder.pid), '-m', '--'];
    return opts;
  }

  /** Puts `m`'s data dir on a 256 MiB tmpfs in a mount namespace kept alive by a holder process. */
  async prepareDisk(m: MemberProc): Promise<void> {
    fs.mkdirSync(m.dataDir, { recursive: true });
    const holder = spawn('unshare', ['-m', '--propagation', 'private', 'sleep', 'infinity'], { stdio: 'ignore' });
    await new Promise((r) => setTimeout(r, 200));
    if (holder.exitCode !== null) throw new Error('unshare -m failed: the disk-full fault needs root');
    execFileSync('nsenter', ['-t', String(holder.pid), '-m', '--', 'mount', '-t', 'tmpfs', '-o', `size=${256 * MiB}`, 'tmpfs', m.dataDir]);
    this.disk = { m, holder };
  }

  async idOf(m: MemberProc): Promise<string> {
    const known = this.ids.get(m.name);
    if (known) return known;
    const client = new EtcdClient({ endpoints: this.c.endpoints(this.c.running().filter((x) => !this.paused.has(x))), commandTimeoutMs: 5_000 });
    try {
      for (const mem of (await client.memberList()).members) if (mem.name) this.ids.set(mem.name, mem.id.toString(16));
    } finally {
      client.close();
    }
    const id = this.ids.get(m.name);
    if (!id) throw new Error(`no member ID known for ${m.name}`);
    return id;
  }

  forget(m: MemberProc): void {
    this.ids.delete(m.name);
  }

  private count(kind: FaultKind): void {
    this.counts.set(kind, (this.counts.get(kind) ?? 0) + 1);
  }

  private setPoints(m: MemberProc, points: string[]): void {
    fs.writeFileSync(this.faultFile(m), points.join('\n') + '\n');
  }

  async kill(m: MemberProc): Promise<void> {
    this.count('kill');
    this.log(`kill -9 ${m.name}`);
    await this.c.kill(m, 'SIGKILL');
  }

  pause(m: MemberProc): void {
    this.count('pause');
    this.log(`SIGSTOP ${m.name}`);
    m.proc?.kill('SIGSTOP');
    this.paused.add(m);
  }

  /** Cuts `m` off from every other member, both ways. */
  async isolate(m: MemberProc, kind: 'isolate' | 'isolate-leader' = 'isolate'): Promise<void> {
    this.count(kind);
    this.log(`partition: ${m.name} isolated${kind === 'isolate-leader' ? ' (the leader)' : ''}`);
    const others = this.c.members.filter((x) => x !== m);
    const mine: string[] = [];
    for (const o of others) {
      const id = await this.idOf(o);
      mine.push(`drop-to:${id}`, `drop-from:${id}`);
    }
    this.setPoints(m, mine);
    const myId = await this.idOf(m);
    for (const o of others) this.setPoints(o, [`drop-to:${myId}`, `drop-from:${myId}`]);
  }

  /** Messages from `a` to `b` are lost; `b` to `a` still arrive. */
  async oneWay(a: MemberProc, b: MemberProc): Promise<void> {
    this.count('one-way');
    this.log(`partition: ${a.name} → ${b.name} lost (one way)`);
    this.setPoints(a, [`drop-to:${await this.idOf(b)}`]);
    this.setPoints(b, [`drop-from:${await this.idOf(a)}`]);
  }

  fsyncEio(m: MemberProc): void {
    this.count('fsync-eio');
    this.log(`fsync fails with EIO on ${m.name}`);
    this.setPoints(m, ['fsync-eio']);
  }

  /** Shrinks the disk member's tmpfs to what it uses now: its next writes get ENOSPC. */
  fillDisk(): MemberProc | undefined {
    if (!this.disk) return undefined;
    this.count('disk-full');
    const { m, holder } = this.disk;
    const ns = ['-t', String(holder.pid), '-m', '--'];
    const used = Number(
      execFileSync('nsenter', [...ns, 'df', '-B1', '--output=used', m.dataDir])
        .toString()
        .trim()
        .split('\n')
        .pop(),
    );
    // tmpfs refuses a size below what it holds; df may count a little less than that.
    for (const slack of [0, 64 * 1024, 256 * 1024, MiB, 4 * MiB]) {
      const size = Math.max(used + slack, MiB);
      try {
        execFileSync('nsenter', [...ns, 'mount', '-o', `remount,size=${size}`, m.dataDir], { stdio: 'ignore' });
        this.log(`disk full on ${m.name} (tmpfs shrunk to ${size} bytes)`);
        break;
      } catch {
        // a little more room, and again
      }
    }
    this.diskFull = true;
    return m;
  }

  get diskMember(): MemberProc | undefined {
    return this.disk?.m;
  }

  /** Undoes every fault: partitions and failpoints cleared, paused members resumed, the disk grown back. */
  heal(): void {
    for (const m of this.c.members) if (fs.existsSync(this.faultFile(m))) this.setPoints(m, []);
    for (const m of this.paused) m.proc?.kill('SIGCONT');
    this.paused.clear();
    if (this.disk && this.diskFull) {
      execFileSync('nsenter', ['-t', String(this.disk.holder.pid), '-m', '--', 'mount', '-o', `remount,size=${256 * MiB}`, this.disk.m.dataDir]);
      this.diskFull = false;
    }
  }

  close(): void {
    this.disk?.holder.kill('SIGKILL');
  }
}
