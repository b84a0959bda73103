// Finds the event loop's stalls from outside it: a worker thread watches the
// heartbeat the loop bumps every 25 ms (spanMarker.ts); a beat more than STALL_MS
// late is a stall, blamed on the span the loop was seen in most while stuck (an
// fsync, an apply, a snapshot), or on GC when a GC pause covered most of it, and
// measured with the process's CPU time over it: a stall with little CPU is the
// machine descheduling us (or a blocking call), one with a full core our own work.
import { Worker } from 'node:worker_threads';
import { SPANS, type SpanMarker } from './spanMarker.js';

/** A stall is a heartbeat this much later than due. */
export const STALL_MS = 50;
// The loop and the watchdog each wake 40 times a second. An idle member serving
// metrics (this and runtimeMetrics.ts) used 0.30-0.34 s of CPU per 20 s against
// 0.08 s without, and about 12 MiB more RSS (the worker's isolate).
const BEAT_MS = 25;

export interface Stall {
  /** how long the loop did not run, ms */
  ms: number;
  /** the span the loop was in, or 'gc' */
  cause: string;
  /** CPU time of the whole process (every thread) over the stall, ms */
  cpuMs: number;
  /** when it began (performance.timeOrigin + now, ms) */
  start: number;
}

// The watchdog thread (CommonJS, evaluated: no file to find beside a bundle). Each
// tick it reads the heartbeat; while it is stuck, it samples the span.
const WATCHDOG = `
const { parentPort, workerData } = require('node:worker_threads');
const cells = new Int32Array(workerData.buffer);
const { stallMs, beatMs, spans } = workerData;
const now = () => performance.timeOrigin + performance.now();
let last = Atomics.load(cells, 0), lastAt = now(), lastCpu = process.cpuUsage(), samples = undefined;
setInterval(() => {
  const t = now();
  const beat = Atomics.load(cells, 0);
  if (beat === last) {
    if (t - lastAt > stallMs + beatMs) {
      samples ??= new Array(spans.length).fill(0);
      samples[Atomics.load(cells, 1)]++;
    }
    return;
  }
  // A stall seen only now (this thread was not run meanwhile either) is blamed on the span the loop is in.
  if (samples || t - lastAt > stallMs + beatMs) {
    const cpu = process.cpuUsage(lastCpu);
    const cause = samples ? spans[samples.indexOf(Math.max(...samples))] : spans[Atomics.load(cells, 1)];
    parentPort.postMessage({ ms: t - lastAt - beatMs, cause, cpuMs: (cpu.user + cpu.system) / 1000, start: lastAt });
    samples = undefined;
  }
  last = beat;
  lastAt = t;
  lastCpu = process.cpuUsage();
}, beatMs);
`;

export class StallWatchdog {
  private worker: Worker | undefined;
  private timer: NodeJS.Timeout | undefined;

  /** `gcDuring(start, end)`: ms of GC pause within that window (the runtime metrics' record). */
  constructor(
    private readonly marker: SpanMarker,
    private readonly gcDuring: (start: number, end: number) => number,
    private readonly onStall: (s: Stall) => void,
  ) {}

  start(): void {
    if (this.worker) return;
    this.timer = setInterval(() => this.marker.beat(), BEAT_MS);
    this.timer.unref();
    this.worker = new Worker(WATCHDOG, { eval: true, workerData: { buffer: this.marker.buffer, stallMs: STALL_MS, beatMs: BEAT_MS, spans: SPANS } });
    this.worker.unref();
    this.worker.on('message', (s: Stall) => {
      const cause = this.gcDuring(s.start, s.start + s.ms) >= s.ms / 2 ? 'gc' : s.cause;
      this.onStall({ ...s, cause });
    });
    this.worker.on('error', () => (this.worker = undefined));
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    const w = this.worker;
    this.worker = undefined;
    await w?.terminate();
  }
}
