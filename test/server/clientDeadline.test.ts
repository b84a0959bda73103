// A client's deadline (grpc-timeout) on real members: the member itself answers
// DEADLINE_EXCEEDED when it passes (the calls here set no timer of their own), a
// write already past its deadline is never proposed, and one proposed before it
// may apply, once, but leaves nothing waiting. Raw HTTP/2 calls, so that only the
// server can end them.
import assert from 'node:assert/strict';
import http2 from 'node:http2';
import { after, before, describe, test } from 'node:test';
import { LifeboatCluster, etcdctl, parseEtcdJson, waitFor, type MemberProc } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';

interface Answer {
  code: number;
  details: string;
  ms: number;
}

/** A PutRequest (key = 1, value = 2) as one gRPC message. */
function putMessage(key: string, value: string): Buffer {
  const field = (tag: number, s: string) => Buffer.concat([Buffer.from([tag, Buffer.byteLength(s)]), Buffer.from(s)]);
  const body = Buffer.concat([field(0x0a, key), field(0x12, value)]);
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(body.length, 1);
  return Buffer.concat([prefix, body]);
}

/** One KV.Put with `grpc-timeout: timeout` and no deadline of the client's own; the status the member answers, and when. */
function rawPut(client: string, key: string, timeout: string): Promise<Answer> {
  const start = Date.now();
  const session = http2.connect(`http://${client}`);
  session.on('error', () => {});
  return new Promise<Answer>((resolve, reject) => {
    // Far past every deadline here: a bound on the test, not a client deadline.
    const bound = setTimeout(() => reject(new Error(`no answer to the put of ${key} in 15 s`)), 15_000);
    const req = session.request({
      ':method': 'POST',
      ':path': '/etcdserverpb.KV/Put',
      'content-type': 'application/grpc',
      te: 'trailers',
      'grpc-timeout': timeout,
    });
    let status: { code: number; details: string } | undefined;
    const take = (h: http2.IncomingHttpHeaders) => {
      if (h['grpc-status'] !== undefined) status = { code: Number(h['grpc-status']), details: decodeURI(String(h['grpc-message'] ?? '')) };
    };
    req.on('response', take);
    req.on('trailers', take);
    req.on('data', () => {});
    req.on('close', () => {
      clearTimeout(bound);
      if (status) resolve({ ...status, ms: Date.now() - start });
      else reject(new Error(`the put of ${key} ended without a status`));
    });
    req.on('error', () => {});
    req.end(putMessage(key, 'v'));
  }).finally(() => session.close());
}

describe('a client deadline (grpc-timeout)', () => {
  let c: LifeboatCluster;
  const metrics = new Map<MemberProc, string>();

  /** A member's etcd_server_proposals_pending. */
  async function pending(m: MemberProc): Promise<number> {
    const text = await (await fetch(`${metrics.get(m)}/metrics`)).text();
    return Number(/^etcd_server_proposals_pending (\d+)$/m.exec(text)?.[1]);
  }

  /** How many times `key` was written (its version; 0 when absent), as a serializable read of `m`. */
  async function versionOf(m: MemberProc, key: string): Promise<number> {
    const r = await etcdctl(m.client, 'get', key, '-w', 'json', '--consistency=s');
    assert.equal(r.code, 0, r.stderr);
    return Number(parseEtcdJson(r.stdout).kvs?.[0]?.version ?? 0);
  }

  before(async () => {
    const ports = await freePorts(3, 'client-deadline-metrics');
    c = await LifeboatCluster.create('deadline', 3);
    for (let i = 0; i < 3; i++) c.members.push(c.define(`m${i + 1}`));
    const initial = c.initialCluster();
    c.members.forEach((m, i) => {
      metrics.set(m, `http://127.0.0.1:${ports[i]}`);
      c.spawn(m, ['--initial-cluster', initial, '--initial-cluster-state', 'new', '--listen-metrics-urls', metrics.get(m)!]);
    });
    await c.waitStarted(3);
  });
  after(async () => c?.stopAll());

  test('a put already past its deadline is answered DEADLINE_EXCEEDED and never written; a malformed grpc-timeout is refused; one in time is served', async () => {
    const m = c.members[0];
    assert.deepEqual(await rawPut(m.client, 'late', '0m').then(({ code, details }) => ({ code, details })), { code: 4, details: 'context deadline exceeded' });
    assert.deepEqual(await rawPut(m.client, 'bad', '123456789m').then(({ code, details }) => ({ code, details })), {
      code: 13,
      details: 'Invalid grpc-timeout value "123456789m"',
    });
    assert.equal((await rawPut(m.client, 'in-time', '10S')).code, 0);
    assert.equal(await versionOf(m, 'in-time'), 1);
    assert.equal(await versionOf(m, 'late'), 0);
    assert.equal(await versionOf(m, 'bad'), 0);
  });

  test('without a quorum: DEADLINE_EXCEEDED at the deadline, nothing left pending; once the quorum is back the expired put is not proposed, the proposed one applied at most once', async () => {
    const leader = await c.waitForLeader();
    const others = c.members.filter((m) => m !== leader);
    for (const m of others) await c.kill(m);
    // Sent at once, while the leader still leads (check-quorum steps it down after an election timeout): appended, never committed alone.
    const proposed = await rawPut(leader.client, 'proposed', '1S');
    assert.deepEqual([proposed.code, proposed.details], [4, 'context deadline exceeded']);
    assert.ok(proposed.ms >= 900 && proposed.ms < 1500, `answered after ${proposed.ms} ms`);
    await waitFor('the waiter of the proposed put to be released', async () => (await pending(leader)) === 0, 500, 50);

    // No leader now: a put waits for one, but only until its deadline.
    await waitFor('the member to have no leader', async () => (await fetch(`${metrics.get(leader)}/health`)).status === 503, 10_000);
    const queued = await rawPut(leader.client, 'queued', '1S');
    assert.deepEqual([queued.code, queued.details], [4, 'context deadline exceeded']);
    assert.ok(queued.ms >= 900 && queued.ms < 1500, `answered after ${queued.ms} ms`);
    await waitFor('the waiter of the queued put to be released', async () => (await pending(leader)) === 0, 500, 50);
    // The same through etcdctl, whose deadline the member now keeps too.
    const start = Date.now();
    const viaEtcdctl = await etcdctl(leader.client, 'put', 'etcdctl-queued', 'v', '--command-timeout=1s');
    assert.notEqual(viaEtcdctl.code, 0);
    assert.match(viaEtcdctl.stderr, /context deadline exceeded/);
    assert.ok(Date.now() - start < 1500, `etcdctl answered after ${Date.now() - start} ms`);
    await waitFor('the waiter of the etcdctl put to be released', async () => (await pending(leader)) === 0, 500, 50);

    // The quorum comes back well within the member's own request timeout (6 s here), which alone would have proposed it.
    for (const m of others) c.spawn(m, ['--listen-metrics-urls', metrics.get(m)!]);
    await c.waitForLeader();
    const r = await waitFor('a write with the quorum back', async () => {
      const put = await etcdctl(c.endpoints(), 'put', 'after', 'x');
      return put.code === 0 ? put : undefined;
    });
    assert.equal(r.code, 0);
    for (const m of c.members) {
      await waitFor(`${m.name} to apply the write`, async () => (await versionOf(m, 'after')) === 1);
      assert.equal(await versionOf(m, 'queued'), 0, `${m.name}: a put proposed after its deadline`);
      assert.equal(await versionOf(m, 'etcdctl-queued'), 0, `${m.name}: etcdctl's put proposed after its deadline`);
      assert.ok((await versionOf(m, 'proposed')) <= 1, `${m.name}: the proposed put applied more than once`);
    }
    for (const m of c.members) assert.equal(await pending(m), 0, `${m.name}: proposals left pending`);
  });
});
