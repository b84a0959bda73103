// The load generator: N concurrent clients spread over several worker processes
// (one Node process with grpc-js tops out at a few thousand calls/s, so one would
// measure itself rather than the cluster). Latency histograms are merged here.
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as hdr from 'hdr-histogram-js';
import { onCleanup } from './cleanup.js';
import type { TlsOptions } from '../src/client/tls.js';
import { HISTOGRAM, type FromWorker, type LoadJob, type LoadOp, type ToWorker } from './loadJobs.js';

const WORKER = fileURLToPath(new URL('./loadWorker.js', import.meta.url));

export interface LoadResult {
  clients: number;
  ops: number;
  errors: number;
  firstError?: string;
  seconds: number;
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** p99.9: the tail beside max, which one slow call decides */
  p999Ms: number;
  maxMs: number;
}

export interface LoadSpec {
  endpoints: string[];
  /** connect with this CA and client certificate (endpoints https://) */
  tls?: TlsOptions;
  clients: number;
  workers: number;
  op: LoadOp;
  valueSize: number;
  durationMs: number;
}

/** Resolves with the first message of `type`, rejects on failure, exit or timeout. */
function expect<T extends FromWorker['type']>(w: ChildProcess, type: T, timeoutMs: number): Promise<Extract<FromWorker, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => done(new Error(`load worker ${w.pid}: no '${type}' within ${timeoutMs} ms`)), timeoutMs);
    const onMessage = (m: FromWorker) => {
      if (m.type === type) done(undefined, m as Extract<FromWorker, { type: T }>);
      else if (m.type === 'failed') done(new Error(`load worker ${w.pid}: ${m.message}`));
    };
    const onExit = (code: number | null) => done(new Error(`load worker ${w.pid} exited (${code}) before '${type}'`));
    const done = (err?: Error, m?: Extract<FromWorker, { type: T }>) => {
      clearTimeout(timer);
      w.off('message', onMessage);
      w.off('exit', onExit);
      if (err) reject(err);
      else resolve(m!);
    };
    w.on('message', onMessage);
    w.once('exit', onExit);
  });
}

/** Run one load: fork workers, connect them all, start them together, merge their results. */
export async function runLoad(spec: LoadSpec): Promise<LoadResult> {
  const workers = Math.max(1, Math.min(spec.workers, spec.clients));
  const procs: ChildProcess[] = [];
  const kill = () => {
    for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  };
  const unregister = onCleanup(kill);
  try {
    let first = 0;
    const ready: Promise<unknown>[] = [];
    for (let i = 0; i < workers; i++) {
      const clients = Math.floor(spec.clients / workers) + (i < spec.clients % workers ? 1 : 0);
      const w = fork(WORKER, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      procs.push(w);
      let op = spec.op;
      if (op.kind === 'fill') {
        // Each worker fills its own contiguous share of the key range.
        const share = Math.ceil((op.to - op.from) / workers);
        op = { ...op, from: Math.min(op.to, op.from + i * share), to: Math.min(op.to, op.from + (i + 1) * share) };
      }
      const job: LoadJob = {
        endpoints: spec.endpoints,
        tls: spec.tls,
        clients,
        firstClient: first,
        op,
        valueSize: spec.valueSize,
        durationMs: spec.durationMs,
      };
      first += clients;
      ready.push(expect(w, 'ready', 30_000));
      w.send({ type: 'job', job } satisfies ToWorker);
    }
    await Promise.all(ready);
    const done = procs.map((w) => expect(w, 'done', spec.durationMs + 60_000));
    for (const w of procs) w.send({ type: 'go' } satisfies ToWorker);
    const results = await Promise.all(done);

    const merged = hdr.build(HISTOGRAM);
    for (const r of results) merged.add(hdr.decodeFromCompressedBase64(r.histogram));
    const ops = results.reduce((s, r) => s + r.ops, 0);
    const seconds = Math.max(...results.map((r) => r.seconds));
    return {
      clients: spec.clients,
      ops,
      errors: results.reduce((s, r) => s + r.errors, 0),
      firstError: results.find((r) => r.firstError)?.firstError,
      seconds,
      perSecond: ops / seconds,
      p50Ms: merged.getValueAtPercentile(50) / 1000,
      p99Ms: merged.getValueAtPercentile(99) / 1000,
      p999Ms: merged.getValueAtPercentile(99.9) / 1000,
      maxMs: merged.maxValue / 1000,
    };
  } finally {
    kill();
    unregister();
  }
}
