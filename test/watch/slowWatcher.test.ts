// A watcher whose client stops reading while thousands of events are written.
// Lifeboat's documented policy (src/server/watchHub.ts): the member stops writing
// to the stream once about 1 MiB waits unsent, the watcher falls behind with its
// place kept as a revision, and it catches up from history when the client reads
// again, every event once and in order; only a compaction past its place cancels
// it (with compact_revision set, as etcd). Memory is measured by the member's own
// count of unsent watch bytes (/metrics), sampled while the events are written.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, waitFor } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';
import { RawKv, RawWatch } from './watchClients.js';

/** The stream budget (1 MiB) plus one history batch (512 KiB) plus slack for estimates. */
const PENDING_BOUND = 2 * 1024 * 1024;
const VALUE = Buffer.alloc(16 * 1024, 'v');

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(url)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.split(' ')[1]) : NaN;
}

async function writeMany(kv: RawKv, prefix: string, n: number, parallel = 50): Promise<void> {
  for (let i = 0; i < n; i += parallel) {
    await Promise.all(Array.from({ length: Math.min(parallel, n - i) }, (_, j) => kv.put(`${prefix}${String(i + j).padStart(5, '0')}`, VALUE)));
  }
}

function rssOf(pid: number | undefined): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

describe('a slow watcher', () => {
  let c: LifeboatCluster;
  let metrics: string;
  before(async () => {
    const [port] = await freePorts(1, 'slow-watcher-metrics');
    metrics = `http://127.0.0.1:${port}/metrics`;
    c = await LifeboatCluster.start('slowwatch', 1, ['--listen-metrics-urls', `http://127.0.0.1:${port}`]);
  });
  after(async () => c?.stopAll());

  test('3000 events of 16 KiB while it does not read: unsent bytes stay bounded, then it catches up from history', async () => {
    const m = c.members[0];
    const kv = new RawKv(m.client);
    const watch = new RawWatch(m.client);
    try {
      watch.create({ key: 'sw/', range_end: 'sw0' });
      await watch.waitCreated();
      watch.pause();
      const rssBefore = rssOf(m.proc?.pid);
      let maxPending = 0;
      let sawSlow = false;
      let sampling = true;
      const sampler = (async () => {
        while (sampling) {
          maxPending = Math.max(maxPending, await metric(metrics, 'lifeboat_watch_stream_pending_bytes_max'));
          sawSlow ||= (await metric(metrics, 'etcd_debugging_mvcc_slow_watcher_total')) === 1;
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      const N = 3000;
      await writeMany(kv, 'sw/', N);
      await new Promise((r) => setTimeout(r, 300));
      sampling = false;
      await sampler;
      const rssAfter = rssOf(m.proc?.pid);
      const written = N * VALUE.length;
      assert.ok(sawSlow, 'the watcher was never reported behind');
      assert.ok(
        maxPending > 0 && maxPending <= PENDING_BOUND,
        `unsent watch bytes peaked at ${maxPending}, bound ${PENDING_BOUND} (events written: ${written} bytes)`,
      );
      const received = watch.events().length;
      assert.ok(received < N / 4, `the paused client received ${received} events already`);
      // For the record (RSS also holds SQLite's page cache, so it is not asserted).
      console.log(`# ${written} bytes of events written; unsent watch bytes peaked at ${maxPending}; member RSS ${rssBefore} -> ${rssAfter}`);

      watch.resume();
      await waitFor('the watcher to catch up', () => watch.events().length >= N, 30_000, 50);
      const seen = watch.events();
      assert.equal(seen.length, N);
      const revs = seen.map((e) => e.mod);
      for (let i = 1; i < revs.length; i++) assert.equal(revs[i], revs[i - 1] + 1, 'every revision once, in order');
      assert.equal(new Set(seen.map((e) => e.key)).size, N);
      await waitFor('the watcher to be in sync again', async () => (await metric(metrics, 'etcd_debugging_mvcc_slow_watcher_total')) === 0);
      assert.equal(await metric(metrics, 'lifeboat_watch_pending_bytes'), 0);
    } finally {
      watch.close();
      kv.close();
    }
  });

  test('a watch that asks for fragments gets a large revision in pieces, every piece but the last marked', async () => {
    const m = c.members[0];
    const kv = new RawKv(m.client);
    const watch = new RawWatch(m.client);
    try {
      // 90 keys of 16 KiB in one revision, then all overwritten in one more: with
      // prev_kv the second revision's response is ~3 MB, above the 1.5 MiB limit.
      const ops = (v: string) =>
        Array.from({ length: 90 }, (_, i) => ({ request_put: { key: Buffer.from(`fr/${String(i).padStart(2, '0')}`), value: Buffer.alloc(16 * 1024, v) } }));
      await kv.txn(ops('a'));
      const rev = Number((await kv.txn(ops('b'))).header.revision);
      watch.create({ key: 'fr/', range_end: 'fr0', start_revision: rev, prev_kv: true, fragment: true });
      await waitFor('every event', () => watch.events().length >= 90);
      const parts = watch.responses.filter((r) => r.events.length > 0);
      assert.ok(parts.length >= 2, `${parts.length} responses`);
      assert.deepEqual(
        parts.map((p) => p.fragment),
        [...parts.slice(1).map(() => true), false],
      );
      assert.ok(watch.events().every((e) => e.mod === rev && e.value.startsWith('b')));
      assert.ok(parts.every((p) => p.events.every((e) => e.prev_kv?.value.toString().startsWith('a'))));
    } finally {
      watch.close();
      kv.close();
    }
  });

  test('compacted past its place while it lagged: cancelled with compact_revision after the events it had', async () => {
    const m = c.members[0];
    const kv = new RawKv(m.client);
    const watch = new RawWatch(m.client);
    try {
      const start = Number((await kv.range('none')).header.revision) + 1;
      watch.create({ key: 'sc/', range_end: 'sc0', start_revision: start });
      await watch.waitCreated();
      watch.pause();
      await writeMany(kv, 'sc/', 400);
      const rev = Number((await kv.range('none')).header.revision);
      await kv.compact(rev);
      watch.resume();
      const cancel = await waitFor('the cancellation', () => watch.responses.find((r) => r.canceled));
      assert.equal(Number(cancel.compact_revision), rev);
      assert.equal(cancel.cancel_reason, 'etcdserver: mvcc: required revision has been compacted');
      const revs = watch.events().map((e) => e.mod);
      assert.ok(revs.length < 400, 'it was cancelled before catching up');
      assert.deepEqual(
        revs,
        Array.from({ length: revs.length }, (_, i) => start + i),
        'what it got before is contiguous from its start',
      );
      assert.equal(watch.responses.at(-1), cancel, 'nothing after the cancellation');
    } finally {
      watch.close();
      kv.close();
    }
  });
});
