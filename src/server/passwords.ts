// Password hashing as etcd does it (bcrypt, cost 10), in a worker thread: one bcrypt
// costs 60-100 ms of CPU, which on the member's event loop would delay Raft ticks
// and heartbeats (and cost leadership). Hashes are made before a request is
// proposed, so no plain-text password is ever in a Raft entry. One worker, started
// on first use, jobs answered in order; it does not keep the process alive.
import type { Worker } from 'node:worker_threads';

/** etcd's bcrypt cost (--bcrypt-cost default, bcrypt.DefaultCost). */
export const BCRYPT_COST = 10;

type JobBody = { kind: 'hash'; password: string; cost: number } | { kind: 'compare'; password: string; hash: string };
export type PasswordJob = JobBody & { id: number };
export type PasswordReply = { id: number; hash: string } | { id: number; match: boolean } | { id: number; error: string };

export class Passwords {
  private worker: Worker | undefined;
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve: (r: PasswordReply) => void; reject: (e: Error) => void }>();

  constructor(private readonly cost = BCRYPT_COST) {}

  async hash(password: string): Promise<string> {
    const r = await this.run({ kind: 'hash', password, cost: this.cost });
    if ('hash' in r) return r.hash;
    throw new Error(`password hashing failed (${'error' in r ? r.error : 'no hash'})`);
  }

  /** Whether `password` matches the bcrypt `hash` (false for a malformed hash). */
  async matches(password: string, hash: string): Promise<boolean> {
    const r = await this.run({ kind: 'compare', password, hash });
    return 'match' in r && r.match;
  }

  close(): void {
    const w = this.worker;
    this.worker = undefined;
    for (const p of this.waiting.values()) p.reject(new Error('password worker stopped'));
    this.waiting.clear();
    void w?.terminate();
  }

  private run(job: JobBody): Promise<PasswordReply> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.start().postMessage({ ...job, id });
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    // worker_threads is loaded here, not at start-up (0.4 MiB of a member that never hashes a password).
    const w = new (process.getBuiltinModule('node:worker_threads').Worker)(new URL('./passwordWorker.js', import.meta.url));
    w.unref();
    w.on('message', (r: PasswordReply) => {
      const p = this.waiting.get(r.id);
      this.waiting.delete(r.id);
      p?.resolve(r);
    });
    const fail = (e: Error) => {
      if (this.worker === w) this.worker = undefined;
      for (const p of this.waiting.values()) p.reject(e);
      this.waiting.clear();
    };
    w.on('error', fail);
    w.on('exit', (code) => fail(new Error(`password worker exited with code ${code}`)));
    this.worker = w;
    return w;
  }
}
