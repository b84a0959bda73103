// The watch hub in-process, on an in-memory store: what a watch stream is sent
// (created first, history, live events, filters, prev_kv, cancel, compaction),
// batches that never split a revision, a slow client caught up from history, and
// a store replaced under the watchers (a snapshot installed from the leader).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { fragments, type WatchCreate, type WatchResponseOut, type WatchSession, type WatchSink } from '../../src/api/watchService.js';
import { ErrCompacted } from '../../src/api/errors.js';
import { EventType } from '../../src/kv/types.js';
import type { KvStore } from '../../src/kv/kvStore.js';
import { createLogger } from '../../src/server/logger.js';
import { ErrWatcherDuplicateId, ErrWatcherRangeEmpty, WatchHub } from '../../src/server/watchHub.js';
import { Applier, b } from '../kv/kvFixture.js';

class FakeSink implements WatchSink {
  readonly out: Array<WatchResponseOut & { fragment?: boolean }> = [];
  blocked = false;
  session?: WatchSession;
  send(r: WatchResponseOut, fragment: boolean): void {
    if (fragment) this.out.push(...fragments(r, 200));
    else this.out.push(r);
  }
  writable(): boolean {
    return !this.blocked;
  }
  pendingBytes(): number {
    return 0;
  }
  /** Responses carrying events, as "PUT k=v@rev" strings. */
  events(): string[] {
    return this.out.flatMap((r) =>
      r.events.map(
        (e) =>
          `${e.type === EventType.Put ? 'PUT' : 'DEL'} ${e.kv.key.toString()}${e.type === EventType.Put ? `=${e.kv.value.toString()}` : ''}@${e.kv.modRevision}${e.prevKv ? ` prev=${e.prevKv.value.toString()}` : ''}`,
      ),
    );
  }
}

const settle = async () => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

const create = (o: Omit<Partial<WatchCreate>, 'key'> & { key: string }): WatchCreate => ({
  rangeEnd: Buffer.alloc(0),
  startRevision: 0,
  progressNotify: false,
  noPut: false,
  noDelete: false,
  prevKv: false,
  watchId: 0n,
  fragment: false,
  ...o,
  key: b(o.key),
});

function setup(store?: () => KvStore) {
  const a = Applier.memory();
  const hub = new WatchHub(store ?? (() => a.kv), createLogger({}, 'silent'));
  const sink = new FakeSink();
  const session = hub.open(sink);
  sink.session = session;
  return { a, hub, sink, session };
}

describe('watch hub', () => {
  test('created first at the current revision, then live events, one response per revision', async () => {
    const { a, hub, sink, session } = setup();
    a.put('x', '0');
    session.create(create({ key: 'k', rangeEnd: b('l') }));
    assert.deepEqual(sink.out[0], { watchId: 0n, revision: 2, created: true, events: [] });
    a.put('k1', 'a');
    hub.notify();
    await settle();
    a.txn({
      success: [
        { requestPut: { key: b('k2'), value: b('b') } },
        { requestPut: { key: b('k3'), value: b('c') } },
        { requestPut: { key: b('zz'), value: b('-') } },
      ],
    });
    hub.notify();
    await settle();
    assert.deepEqual(sink.events(), ['PUT k1=a@3', 'PUT k2=b@4', 'PUT k3=c@4']);
    assert.deepEqual(
      sink.out.slice(1).map((r) => [r.revision, r.events.length]),
      [
        [3, 1],
        [4, 2],
      ],
    );
    hub.stop();
  });

  test('start_revision replays history from before the watch, with prev_kv and delete events', async () => {
    const { a, hub, sink, session } = setup();
    a.put('k', '1'); // 2
    a.put('k', '2'); // 3
    a.del('k'); // 4
    a.put('k', '3'); // 5
    session.create(create({ key: 'k', startRevision: 2, prevKv: true }));
    await settle();
    assert.deepEqual(sink.events(), ['PUT k=1@2', 'PUT k=2@3 prev=1', 'DEL k@4 prev=2', 'PUT k=3@5']);
    const del = sink.out[3].events[0];
    assert.equal(del.kv.modRevision, 4);
    assert.equal(del.kv.createRevision, 0);
    // One response per revision, each with that revision in its header (as etcd).
    assert.deepEqual(
      sink.out.slice(1).map((r) => r.revision),
      [2, 3, 4, 5],
    );
    hub.stop();
  });

  test('filters, prefix and from-key ranges; the empty key means "\\0"', async () => {
    const { a, hub, sink, session } = setup();
    session.create(create({ key: 'p/', rangeEnd: b('p0'), noDelete: true, watchId: 7n }));
    session.create(create({ key: 'p/', rangeEnd: b('p0'), noPut: true, watchId: 8n }));
    session.create(create({ key: '', rangeEnd: Buffer.from([0]), watchId: 9n }));
    a.put('p/a', '1');
    a.put('q', '2');
    a.del('p/a');
    hub.notify();
    await settle();
    const by = (id: bigint) => sink.out.filter((r) => r.watchId === id).flatMap((r) => r.events.map((e) => `${e.type}:${e.kv.key.toString()}`));
    assert.deepEqual(by(7n), ['0:p/a']);
    assert.deepEqual(by(8n), ['1:p/a']);
    assert.deepEqual(by(9n), ['0:p/a', '0:q', '1:p/a']);
    hub.stop();
  });

  test('a revision with more events than a batch goes out whole', async () => {
    const { a, hub, sink, session } = setup();
    const puts = Array.from({ length: 1500 }, (_, i) => ({ requestPut: { key: b(`t/${String(i).padStart(4, '0')}`), value: b('v') } }));
    a.txn({ success: puts }); // 2
    a.put('t/x', '1'); // 3
    session.create(create({ key: 't/', rangeEnd: b('t0'), startRevision: 1 }));
    await settle();
    const responses = sink.out.filter((r) => r.events.length > 0);
    assert.equal(responses[0].events.length, 1500);
    assert.ok(responses[0].events.every((e) => e.kv.modRevision === 2));
    assert.equal(sink.events().length, 1501);
    // The store's history read itself: 10 rows asked, revisions kept whole.
    const batch = a.kv.history(null, 2, 3, { rows: 10, bytes: 1 << 20 });
    assert.equal(batch.events.length, 1500);
    assert.equal(batch.through, 2);
    hub.stop();
  });

  test('a start revision below the compaction: created, then cancelled with compact_revision', async () => {
    const { a, hub, sink, session } = setup();
    for (let i = 0; i < 5; i++) a.put('k', String(i)); // 2..6
    a.compact(5);
    session.create(create({ key: 'k', startRevision: 3 }));
    await settle();
    assert.equal(sink.out.length, 2);
    assert.equal(sink.out[0].created, true);
    assert.deepEqual(sink.out[1], { watchId: 0n, revision: 6, canceled: true, compactRevision: 5, cancelReason: ErrCompacted.message, events: [] });
    // At the compaction revision itself it is served (etcd: cancelled only below it).
    session.create(create({ key: 'k', startRevision: 5 }));
    await settle();
    assert.deepEqual(sink.events(), ['PUT k=3@5', 'PUT k=4@6']);
    hub.stop();
  });

  test('duplicate watch IDs and empty ranges are refused like etcd; auto IDs skip taken ones', () => {
    const { hub, sink, session } = setup();
    session.create(create({ key: 'a', watchId: 0n }));
    session.create(create({ key: 'a', watchId: 1n }));
    session.create(create({ key: 'a', watchId: 1n }));
    session.create(create({ key: 'b', rangeEnd: b('a') }));
    session.create(create({ key: 'a' }));
    assert.deepEqual(
      sink.out.map((r) => [r.watchId, !!r.created, !!r.canceled, r.cancelReason ?? '']),
      [
        [0n, true, false, ''],
        [1n, true, false, ''],
        [-1n, true, true, ErrWatcherDuplicateId],
        [-1n, true, true, ErrWatcherRangeEmpty],
        [2n, true, false, ''],
      ],
    );
    hub.stop();
  });

  test('cancel answers once and stops the events', async () => {
    const { a, hub, sink, session } = setup();
    session.create(create({ key: 'k' }));
    session.cancel(0n);
    session.cancel(0n);
    a.put('k', 'v');
    hub.notify();
    await settle();
    assert.deepEqual(
      sink.out.map((r) => [r.created ?? false, r.canceled ?? false]),
      [
        [true, false],
        [false, true],
      ],
    );
    hub.stop();
  });

  test('a blocked client falls behind and then catches up from history: every event once, in order', async () => {
    const { a, hub, sink, session } = setup();
    session.create(create({ key: 's/', rangeEnd: b('s0') }));
    sink.blocked = true;
    for (let i = 0; i < 2500; i++) a.put(`s/${i % 7}`, String(i));
    hub.notify();
    await settle();
    assert.equal(sink.out.length, 1, 'nothing is written to a blocked stream');
    assert.equal(hub.stats().slowWatchers, 1);
    sink.blocked = false;
    session.drained();
    await settle();
    const revs = sink.out.flatMap((r) => r.events.map((e) => e.kv.modRevision));
    assert.equal(revs.length, 2500);
    assert.deepEqual(
      revs,
      Array.from({ length: 2500 }, (_, i) => i + 2),
    );
    assert.ok(sink.out.length > 3, 'history came in several batches');
    assert.equal(hub.stats().slowWatchers, 0);
    hub.stop();
  });

  test('a progress request reports a revision every watch on the stream has delivered', async () => {
    const { a, hub, sink, session } = setup();
    a.put('k', '1'); // 2
    a.put('k', '2'); // 3
    session.create(create({ key: 'k' }));
    sink.blocked = true;
    session.create(create({ key: 'k', startRevision: 2 }));
    session.progress();
    assert.deepEqual(sink.out.at(-1), { watchId: -1n, revision: 1, events: [] });
    sink.blocked = false;
    session.drained();
    await settle();
    session.progress();
    assert.deepEqual(sink.out.at(-1), { watchId: -1n, revision: 3, events: [] });
    hub.stop();
  });

  test('progress_notify: an idle watch in sync gets an empty response at the current revision each interval', async () => {
    const a = Applier.memory();
    const hub = new WatchHub(() => a.kv, createLogger({}, 'silent'), 40);
    const sink = new FakeSink();
    const session = hub.open(sink);
    a.put('k', '1'); // 2
    session.create(create({ key: 'k', progressNotify: true }));
    session.create(create({ key: 'other' }));
    await new Promise((r) => setTimeout(r, 150));
    const progress = sink.out.filter((r) => !r.created && r.events.length === 0);
    assert.ok(progress.length >= 2, `${progress.length} progress notifications`);
    assert.ok(progress.every((r) => r.watchId === 0n && r.revision === 2));
    hub.stop();
  });

  test('fragments: large responses split by size, every piece but the last marked', () => {
    const events = Array.from({ length: 5 }, (_, i) => ({
      type: EventType.Put,
      kv: { key: b(`k${i}`), value: Buffer.alloc(100), createRevision: 2, modRevision: 2, version: 1, lease: 0n },
    }));
    const parts = fragments({ watchId: 1n, revision: 2, events }, 400);
    assert.ok(parts.length > 1);
    assert.deepEqual(
      parts.map((p) => p.fragment),
      [...parts.slice(1).map(() => true), false],
    );
    assert.equal(
      parts.reduce((n, p) => n + p.events.length, 0),
      5,
    );
    assert.deepEqual(fragments({ watchId: 1n, revision: 2, events: events.slice(0, 1) }, 10).length, 1);
  });

  test('the store is replaced (snapshot from the leader): watchers resume from its history', async () => {
    const first = Applier.memory();
    const second = Applier.memory();
    let current = first.kv;
    const { hub, sink, session } = setup(() => current);
    for (const a of [first, second]) for (let i = 0; i < 3; i++) a.put('k', `v${i}`); // 2..4
    session.create(create({ key: 'k', startRevision: 2 }));
    await settle();
    for (let i = 3; i < 6; i++) second.put('k', `v${i}`); // 5..7 only in the leader's store
    current = second.kv;
    hub.storeReplaced();
    await settle();
    assert.deepEqual(sink.events(), ['PUT k=v0@2', 'PUT k=v1@3', 'PUT k=v2@4', 'PUT k=v3@5', 'PUT k=v4@6', 'PUT k=v5@7']);
    // A store compacted past the watcher's next revision cancels it as compacted.
    const third = Applier.memory();
    for (let i = 0; i < 8; i++) third.put('k', `w${i}`); // 2..9
    third.compact(9);
    current = third.kv;
    hub.storeReplaced();
    await settle();
    assert.deepEqual({ canceled: sink.out.at(-1)?.canceled, compact: sink.out.at(-1)?.compactRevision }, { canceled: true, compact: 9 });
    hub.stop();
  });
});
