// Watch against a 3-member Lifeboat cluster of real processes: etcdctl watch sees
// exactly the events another client writes (key, --prefix, --rev, --prev-kv), and
// one raw gRPC watch stream on a follower keeps delivering every event, once and
// in order, while the leader is killed and a new one elected.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, etcdctl, parseEtcdJson, waitFor, type MemberProc } from '../support/lifeboatCluster.js';
import { etcdctlBackground, RawKv, RawWatch, watchJsonEvents, type Background, type SeenEvent } from './watchClients.js';

async function put(endpoint: string, key: string, value: string): Promise<number> {
  const r = await etcdctl(endpoint, 'put', key, value, '-w', 'json');
  assert.equal(r.code, 0, r.stderr);
  return Number(parseEtcdJson(r.stdout).header.revision);
}

async function del(endpoint: string, key: string): Promise<number> {
  const r = await etcdctl(endpoint, 'del', key, '-w', 'json');
  assert.equal(r.code, 0, r.stderr);
  return Number(parseEtcdJson(r.stdout).header.revision);
}

async function revision(endpoint: string): Promise<number> {
  const r = await etcdctl(endpoint, 'get', 'any', '-w', 'json');
  assert.equal(r.code, 0, r.stderr);
  return Number(parseEtcdJson(r.stdout).header.revision);
}

const brief = (es: SeenEvent[]) => es.map((e) => `${e.type} ${e.key}${e.type === 'PUT' ? `=${e.value}` : ''}${e.prev !== undefined ? ` prev=${e.prev}` : ''}`);

describe('watch on a 3-member cluster', () => {
  let c: LifeboatCluster;
  const procs: Background[] = [];
  before(async () => {
    c = await LifeboatCluster.start('watch', 3);
  });
  after(async () => {
    await Promise.all(procs.map((p) => p.stop()));
    await c?.stopAll();
  });

  test('etcdctl watch (key, --prefix, --rev, --prev-kv) sees exactly what another client writes', async () => {
    const leader = await c.waitForLeader();
    const followers = c.running().filter((m) => m !== leader);
    const writer = leader.client;
    // History for --rev: two versions of hk before anyone watches.
    const h1 = await put(writer, 'hk', 'h1');
    await put(writer, 'hk', 'h2');

    const live = etcdctlBackground(followers[0].client, 'watch', 'wk', '-w', 'json');
    const prefix = etcdctlBackground(followers[1].client, 'watch', '--prefix', 'wp/', '-w', 'json');
    const fromRev = etcdctlBackground(followers[0].client, 'watch', 'hk', '--rev', String(h1), '-w', 'json');
    procs.push(live, prefix, fromRev);
    // The watches without --rev see only what comes after they are created: write
    // a marker until each has seen one, then the real writes.
    await waitFor('the live watchers to be created', async () => {
      await put(writer, 'wk', 'ready');
      await put(writer, 'wp/ready', 'ready');
      return watchJsonEvents(live.stdout).length > 0 && watchJsonEvents(prefix.stdout).length > 0;
    });
    const prevKv = etcdctlBackground(followers[1].client, 'watch', '--prefix', 'wp/', '--prev-kv', '--rev', String((await revision(writer)) + 1), '-w', 'json');
    procs.push(prevKv);

    await put(writer, 'wk', 'v1');
    await put(writer, 'wp/a', '1');
    await put(writer, 'wp/b', '2');
    await put(writer, 'wk', 'v2');
    await del(writer, 'wp/a');
    await put(writer, 'wp/a', '3');
    await del(writer, 'wk');
    await put(writer, 'hk', 'h3');
    await put(writer, 'other', 'x');

    const after = (es: SeenEvent[]) => es.slice(es.map((e) => e.value).lastIndexOf('ready') + 1);
    await waitFor(
      'every watcher to see its last event',
      () =>
        watchJsonEvents(live.stdout).some((e) => e.type === 'DELETE') &&
        watchJsonEvents(prefix.stdout).some((e) => e.value === '3') &&
        watchJsonEvents(fromRev.stdout).some((e) => e.value === 'h3') &&
        watchJsonEvents(prevKv.stdout).some((e) => e.value === '3'),
    );
    // A moment for anything unexpected to arrive too.
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(brief(after(watchJsonEvents(live.stdout))), ['PUT wk=v1', 'PUT wk=v2', 'DELETE wk']);
    assert.deepEqual(brief(after(watchJsonEvents(prefix.stdout))), ['PUT wp/a=1', 'PUT wp/b=2', 'DELETE wp/a', 'PUT wp/a=3']);
    assert.deepEqual(brief(watchJsonEvents(fromRev.stdout)), ['PUT hk=h1', 'PUT hk=h2', 'PUT hk=h3']);
    assert.deepEqual(brief(watchJsonEvents(prevKv.stdout)), ['PUT wp/a=1', 'PUT wp/b=2', 'DELETE wp/a prev=1', 'PUT wp/a=3']);
    for (const p of [live, prefix, fromRev, prevKv]) {
      const revs = watchJsonEvents(p.stdout).map((e) => e.mod);
      assert.deepEqual(
        revs,
        [...revs].sort((x, y) => x - y),
        'events in revision order',
      );
      assert.equal(new Set(revs).size, revs.length, 'no event twice');
      assert.ok(p.running, `etcdctl watch exited: ${p.stderr}`);
    }
    await Promise.all([live, prefix, fromRev, prevKv].map((p) => p.stop()));
  });

  test('a watch with filters (a packed repeated enum on the wire) leaves out what it filters, one without them sees both kinds', async () => {
    const leader = await c.waitForLeader();
    const start = (await revision(leader.client)) + 1;
    const noPut = new RawWatch(leader.client);
    const all = new RawWatch(leader.client);
    try {
      noPut.create({ key: 'flt/a', start_revision: start, filters: ['NOPUT'] });
      all.create({ key: 'flt/a', start_revision: start });
      await Promise.all([noPut.waitCreated(), all.waitCreated()]);
      await put(leader.client, 'flt/a', '1');
      const deleted = await del(leader.client, 'flt/a');
      await waitFor('both watches to see the delete', () => [noPut, all].every((w) => w.events().some((e) => e.mod === deleted)));
      assert.deepEqual(
        noPut.events().map((e) => e.type),
        ['DELETE'],
      );
      assert.deepEqual(
        all.events().map((e) => e.type),
        ['PUT', 'DELETE'],
      );
    } finally {
      noPut.close();
      all.close();
    }
  });

  test('a raw watch stream on a follower delivers every event once and in order while the leader is killed', async () => {
    const leader = await c.waitForLeader();
    const follower = c.running().find((m) => m !== leader)!;
    const third = c.running().find((m) => m !== leader && m !== follower)!;
    const start = (await revision(follower.client)) + 1;
    const watch = new RawWatch(follower.client);
    const writers = [new RawKv(follower.client), new RawKv(third.client)];
    try {
      watch.create({ key: 'lk/', range_end: 'lk0', start_revision: start });
      await watch.waitCreated();
      const N = 150;
      const acked: string[] = [];
      let killed: MemberProc | undefined;
      for (let i = 0; i < N; i++) {
        const key = `lk/${String(i).padStart(4, '0')}`;
        if (i === 50) {
          killed = leader;
          await c.kill(leader);
        }
        // Retry until acknowledged: during the election a write may time out, and a
        // retried one may land twice (two events, two revisions: not a duplicate).
        await waitFor(`write ${key}`, async () => {
          await writers[i % 2].put(key, String(i), 3000);
          return true;
        });
        acked.push(key);
      }
      assert.ok(killed);
      const next = await c.waitForLeader(c.running());
      assert.notEqual(next.name, leader.name);
      await waitFor('the follower watch to see the last write', () => watch.events().some((e) => e.key === acked.at(-1)));
      const seen = watch.events();
      const revs = seen.map((e) => e.mod);
      for (let i = 1; i < revs.length; i++) assert.ok(revs[i] > revs[i - 1], `revision ${revs[i]} after ${revs[i - 1]}: out of order or twice`);
      assert.deepEqual([...new Set(seen.map((e) => e.key))].sort(), acked);
      assert.equal(watch.error, undefined, `the stream failed: ${watch.error?.message}`);
      assert.equal(watch.ended, false);
      assert.ok(watch.responses.every((r) => !r.canceled));
      // The same events, replayed from history on another member.
      const replay = new RawWatch(third.client);
      try {
        replay.create({ key: 'lk/', range_end: 'lk0', start_revision: start });
        await waitFor('the replay to reach the last event', () => replay.events().length >= seen.length);
        assert.deepEqual(replay.events().slice(0, seen.length), seen);
      } finally {
        replay.close();
      }
    } finally {
      watch.close();
      for (const w of writers) w.close();
    }
  });
});
