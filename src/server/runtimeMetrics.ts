// What the Node runtime does to a member, under prom-client's names (the Node
// metrics dashboards know): event-loop delay, sampled every 20 ms by
// monitorEventLoopDelay (its min, max, mean, stddev and percentiles since the last
// scrape, as prom-client reports them), and GC pauses by kind. A stall of the loop
// holds every request, heartbeat and fsync behind it: these say when and how long.
import { constants, monitorEventLoopDelay, performance, PerformanceObserver, type IntervalHistogram } from 'node:perf_hooks';
import v8 from 'node:v8';
import { Histogram } from './metrics.js';

/** prom-client's buckets for nodejs_gc_duration_seconds. */
const GC_BUCKETS = [0.001, 0.01, 0.1, 1, 2, 5];

const GC_KINDS: Record<number, string> = {
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};

/** GC pauses kept for the stall watchdog's blame (stallWatchdog.ts). */
const RECENT_GC = 64;

const gauge = (name: string, help: string, v: number) => `# HELP ${name} ${help}\n# TYPE ${name} gauge\n${name} ${v}`;

export class RuntimeMetrics {
  private delay: IntervalHistogram | undefined;
  private gcObserver: PerformanceObserver | undefined;
  readonly gc = new Map<string, Histogram>(Object.values(GC_KINDS).map((k) => [k, new Histogram(GC_BUCKETS)]));
  /** The last GC pauses, [start, end] in ms since the epoch (performance.timeOrigin-based): gcDuring. */
  private readonly recentGc: Array<[number, number]> = [];

  start(): void {
    if (this.delay) return;
    this.delay = monitorEventLoopDelay({ resolution: 20 });
    this.delay.enable();
    this.gcObserver = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        const kind = GC_KINDS[(e as { detail?: { kind?: number } }).detail?.kind ?? -1];
        if (kind) this.gc.get(kind)?.observe(e.duration / 1000);
        const start = performance.timeOrigin + e.startTime;
        this.recentGc.push([start, start + e.duration]);
        if (this.recentGc.length > RECENT_GC) this.recentGc.shift();
      }
    });
    this.gcObserver.observe({ entryTypes: ['gc'] });
  }

  /** ms of GC pause between `start` and `end` (ms since the epoch), of the last RECENT_GC pauses. */
  gcDuring(start: number, end: number): number {
    return this.recentGc.reduce((ms, [s, e]) => ms + Math.max(0, Math.min(e, end) - Math.max(s, start)), 0);
  }

  stop(): void {
    this.delay?.disable();
    this.gcObserver?.disconnect();
    this.delay = undefined;
    this.gcObserver = undefined;
  }

  /** The figures since the last scrape (the delay histogram starts over, as prom-client's does). */
  render(): string {
    const d = this.delay;
    const lines: string[] = [];
    if (d) {
      // Nanoseconds; an empty histogram (no sample yet) reports min as a huge number.
      const s = (ns: number) => (d.count > 0 && Number.isFinite(ns) ? ns / 1e9 : 0);
      lines.push(
        gauge('nodejs_eventloop_lag_seconds', 'Longest event-loop delay since the last scrape, in seconds.', s(d.max)),
        gauge('nodejs_eventloop_lag_min_seconds', 'The minimum recorded event loop delay.', s(d.min)),
        gauge('nodejs_eventloop_lag_max_seconds', 'The maximum recorded event loop delay.', s(d.max)),
        gauge('nodejs_eventloop_lag_mean_seconds', 'The mean of the recorded event loop delays.', s(d.mean)),
        gauge('nodejs_eventloop_lag_stddev_seconds', 'The standard deviation of the recorded event loop delays.', s(d.stddev)),
        gauge('nodejs_eventloop_lag_p50_seconds', 'The 50th percentile of the recorded event loop delays.', s(d.percentile(50))),
        gauge('nodejs_eventloop_lag_p90_seconds', 'The 90th percentile of the recorded event loop delays.', s(d.percentile(90))),
        gauge('nodejs_eventloop_lag_p99_seconds', 'The 99th percentile of the recorded event loop delays.', s(d.percentile(99))),
      );
      d.reset();
    }
    const help = 'Garbage collection duration by kind, one of major, minor, incremental or weakcb.';
    const gc = [...this.gc].map(([kind, h], i) => h.render('nodejs_gc_duration_seconds', help, `kind="${kind}"`, i === 0));
    return [...lines, ...gc, memory()].join('\n');
  }
}

/**
 * What the process's memory is made of, under prom-client's names (plus the array
 * buffers, which it leaves out): `npm run bench -- cluster` prints an idle member's
 * RSS broken down by these. Cheap enough per scrape (no heap walk).
 */
function memory(): string {
  const m = process.memoryUsage();
  const spaces = v8.getHeapSpaceStatistics();
  // prom-client's label: the space's name without its _space suffix (code, old, new, ...).
  const space = (s: v8.HeapSpaceInfo) => s.space_name.replace(/_space$/, '');
  const perSpace = (name: string, help: string, pick: (s: v8.HeapSpaceInfo) => number) =>
    [`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, ...spaces.map((s) => `${name}{space="${space(s)}"} ${pick(s)}`)].join('\n');
  return [
    gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', m.rss),
    gauge('nodejs_heap_size_total_bytes', 'Process heap size from Node.js in bytes.', m.heapTotal),
    gauge('nodejs_heap_size_used_bytes', 'Process heap size used from Node.js in bytes.', m.heapUsed),
    gauge('nodejs_external_memory_bytes', 'Node.js external memory size in bytes.', m.external),
    gauge('lifeboat_nodejs_array_buffers_bytes', 'Memory of ArrayBuffers and Buffers (part of the external memory), in bytes.', m.arrayBuffers),
    perSpace('nodejs_heap_space_size_total_bytes', 'Process heap space size total from Node.js in bytes.', (s) => s.space_size),
    perSpace('nodejs_heap_space_size_used_bytes', 'Process heap space size used from Node.js in bytes.', (s) => s.space_used_size),
  ].join('\n');
}
