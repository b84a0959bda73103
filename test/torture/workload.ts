// The client workload of the fault suite: clients, each bound to one member,
// doing reads, writes and compare-and-sets on a few registers, recording every
// operation (invoke, completion, ok / fail / unknown, values) for the checker.
import { EtcdClient } from '../../src/client/etcdClient.js';
import type { Operation } from './history.js';

export interface WorkloadOptions {
  endpoints: string[];
  clients: number;
  keys: number;
  /** Seeded source in [0, 1). */
  rnd: () => number;
  /** Per-operation deadline: a write without an answer by then is "unknown". */
  opTimeoutMs: number;
}

export class Workload {
  readonly history: Operation[] = [];
  private stopped = false;
  private nextId = 0;
  private nextValue = 0;
  private readonly t0 = performance.now();
  private running: Promise<void>[] = [];

  constructor(private readonly o: WorkloadOptions) {}

  now(): number {
    return performance.now() - this.t0;
  }

  start(): void {
    this.running = Array.from({ length: this.o.clients }, (_, i) => this.client(i));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.running);
  }

  /** Completed operations (ok) whose completion falls in [from, to). */
  okBetween(from: number, to: number): number {
    return this.history.filter((op) => op.result === 'ok' && op.complete !== undefined && op.complete >= from && op.complete < to).length;
  }

  /** One last linearizable read of every key, through `endpoint`, after the faults are healed. */
  async finalReads(endpoint: string): Promise<void> {
    const client = new EtcdClient({ endpoints: endpoint, commandTimeoutMs: 10_000 });
    try {
      for (let k = 0; k < this.o.keys; k++) await this.read(client, -1, `r${k}`);
    } finally {
      client.close();
    }
  }

  private async client(i: number): Promise<void> {
    const endpoint = this.o.endpoints[i % this.o.endpoints.length];
    let client = new EtcdClient({ endpoints: endpoint, commandTimeoutMs: this.o.opTimeoutMs, dialTimeoutMs: 1_000 });
    try {
      while (!this.stopped) {
        const key = `r${Math.floor(this.o.rnd() * this.o.keys)}`;
        const dice = this.o.rnd();
        let answered: boolean;
        if (dice < 0.45) answered = await this.read(client, i, key);
        else if (dice < 0.8) answered = await this.write(client, i, key);
        else answered = await this.cas(client, i, key);
        if (!answered) {
          // A broken connection may sit in grpc's backoff: start afresh, after a pause.
          client.close();
          await new Promise((r) => setTimeout(r, 100));
          client = new EtcdClient({ endpoints: endpoint, commandTimeoutMs: this.o.opTimeoutMs, dialTimeoutMs: 1_000 });
        }
      }
    } finally {
      client.close();
    }
  }

  private begin(client: number, kind: Operation['kind'], key: string, extra: Partial<Operation> = {}): Operation {
    const op: Operation = { id: this.nextId++, client: `c${client}`, kind, key, invoke: this.now(), result: 'unknown', ...extra };
    this.history.push(op);
    return op;
  }

  private async read(c: EtcdClient, client: number, key: string): Promise<boolean> {
    const op = this.begin(client, 'read', key);
    try {
      const r = await c.range(key);
      op.complete = this.now();
      op.result = 'ok';
      op.output = r.kvs[0] ? r.kvs[0].value.toString() : null;
      return true;
    } catch {
      // A read that failed changed nothing: it is left out of the history.
      op.result = 'fail';
      op.complete = this.now();
      return false;
    }
  }

  private async write(c: EtcdClient, client: number, key: string): Promise<boolean> {
    const value = `v${this.nextValue++}`;
    const op = this.begin(client, 'write', key, { value });
    try {
      await c.put(key, value);
      op.complete = this.now();
      op.result = 'ok';
      return true;
    } catch {
      // It may still take effect: open until the end.
      op.result = 'unknown';
      return false;
    }
  }

  /** Compare-and-set from a value this client read just before (or from "absent"). */
  private async cas(c: EtcdClient, client: number, key: string): Promise<boolean> {
    let expect: string | undefined;
    try {
      const r = await c.range(key, { serializable: true });
      expect = r.kvs[0]?.value.toString();
    } catch {
      return false;
    }
    const value = `v${this.nextValue++}`;
    const op = this.begin(client, 'cas', key, { value, expect });
    try {
      const compare =
        expect === undefined
          ? [{ key, target: 'VERSION' as const, result: 'EQUAL' as const, value: 0 }]
          : [{ key, target: 'VALUE' as const, result: 'EQUAL' as const, value: expect }];
      const r = await c.txn({ compare, success: [{ put: { key, value } }] });
      op.complete = this.now();
      op.result = r.succeeded ? 'ok' : 'fail';
      return true;
    } catch {
      op.result = 'unknown';
      return false;
    }
  }
}
