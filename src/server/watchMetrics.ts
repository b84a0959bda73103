// The member's metrics plus its watchers and leases, under etcd's names where etcd
// has one (etcd_debugging_mvcc_*, etcd_debugging_lease_*) and lifeboat_watch_* for
// the bytes waiting on slow watch streams, the number that shows memory is bounded.
import type { ServerTlsOptions } from '../net/tlsTermination.js';
import { Histogram, Metrics } from './metrics.js';
import { RuntimeMetrics } from './runtimeMetrics.js';
import { STALL_MS, StallWatchdog, type Stall } from './stallWatchdog.js';
import type { WatchStats } from './watchHub.js';

export interface LeaseStats {
  leases: number;
  granted: number;
  revoked: number;
  expired: number;
}

export class MemberMetrics extends Metrics {
  watchStats: () => WatchStats | undefined = () => undefined;
  leaseStats: () => LeaseStats | undefined = () => undefined;
  /** Event-loop delay and GC pauses, measured while /metrics is served. */
  readonly runtime = new RuntimeMetrics();
  /** SQLite's COMMIT of the applies kv.db holds (kvStore.ts commitDelayMs), on the event loop. */
  readonly kvCommit = new Histogram();
  /** kv.db checkpoints (its WAL into the file, fsynced), in the store's worker (checkpoints.ts). */
  readonly kvCheckpoint = new Histogram();
  /** Stalls of the event loop over STALL_MS, by cause; told to onStall (the member logs each). */
  readonly stalls = new Map<string, { count: number; seconds: Histogram; cpuSeconds: number }>();
  onStall: (s: Stall) => void = () => {};
  /** The most kv.db's page cache may hold (PRAGMA cache_size); it holds at most the file's pages. */
  kvPageCacheLimit: () => number = () => 0;
  private readonly watchdog = new StallWatchdog(
    this.spans,
    (start, end) => this.runtime.gcDuring(start, end),
    (s) => this.stalled(s),
  );

  private stalled(s: Stall): void {
    let c = this.stalls.get(s.cause);
    if (!c) this.stalls.set(s.cause, (c = { count: 0, seconds: new Histogram(), cpuSeconds: 0 }));
    c.count++;
    c.seconds.observe(s.ms / 1000);
    c.cpuSeconds += s.cpuMs / 1000;
    this.onStall(s);
  }

  override async listen(urls: string[], tls?: ServerTlsOptions): Promise<void> {
    if (urls.length > 0) {
      this.runtime.start();
      this.watchdog.start();
    }
    await super.listen(urls, tls);
  }

  override async close(): Promise<void> {
    this.runtime.stop();
    await this.watchdog.stop();
    await super.close();
  }

  override render(): string {
    const g = (name: string, help: string, type: 'counter' | 'gauge', v: number) => `# HELP ${name} ${help}\n# TYPE ${name} ${type}\n${name} ${v}`;
    const lines: string[] = [
      this.kvCommit.render('lifeboat_kv_commit_duration_seconds', "Duration of SQLite's commits of the applies kv.db holds (on the event loop)."),
      this.kvCheckpoint.render(
        'lifeboat_kv_checkpoint_duration_seconds',
        "Duration of kv.db's checkpoints (WAL into the file, then fsync), in the store's worker.",
      ),
      this.runtime.render(),
      g(
        'lifeboat_kv_page_cache_limit_bytes',
        "The most SQLite's page cache of kv.db may hold (PRAGMA cache_size); it holds no more than the file's pages.",
        'gauge',
        this.kvPageCacheLimit(),
      ),
      g(
        'lifeboat_stall_watchdog_worker_running',
        "Whether the stall watchdog's worker thread runs (it starts at the first stall).",
        'gauge',
        this.watchdog.workerRunning ? 1 : 0,
      ),
      [...this.stalls]
        .map(([cause, c], i) =>
          c.seconds.render(
            'lifeboat_eventloop_stall_duration_seconds',
            `Event-loop stalls over ${STALL_MS} ms, by what the loop was running (other, fsync, apply, snapshot, commit, gc).`,
            `cause="${cause}"`,
            i === 0,
          ),
        )
        .join('\n'),
      [
        '# HELP lifeboat_eventloop_stall_cpu_seconds_total CPU time of the whole process (every thread) during the stalls, by cause: near their duration, our own work; near 0, the machine did not run us.',
        '# TYPE lifeboat_eventloop_stall_cpu_seconds_total counter',
        ...[...this.stalls].map(([cause, c]) => `lifeboat_eventloop_stall_cpu_seconds_total{cause="${cause}"} ${c.cpuSeconds}`),
      ].join('\n'),
    ].filter((s) => s !== '');
    const w = this.watchStats();
    if (w) {
      lines.push(
        g('etcd_debugging_mvcc_watch_stream_total', 'Total number of watch streams.', 'gauge', w.streams),
        g('etcd_debugging_mvcc_watcher_total', 'Total number of watchers.', 'gauge', w.watchers),
        g('etcd_debugging_mvcc_slow_watcher_total', 'Total number of unsynced slow watchers.', 'gauge', w.slowWatchers),
        g('etcd_debugging_mvcc_events_total', 'Total number of events sent by this member.', 'counter', w.eventsSent),
        g('lifeboat_watch_pending_bytes', 'Bytes written to watch streams and not yet sent to their clients, all streams.', 'gauge', w.pendingBytes),
        g('lifeboat_watch_stream_pending_bytes_max', 'Bytes waiting to be sent on the most backed-up watch stream.', 'gauge', w.maxStreamPendingBytes),
        g('lifeboat_watch_compacted_cancels_total', 'Watches cancelled because their next revision was compacted.', 'counter', w.compactedCancels),
      );
    }
    const l = this.leaseStats();
    if (l) {
      lines.push(
        g('etcd_debugging_lease_total', 'The number of leases.', 'gauge', l.leases),
        g('etcd_debugging_lease_granted_total', 'The total number of granted leases.', 'counter', l.granted),
        g('etcd_debugging_lease_revoked_total', 'The total number of revoked leases.', 'counter', l.revoked),
        g('lifeboat_lease_expired_total', 'Leases this member found expired (as leader) and proposed to revoke.', 'counter', l.expired),
      );
    }
    return super.render() + (lines.length > 0 ? lines.join('\n') + '\n' : '');
  }
}
