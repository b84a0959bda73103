// Clients for the watch and lease tests: long-running etcdctl processes (watch,
// lease keep-alive, make-mirror) whose output is collected until they are stopped,
// and a raw gRPC watch stream with no reconnect logic of its own. Every process
// and stream is ended by its stop()/close(), each bounded in time.
import * as grpc from '#grpc-js';
import { spawn, type ChildProcess } from 'node:child_process';
import { service } from '../../src/proto/grpcClients.js';
import { parseEtcdJson, waitFor } from '../support/lifeboatCluster.js';
import { requireTool } from '../support/tools.js';

export class Background {
  stdout = '';
  stderr = '';
  readonly exited: Promise<number | null>;
  private readonly proc: ChildProcess;

  constructor(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}) {
    this.proc = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc.stdout!.on('data', (d) => (this.stdout += d));
    this.proc.stderr!.on('data', (d) => (this.stderr += d));
    this.exited = new Promise((resolve) => {
      this.proc.on('exit', (code) => resolve(code));
      this.proc.on('error', () => resolve(-1));
    });
  }

  get running(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Sends `sig` (e.g. SIGINT: ask it to finish) without waiting. */
  signal(sig: NodeJS.Signals): void {
    if (this.running) this.proc.kill(sig);
  }

  /** SIGKILL and wait for the exit (bounded). */
  async stop(): Promise<void> {
    if (this.running) this.proc.kill('SIGKILL');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.exited, new Promise((r) => (timer = setTimeout(r, 10_000)))]);
    clearTimeout(timer);
  }
}

/** etcdctl running in the background (watch, lease keep-alive, make-mirror). */
export function etcdctlBackground(endpoints: string | string[], ...args: string[]): Background {
  requireTool('etcdctl');
  const ep = Array.isArray(endpoints) ? endpoints.join(',') : endpoints;
  return new Background('etcdctl', ['--endpoints', ep, ...args], { ETCDCTL_API: '3' });
}

export interface SeenEvent {
  type: 'PUT' | 'DELETE';
  key: string;
  value: string;
  mod: number;
  prev?: string;
}

const b64 = (s: string | undefined) => (s ? Buffer.from(s, 'base64').toString() : '');

/** The events in `etcdctl watch -w json` output (one WatchResponse per line). */
export function watchJsonEvents(stdout: string): SeenEvent[] {
  const out: SeenEvent[] = [];
  for (const line of stdout.split('\n')) {
    if (!line.startsWith('{')) continue;
    const r = parseEtcdJson<{
      Events?: Array<{ type?: number; kv: { key: string; value?: string; mod_revision: number }; prev_kv?: { value?: string } }>;
    }>(line);
    for (const e of r.Events ?? []) {
      out.push({
        type: e.type === 1 ? 'DELETE' : 'PUT',
        key: b64(e.kv.key),
        value: b64(e.kv.value),
        mod: Number(e.kv.mod_revision),
        ...(e.prev_kv ? { prev: b64(e.prev_kv.value) } : {}),
      });
    }
  }
  return out;
}

export interface RawResponse {
  watch_id: string;
  created: boolean;
  canceled: boolean;
  compact_revision: string;
  cancel_reason: string;
  fragment: boolean;
  header: { revision: string };
  events: Array<{ type: string; kv: { key: Buffer; value: Buffer; mod_revision: string }; prev_kv: { value: Buffer } | null }>;
}

/** One gRPC Watch stream, no reconnects: what the server sends is what we see. */
export class RawWatch {
  readonly responses: RawResponse[] = [];
  error: Error | undefined;
  ended = false;
  private readonly client: any;
  private readonly call: grpc.ClientDuplexStream<unknown, RawResponse>;

  constructor(endpoint: string) {
    const Watch = service('etcdserverpb.Watch');
    this.client = new Watch(endpoint, grpc.credentials.createInsecure());
    this.call = this.client.Watch();
    this.call.on('data', (r: RawResponse) => this.responses.push(r));
    this.call.on('error', (e: Error) => (this.error = e));
    this.call.on('end', () => (this.ended = true));
  }

  create(req: {
    key: string;
    range_end?: string;
    start_revision?: number;
    prev_kv?: boolean;
    watch_id?: number;
    fragment?: boolean;
    filters?: Array<'NOPUT' | 'NODELETE'>;
    progress_notify?: boolean;
  }): void {
    this.call.write({
      create_request: {
        key: Buffer.from(req.key),
        range_end: req.range_end === undefined ? Buffer.alloc(0) : Buffer.from(req.range_end),
        start_revision: String(req.start_revision ?? 0),
        prev_kv: !!req.prev_kv,
        watch_id: String(req.watch_id ?? 0),
        fragment: !!req.fragment,
        filters: req.filters ?? [],
        progress_notify: !!req.progress_notify,
      },
    });
  }

  /** Stops reading from the connection (the server's sends back up). */
  pause(): void {
    this.call.pause();
  }

  resume(): void {
    this.call.resume();
  }

  events(): Array<{ type: string; key: string; value: string; mod: number }> {
    return this.responses.flatMap((r) =>
      (r.events ?? []).map((e) => ({ type: e.type, key: e.kv.key.toString(), value: e.kv.value.toString(), mod: Number(e.kv.mod_revision) })),
    );
  }

  waitCreated(timeoutMs = 30_000): Promise<RawResponse> {
    return waitFor(
      'the watch to be created',
      () => this.responses.find((r) => r.created) ?? (this.error ? Promise.reject(this.error) : undefined),
      timeoutMs,
      20,
    );
  }

  close(): void {
    try {
      this.call.cancel();
    } catch {
      // already closed
    }
    this.client.close();
  }
}

/** A KV client for writes in a loop (the etcdctl process per write is too slow for thousands). */
export class RawKv {
  private readonly client: any;

  constructor(endpoint: string) {
    const KV = service('etcdserverpb.KV');
    this.client = new KV(endpoint, grpc.credentials.createInsecure());
  }

  put(key: string | Buffer, value: string | Buffer, timeoutMs = 10_000): Promise<{ header: { revision: string } }> {
    return new Promise((resolve, reject) =>
      this.client.Put({ key: Buffer.from(key), value: Buffer.from(value) }, { deadline: new Date(Date.now() + timeoutMs) }, (e: Error | null, r: any) =>
        e ? reject(e) : resolve(r),
      ),
    );
  }

  range(
    key: string,
    rangeEnd?: string,
    opts: { serializable?: boolean; timeoutMs?: number } = {},
  ): Promise<{ header: { revision: string }; kvs: Array<{ key: Buffer; value: Buffer }> }> {
    return new Promise((resolve, reject) =>
      this.client.Range(
        { key: Buffer.from(key), range_end: rangeEnd === undefined ? Buffer.alloc(0) : Buffer.from(rangeEnd), serializable: !!opts.serializable },
        { deadline: new Date(Date.now() + (opts.timeoutMs ?? 10_000)) },
        (e: Error | null, r: any) => (e ? reject(e) : resolve(r)),
      ),
    );
  }

  txn(success: unknown[]): Promise<{ header: { revision: string }; succeeded: boolean }> {
    return new Promise((resolve, reject) =>
      this.client.Txn({ compare: [], success, failure: [] }, { deadline: new Date(Date.now() + 10_000) }, (e: Error | null, r: any) =>
        e ? reject(e) : resolve(r),
      ),
    );
  }

  del(key: string, rangeEnd?: string): Promise<{ header: { revision: string } }> {
    return new Promise((resolve, reject) =>
      this.client.DeleteRange(
        { key: Buffer.from(key), range_end: rangeEnd === undefined ? Buffer.alloc(0) : Buffer.from(rangeEnd) },
        { deadline: new Date(Date.now() + 10_000) },
        (e: Error | null, r: any) => (e ? reject(e) : resolve(r)),
      ),
    );
  }

  /** Every key and value, in key order, as "key=value" (serializable unless asked). */
  async dump(opts: { serializable?: boolean } = {}): Promise<string[]> {
    const r = await this.range('\0', '\0', opts);
    return r.kvs.map((kv) => `${kv.key.toString()}=${kv.value.toString()}`);
  }

  compact(revision: number): Promise<void> {
    return new Promise((resolve, reject) => this.client.Compact({ revision: String(revision) }, (e: Error | null) => (e ? reject(e) : resolve())));
  }

  close(): void {
    this.client.close();
  }
}
