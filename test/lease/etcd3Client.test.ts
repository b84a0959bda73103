// The npm etcd3 client against a 3-member Lifeboat cluster: watchers (history from
// a start revision; a watcher whose member restarts resumes from the revision after
// its last event and misses nothing), leases with keep-alive, Txn compares on a
// key's lease and ignore_lease, and the client's election and lock recipes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Etcd3, EtcdLockFailedError, type IKeyValue, type Watcher } from 'etcd3';
import { sleep } from '../../src/common/sleep.js';
import { LifeboatCluster, waitFor } from '../support/lifeboatCluster.js';

/** The library's own waits are unbounded: give up after `ms`. */
async function within<T>(what: string, p: Promise<T>, ms = 30_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Handlers attached before the watch connects: history can arrive right behind "created". */
async function watching(w: Watcher, attach: (w: Watcher) => void): Promise<Watcher> {
  attach(w);
  await within(
    'the watch to connect',
    new Promise<void>((resolve, reject) => {
      w.once('connected', () => resolve());
      w.once('error', reject);
    }),
  );
  return w;
}

describe('the npm etcd3 client', () => {
  let c: LifeboatCluster;
  const clients: Etcd3[] = [];
  const watchers: Watcher[] = [];
  const client = (endpoints: string[]) => {
    const e = new Etcd3({ hosts: endpoints.map((h) => `http://${h}`), dialTimeout: 3000 });
    clients.push(e);
    return e;
  };
  before(async () => {
    c = await LifeboatCluster.start('etcd3client', 3);
  });
  after(async () => {
    await Promise.all(watchers.map((w) => w.cancel().catch(() => undefined)));
    for (const e of clients) e.close();
    await c?.stopAll();
  });

  test('watchers: history from a start revision, live events with prev_kv', async () => {
    const e = client(c.endpoints());
    const first = await e.put('w3/a').value('1').exec();
    await e.put('w3/a').value('2');
    await e.delete().key('w3/a');
    const seen: string[] = [];
    const history = await watching(e.watch().prefix('w3/').startRevision(first.header.revision).watcher(), (w) => {
      watchers.push(w);
      w.on('put', (kv: IKeyValue) => seen.push(`h put ${kv.key.toString()}=${kv.value.toString()}`));
      w.on('delete', (kv: IKeyValue) => seen.push(`h del ${kv.key.toString()}`));
    });
    const liveSeen: string[] = [];
    const live = await watching(e.watch().prefix('w3/').withPreviousKV().watcher(), (w) => {
      watchers.push(w);
      w.on('put', (kv: IKeyValue, prev?: IKeyValue) => liveSeen.push(`put ${kv.key.toString()}=${kv.value.toString()} prev=${prev?.value.toString() ?? '-'}`));
      w.on('delete', (kv: IKeyValue, prev?: IKeyValue) => liveSeen.push(`del ${kv.key.toString()} prev=${prev?.value.toString() ?? '-'}`));
    });
    await e.put('w3/b').value('x');
    await e.put('w3/b').value('y');
    await e.delete().key('w3/b');
    await waitFor('the events', () => liveSeen.length >= 3 && seen.length >= 6);
    await sleep(200);
    assert.deepEqual(seen, ['h put w3/a=1', 'h put w3/a=2', 'h del w3/a', 'h put w3/b=x', 'h put w3/b=y', 'h del w3/b']);
    assert.deepEqual(liveSeen, ['put w3/b=x prev=-', 'put w3/b=y prev=x', 'del w3/b prev=y']);
    await history.cancel();
    await live.cancel();
  });

  test('a watcher whose member restarts resumes from its last revision and misses nothing', async () => {
    const leader = await c.waitForLeader();
    const target = c.running().find((m) => m !== leader)!;
    const other = c.running().find((m) => m !== leader && m !== target)!;
    const watcher = client([target.client]);
    const writer = client([other.client, leader.client]);
    const seen: Array<{ key: string; rev: number }> = [];
    let disconnects = 0;
    const w = await watching(watcher.watch().prefix('rs/').watcher(), (x) => {
      watchers.push(x);
      x.on('disconnected', () => disconnects++);
      x.on('put', (kv: IKeyValue) => seen.push({ key: kv.key.toString(), rev: Number(kv.mod_revision) }));
    });
    const keys: string[] = [];
    const write = async (i: number) => {
      const k = `rs/${String(i).padStart(3, '0')}`;
      await writer.put(k).value(String(i));
      keys.push(k);
    };
    for (let i = 0; i < 10; i++) await write(i);
    await waitFor('the first events', () => seen.length === 10);
    await c.kill(target);
    // Written while the watcher's member is down: it must get these from history.
    for (let i = 10; i < 30; i++) await write(i);
    c.spawn(target, []);
    for (let i = 30; i < 40; i++) await write(i);
    await waitFor('every event after the restart', () => seen.length >= 40, 30_000);
    await sleep(300);
    assert.ok(disconnects >= 1, 'the watcher never noticed its member going away');
    assert.deepEqual(
      seen.map((s) => s.key),
      keys,
    );
    for (let i = 1; i < seen.length; i++) assert.ok(seen[i].rev > seen[i - 1].rev, 'in revision order, none twice');
    await w.cancel();
    await c.waitForLeader();
  });

  test('leases with keep-alive hold their keys; revoke takes them; Txn compares on lease; ignore_lease', async () => {
    const e = client(c.endpoints());
    const lease = e.lease(2);
    const id = await lease.grant();
    await lease.put('ls/held').value('x');
    let renewals = 0;
    lease.on('keepaliveSucceeded', () => renewals++);
    await sleep(4500);
    assert.equal(await e.get('ls/held').string(), 'x', 'the key went while its lease was kept alive');
    assert.ok(renewals >= 3, `only ${renewals} keep-alives answered`);
    const ttl = e.lease(5, { autoKeepAlive: false });
    const other = await ttl.grant();

    // Txn compare on the key's lease.
    const yes = await e.if('ls/held', 'Lease', '==', id).then(e.put('ls/txn').value('matched')).else(e.put('ls/txn').value('no')).commit();
    assert.equal(yes.succeeded, true);
    const no = await e.if('ls/held', 'Lease', '==', other).then(e.put('ls/txn').value('matched')).commit();
    assert.equal(no.succeeded, false);
    // ignore_lease keeps the key's lease.
    await e.put('ls/held').value('y').ignoreLease();
    const kv = (await e.get('ls/held').exec()).kvs[0];
    assert.equal(kv.value.toString(), 'y');
    assert.equal(kv.lease, id);
    const ttlInfo = e.lease(1, { autoKeepAlive: false }); // granted with the minimum TTL
    assert.ok(Number(await ttlInfo.grant()) > 0);

    await lease.revoke();
    assert.equal(await e.get('ls/held').string(), null);
    await ttl.revoke();
    await ttlInfo.revoke();
  });

  test('election: one leader at a time, the next elected when it resigns, observers follow', async () => {
    const a = client(c.endpoints());
    const b = client(c.endpoints());
    const ea = a.election('e3-election', 2);
    const eb = b.election('e3-election', 2);
    const ca = ea.campaign('alice');
    let cb: ReturnType<typeof eb.campaign> | undefined;
    let observer: Awaited<ReturnType<typeof eb.observe>> | undefined;
    try {
      await within('alice to be elected', ca.wait());
      // Campaigns race: bob starts only once alice leads.
      const obs = (observer = await within('an observer', eb.observe()));
      cb = eb.campaign('bob');
      const leaders: string[] = [];
      observer.on('change', (v: string | undefined) => leaders.push(v ?? ''));
      let bobElected = false;
      cb.on('elected', () => (bobElected = true));
      await sleep(1000);
      assert.equal(bobElected, false, 'two leaders at once');
      assert.equal(await ea.leader(), 'alice');
      await waitFor('the observer to see alice', () => obs.leader() === 'alice');
      await within('alice to resign', ca.resign());
      await within('bob to be elected', cb.wait());
      assert.equal(await ea.leader(), 'bob');
      await waitFor('the observer to see bob', () => obs.leader() === 'bob' && leaders.includes('bob'));
    } finally {
      const pending = [ca.resign(), cb?.resign(), observer?.cancel()].filter((p) => p !== undefined);
      await Promise.all(pending.map((p) => within('cleanup', p, 10_000).catch(() => undefined)));
    }
  });

  test('lock: held by one client at a time, free again after release', async () => {
    const a = client(c.endpoints());
    const b = client(c.endpoints());
    const la = await a.lock('e3-lock').ttl(5).acquire();
    await assert.rejects(b.lock('e3-lock').ttl(5).acquire(), EtcdLockFailedError);
    await la.release();
    const lb = await b.lock('e3-lock').ttl(5).acquire();
    await assert.rejects(a.lock('e3-lock').ttl(5).acquire(), EtcdLockFailedError);
    await lb.release();
    // Three holders contend at once, each retrying until it had its turn (bounded):
    // a lock that let two in would show two bodies inside together.
    const third = client(c.endpoints());
    let inside = 0;
    let max = 0;
    let ran = 0;
    const contend = async (cl: Etcd3) => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        try {
          await cl
            .lock('e3-lock')
            .ttl(5)
            .do(async () => {
              max = Math.max(max, ++inside);
              await sleep(100);
              inside--;
              ran++;
            });
          return;
        } catch (e) {
          if (!(e instanceof EtcdLockFailedError) || Date.now() > deadline) throw e;
          await sleep(10);
        }
      }
    };
    await Promise.all([a, b, third].map(contend));
    assert.equal(ran, 3);
    assert.equal(max, 1);
    assert.equal(await a.get('e3-lock').string(), null);
  });
});
