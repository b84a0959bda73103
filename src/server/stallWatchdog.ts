// Finds the event loop's stalls from outside it: a worker thread watches the
// heartbeat the loop bumps every 25 ms (spanMarker.ts); a beat more than STALL_MS
// late is a stall, blamed on the span the loop was seen in most while stuck (an
// fsync, an apply, a snapshot), or on GC when a GC pause covered most of it, and
// measured with the process's CPU time over it: a stall with little CPU is the
// machine descheduling us (or a blocking call), one with a full core our own work.
// The worker (an isolate of its own, about 12 MiB) starts only at a stall on CPU
// that no span names: until then the loop finds its stalls itself, from a beat that
// came late, and blames the span with the longest own time since the last beat when
// it covers half the stall (or GC), so a member that stalls only in its spans, or
// only when the machine does not run it, carries no worker.
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

const now = () => performance.timeOrigin + performance.now();

export class StallWatchdog {
  private worker: Worker | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Until the worker runs: when the loop last beat, and the process's CPU time then. */
  private lastBeat = 0;
  private lastCpu: NodeJS.CpuUsage | undefined;

  /** `gcDuring(start, end)`: ms of GC pause within that window (the runtime metrics' record). */
  constructor(
    private readonly marker: SpanMarker,
    private readonly gcDuring: (start: number, end: number) => number,
    private readonly onStall: (s: Stall) => void,
  ) {}

  start(): void {
    if (this.timer) return;
    this.lastBeat = now();
    this.lastCpu = process.cpuUsage();
    this.timer = setInterval(() => this.beat(), BEAT_MS);
    this.timer.unref();
  }

  /** Whether the worker runs (it starts at the first stall). */
  get workerRunning(): boolean {
    return this.worker !== undefined;
  }

  private beat(): void {
    this.marker.beat();
    if (this.worker || !this.timer) return;
    const t = now();
    const late = t - this.lastBeat - BEAT_MS;
    const cpu = process.cpuUsage(this.lastCpu);
    const longest = this.marker.takeLongest();
    if (late > STALL_MS) {
      const cpuMs = (cpu.user + cpu.system) / 1000;
      const cause = this.report({ ms: late, cause: longest.ms >= late / 2 ? longest.span : 'other', cpuMs, start: this.lastBeat });
      // Our own work the spans do not name: from now on the worker samples what the loop runs while stuck.
      if (cause === 'other' && cpuMs >= late / 2) this.startWorker();
    }
    this.lastBeat = t;
    this.lastCpu = process.cpuUsage();
  }

  /** Tells onStall, blamed on GC when GC pauses covered half of it; returns the cause told. */
  private report(s: Stall): string {
    const cause = this.gcDuring(s.start, s.start + s.ms) >= s.ms / 2 ? 'gc' : s.cause;
    this.onStall({ ...s, cause });
    return cause;
  }

  private startWorker(): void {
    const w = new Worker(WATCHDOG, { eval: true, workerData: { buffer: this.marker.buffer, stallMs: STALL_MS, beatMs: BEAT_MS, spans: SPANS } });
    this.worker = w;
    w.unref();
    w.on('message', (s: Stall) => void this.report(s));
    w.on('error', () => {
      // Back to finding stalls on the loop (and starting a worker at the next one).
      if (this.worker === w) this.worker = undefined;
      this.lastBeat = now();
      this.lastCpu = process.cpuUsage();
    });
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    const w = this.worker;
    this.worker = undefined;
    await w?.terminate();
  }
}
