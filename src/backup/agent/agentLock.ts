// One agent per store: lock.json in the store names the agent holding it (host,
// pid, start time, a random token). Taken at start, refused while another agent
// holds it, released on exit, stolen only with --force. A lock left by a dead
// agent on this same host (its pid gone: kill -9, a crash) is taken over, since
// nobody else can be using it; a lock from another host needs --force, because
// this host cannot tell whether that agent still runs.
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { RefusedError } from '../../common/errors.js';
import { LOCK_KEY } from '../layout.js';
import { ObjectMissing, type ObjectStore } from '../objectStore.js';

export interface LockRecord {
  host: string;
  pid: number;
  startedAt: string;
  token: string;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export async function readLock(store: ObjectStore): Promise<LockRecord | undefined> {
  try {
    const r = JSON.parse((await store.get(LOCK_KEY)).toString('utf8')) as Partial<LockRecord>;
    return { host: String(r.host ?? '?'), pid: Number(r.pid ?? 0), startedAt: String(r.startedAt ?? '?'), token: String(r.token ?? '') };
  } catch (e) {
    if (e instanceof ObjectMissing) return undefined;
    if (e instanceof SyntaxError) return { host: '?', pid: 0, startedAt: '?', token: '' };
    throw e;
  }
}

export class AgentLock {
  private constructor(
    private readonly store: ObjectStore,
    readonly record: LockRecord,
  ) {}

  /** Take the store's lock; `log` is told when a dead or forced-out holder's lock is taken over. */
  static async take(store: ObjectStore, force: boolean, log: (line: string) => void): Promise<AgentLock> {
    const held = await readLock(store);
    if (held) {
      const here = held.host === os.hostname();
      const holder = `the agent on ${held.host} (pid ${held.pid}, started ${held.startedAt})`;
      if (here && held.pid === process.pid) {
        // our own pid: a lock left by an earlier process that had this pid; nothing else can hold it
      } else if (here && !pidAlive(held.pid)) log(`taking over the lock of ${holder}: that process is gone`);
      else if (force) log(`--force: taking the lock from ${holder}`);
      else throw new RefusedError(`${store.url} is locked by ${holder}; one agent per store: stop that agent, or give --force if it is gone for good`);
    }
    const record: LockRecord = { host: os.hostname(), pid: process.pid, startedAt: new Date().toISOString(), token: randomBytes(8).toString('hex') };
    await store.put(LOCK_KEY, Buffer.from(`${JSON.stringify(record, null, 2)}\n`));
    return new AgentLock(store, record);
  }

  /** Whether the lock still holds our token (another agent given --force takes it from us). */
  async stillOurs(): Promise<{ ours: boolean; holder?: LockRecord }> {
    const now = await readLock(this.store);
    return now?.token === this.record.token ? { ours: true } : { ours: false, ...(now ? { holder: now } : {}) };
  }

  /** Delete the lock if it is still ours. */
  async release(): Promise<void> {
    if ((await this.stillOurs()).ours) await this.store.delete(LOCK_KEY);
  }
}
