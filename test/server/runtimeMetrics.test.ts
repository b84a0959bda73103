// A member's /metrics says where its time went: event-loop delay and GC pauses
// (prom-client's names), and how long fsyncs of its log, SQLite's commits of kv.db
// and kv.db's checkpoints took, as histograms.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, etcdctl, waitFor } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';

/** A histogram's `_count` (of the series with `labels`) in a /metrics text, or undefined when absent. */
function histogramCount(text: string, name: string, labels = ''): number | undefined {
  const m = new RegExp(`^${name}_count${labels ? `\\{${labels}\\}` : ''} (\\d+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

const gauge = (text: string, name: string): number | undefined => {
  const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
};

describe('runtime and storage metrics', () => {
  let c: LifeboatCluster;
  let metricsUrl: string;
  before(async () => {
    const [port] = await freePorts(1, 'runtime-metrics');
    metricsUrl = `http://127.0.0.1:${port}`;
    c = await LifeboatCluster.create('runtimemetrics', 1);
    const m = c.define('m1');
    c.members.push(m);
    // A checkpoint of kv.db every 20 applied entries.
    c.spawn(m, ['--initial-cluster', c.initialCluster(), '--initial-cluster-state', 'new', '--listen-metrics-urls', metricsUrl, '--snapshot-count', '20']);
    await c.waitStarted(1);
  });
  after(async () => c?.stopAll());

  test('event-loop delay, GC pauses by kind, fsync, kv.db commit and checkpoint durations', async () => {
    const scrape = async () => (await fetch(`${metricsUrl}/metrics`)).text();
    const first = await scrape();
    for (const name of ['min', 'max', 'mean', 'stddev', 'p50', 'p90', 'p99']) {
      assert.ok(gauge(first, `nodejs_eventloop_lag_${name}_seconds`) !== undefined, `nodejs_eventloop_lag_${name}_seconds in ${first}`);
    }
    assert.match(first, /^# TYPE nodejs_gc_duration_seconds histogram$/m);
    assert.equal(first.match(/^# TYPE nodejs_gc_duration_seconds histogram$/gm)?.length, 1, 'one HELP/TYPE for all kinds');
    for (let i = 0; i < 40; i++) {
      const r = await etcdctl(c.members[0].client, 'put', `runtime/${i}`, 'x'.repeat(1000));
      assert.equal(r.code, 0, r.stderr);
    }
    const text = await waitFor('a kv.db commit, a checkpoint and a GC in /metrics', async () => {
      const t = await scrape();
      const counts = [
        histogramCount(t, 'etcd_disk_wal_fsync_duration_seconds'),
        histogramCount(t, 'lifeboat_kv_commit_duration_seconds'),
        histogramCount(t, 'lifeboat_kv_checkpoint_duration_seconds'),
        ['major', 'minor', 'incremental', 'weakcb'].reduce((n, kind) => n + (histogramCount(t, 'nodejs_gc_duration_seconds', `kind="${kind}"`) ?? 0), 0),
      ];
      return counts.every((n) => n !== undefined && n > 0) && t;
    });
    const lag = gauge(text, 'nodejs_eventloop_lag_seconds');
    assert.ok(lag !== undefined && lag > 0 && lag < 10, `nodejs_eventloop_lag_seconds ${lag}`);
    assert.ok(gauge(text, 'nodejs_eventloop_lag_p99_seconds')! >= gauge(text, 'nodejs_eventloop_lag_p50_seconds')!, 'p99 >= p50');
  });

  test("what the member's memory is made of: RSS, V8 heap and its spaces, external and array buffers, kv.db's page cache limit", async () => {
    const text = await (await fetch(`${metricsUrl}/metrics`)).text();
    const rss = gauge(text, 'process_resident_memory_bytes')!;
    const heapUsed = gauge(text, 'nodejs_heap_size_used_bytes')!;
    const heapTotal = gauge(text, 'nodejs_heap_size_total_bytes')!;
    assert.ok(rss > 10 * 2 ** 20 && heapUsed > 0 && heapUsed <= heapTotal && heapTotal < rss, `rss ${rss}, heap ${heapUsed} of ${heapTotal}`);
    assert.ok(gauge(text, 'nodejs_external_memory_bytes')! >= gauge(text, 'lifeboat_nodejs_array_buffers_bytes')!);
    assert.match(text, /^nodejs_heap_space_size_used_bytes\{space="code"\} \d+$/m);
    assert.match(text, /^nodejs_heap_space_size_total_bytes\{space="old"\} \d+$/m);
    // kvSchema.ts: cache_size = -65536 (KiB).
    assert.equal(gauge(text, 'lifeboat_kv_page_cache_limit_bytes'), 64 * 2 ** 20);
  });

  test('a stall of the member (stopped 400 ms) is logged and counted, with the little CPU it used: the machine, not its own work', async () => {
    const m = c.members[0];
    const pid = m.proc!.pid!;
    const logged = () => m.log.filter((l) => l.includes('event loop stalled'));
    const before = logged().length;
    const scrape = async () => (await fetch(`${metricsUrl}/metrics`)).text();
    const workerBefore = gauge(await scrape(), 'lifeboat_stall_watchdog_worker_running');
    assert.ok(workerBefore === 0 || workerBefore === 1, `lifeboat_stall_watchdog_worker_running ${workerBefore}`);
    process.kill(pid, 'SIGSTOP');
    try {
      await sleep(400);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    const line = await waitFor('the stall in the log', () => logged()[before]);
    const stall = JSON.parse(line) as { ms: number; cause: string; cpuMs: number };
    assert.ok(stall.ms >= 300, `stall of ${stall.ms} ms`);
    assert.ok(stall.cpuMs < stall.ms / 2, `CPU ${stall.cpuMs} ms over a ${stall.ms} ms stall`);
    const text = await scrape();
    // A stall off CPU is the machine's (or a blocking call's): it starts no worker to sample the loop.
    assert.equal(gauge(text, 'lifeboat_stall_watchdog_worker_running'), workerBefore);
    assert.ok((histogramCount(text, 'lifeboat_eventloop_stall_duration_seconds', `cause="${stall.cause}"`) ?? 0) >= 1, text);
    assert.match(text, new RegExp(`^lifeboat_eventloop_stall_cpu_seconds_total\\{cause="${stall.cause}"\\} \\S+$`, 'm'));
  });
});
