// Requests waiting on Raft: proposals wait for their entry to be applied, reads
// for a confirmed read index to be applied. Every wait is bounded by a timeout,
// and a read by its client's deadline (grpc-timeout) when that comes first.
import { randomBytes } from 'node:crypto';
import { ErrDeadlineExceeded, ErrNoLeader, ErrTimeout, type MemberError } from '../common/memberErrors.js';
import { RaftError } from '../raft/types.js';

interface Waiter<T> {
  resolve(v: T): void;
  reject(e: Error): void;
  timer: NodeJS.Timeout;
}

export class PendingProposals<T = unknown> {
  private readonly waiters = new Map<bigint, Waiter<T>>();
  /** A random prefix per process, so IDs from before a restart never match a new request. */
  private readonly prefix = BigInt(randomBytes(4).readUInt32BE(0)) << 32n;
  private counter = 0n;

  constructor(private readonly timeoutMs: number) {}

  nextId(): bigint {
    this.counter = (this.counter + 1n) & 0xffffffffn;
    return this.prefix | this.counter;
  }

  /** Waits for `id` to be resolved; rejects with `timeoutError` (etcd's timeout) after `timeoutMs` (the request timeout). */
  wait(id: bigint, timeoutError: MemberError = ErrTimeout, timeoutMs = this.timeoutMs): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(id);
        reject(timeoutError);
      }, timeoutMs);
      this.waiters.set(id, { resolve, reject, timer });
    });
  }

  has(id: bigint): boolean {
    return this.waiters.has(id);
  }

  resolve(id: bigint, value: T): void {
    const w = this.waiters.get(id);
    if (!w) return;
    clearTimeout(w.timer);
    this.waiters.delete(id);
    w.resolve(value);
  }

  reject(id: bigint, err: Error): void {
    const w = this.waiters.get(id);
    if (!w) return;
    clearTimeout(w.timer);
    this.waiters.delete(id);
    w.reject(err);
  }

  rejectAll(err: Error): void {
    for (const id of [...this.waiters.keys()]) this.reject(id, err);
  }

  get size(): number {
    return this.waiters.size;
  }
}

/**
 * Linearizable reads share read-index rounds: every read that arrives while a
 * round is in flight joins the next one, so N concurrent reads cost one round.
 */
interface Reader {
  resolve: () => void;
  reject: (e: Error) => void;
  /** Its client's deadline passed: answered, no round is asked for it any more. */
  gone?: boolean;
}

/** A read index request that got no answer (lost, or sent to a former leader) is asked again after this. */
const READ_INDEX_RETRY_MS = 500;

export class ReadIndexBatcher {
  private waiting: Reader[] = [];
  private inFlight: { ctx: string; readers: Reader[]; timer: NodeJS.Timeout } | undefined;
  /** Rounds confirmed but whose index is not applied yet, in index order. */
  private confirmed: Array<{ index: number; readers: Reader[] }> = [];
  private seq = 0;
  /**
   * Contexts are unique across members and restarts: the leader de-duplicates and
   * matches heartbeat acks by context alone, so a context another member (or this
   * member before a restart) used could be answered with that request's index.
   */
  private readonly prefix = randomBytes(6).toString('hex');

  constructor(
    private readonly requestRound: (ctx: Uint8Array) => void,
    private readonly applied: () => number,
    private readonly timeoutMs: number,
  ) {}

  /** Resolves once a read may be served locally; rejects with ErrDeadlineExceeded at `deadline` (the client's, Date.now() scale) if that comes first. */
  read(deadline = Infinity): Promise<void> {
    return new Promise((resolve, reject) => {
      const ms = deadline - Date.now();
      if (ms <= 0) return reject(ErrDeadlineExceeded);
      const reader: Reader = { resolve, reject };
      if (ms < this.timeoutMs) {
        const timer = setTimeout(() => {
          reader.gone = true;
          reject(ErrDeadlineExceeded);
        }, ms);
        reader.resolve = () => {
          clearTimeout(timer);
          resolve();
        };
        reader.reject = (e) => {
          clearTimeout(timer);
          reject(e);
        };
      }
      this.waiting.push(reader);
      this.startRound();
    });
  }

  private startRound(): void {
    if (this.inFlight) return;
    const readers = this.waiting.filter((r) => !r.gone);
    this.waiting = [];
    if (readers.length === 0) return;
    const deadline = Date.now() + this.timeoutMs;
    this.issue(readers, deadline);
  }

  /** Asks the core for a read index; a lost request is asked again with a new context. */
  private issue(readers: Reader[], deadline: number): void {
    const ctx = `${this.prefix}.${++this.seq}`;
    const timer = setTimeout(
      () => {
        if (this.inFlight?.ctx !== ctx) return;
        this.inFlight = undefined;
        // Every reader's client stopped waiting: no round is asked again for them.
        if (readers.every((r) => r.gone)) {
          this.startRound();
        } else if (Date.now() >= deadline) {
          for (const r of readers) r.reject(ErrTimeout);
          this.startRound();
        } else {
          this.issue(readers, deadline);
        }
      },
      Math.min(READ_INDEX_RETRY_MS, Math.max(1, deadline - Date.now())),
    );
    this.inFlight = { ctx, readers, timer };
    try {
      this.requestRound(Buffer.from(ctx));
    } catch {
      // No leader known yet: the timer asks again, until the deadline.
    }
  }

  /** A read state came back from the core. */
  confirmedAt(ctx: Uint8Array, index: number): void {
    const key = Buffer.from(ctx).toString();
    if (!this.inFlight || this.inFlight.ctx !== key) return;
    clearTimeout(this.inFlight.timer);
    this.confirmed.push({ index, readers: this.inFlight.readers });
    this.inFlight = undefined;
    this.appliedTo(this.applied());
    this.startRound();
  }

  /** Called after each apply: release the rounds whose index is now applied. */
  appliedTo(applied: number): void {
    while (this.confirmed.length > 0 && this.confirmed[0].index <= applied) {
      for (const r of this.confirmed.shift()!.readers) r.resolve();
    }
  }

  rejectAll(err: Error): void {
    const all = [...this.waiting, ...(this.inFlight?.readers ?? []), ...this.confirmed.flatMap((c) => c.readers)];
    if (this.inFlight) clearTimeout(this.inFlight.timer);
    this.waiting = [];
    this.inFlight = undefined;
    this.confirmed = [];
    for (const r of all) r.reject(err);
  }
}

/** Waits until a linearizable read may be served here (host.readIndex), until the client's `deadline` at most; Raft's refusal is etcd's "no leader". */
export async function linearizable(host: { readIndex(deadline?: number): Promise<void> }, deadline?: number): Promise<void> {
  try {
    await host.readIndex(deadline);
  } catch (e) {
    if (e instanceof RaftError) throw ErrNoLeader;
    throw e;
  }
}
