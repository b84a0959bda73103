// EtcdClient against a fake etcd (grpc-js server with our protos) on 127.0.0.1:
// snapshot save and its sha256 trailer, call errors, deadlines, dial failures.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '#grpc-js';
import { service } from '../../src/proto/grpcClients.js';
import { EtcdClient, deleteToWire, rangeToWire } from '../../src/client/etcdClient.js';
import { EtcdClientError } from '../../src/client/errors.js';
import { InputError } from '../../src/common/errors.js';
import { saveSnapshot, verifySnapshotTrailer, TrailerCheck } from '../../src/client/snapshotSave.js';
import { resolveTarget } from '../../src/client/target.js';
import { freePorts } from '../support/ports.js';

/** What the fake Maintenance.Snapshot sends next. */
let snapshotPlan: (call: grpc.ServerWritableStream<any, any>) => void = () => {};
const db = randomBytes(4096);
const digest = createHash('sha256').update(db).digest();

function sendChunks(call: grpc.ServerWritableStream<any, any>, bytes: Buffer, then: () => void): void {
  let sent = 0;
  while (sent < bytes.length) {
    const n = Math.min(1000, bytes.length - sent);
    call.write({ remaining_bytes: String(bytes.length - sent - n), blob: bytes.subarray(sent, sent + n) });
    sent += n;
  }
  then();
}

let server: grpc.Server;
let endpoint: string;
let dir: string;
const header = { cluster_id: '14443903163313418560', member_id: '11417610130673999598', revision: '7', raft_term: '2' };

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'lifeboat-client-'));
  server = new grpc.Server();
  server.addService(service('etcdserverpb.KV').service, {
    Range: (_call: any, cb: grpc.sendUnaryData<any>) => cb(null, { header, kvs: [], more: false, count: '3' }),
  });
  server.addService(service('etcdserverpb.Cluster').service, {
    MemberRemove: (_call: any, cb: grpc.sendUnaryData<any>) => cb({ code: grpc.status.NOT_FOUND, details: 'etcdserver: member not found' }),
    MemberList: () => {
      // never answers: the client's deadline must fire
    },
    MemberPromote: (call: any, cb: grpc.sendUnaryData<any>) =>
      cb(null, { header, members: [{ ID: call.request.ID, name: 'x', peerURLs: [], clientURLs: [], isLearner: false }] }),
  });
  server.addService(service('etcdserverpb.Maintenance').service, {
    Snapshot: (call: grpc.ServerWritableStream<any, any>) => snapshotPlan(call),
  });
  const [port] = await freePorts(1, 'client/client.test');
  await new Promise<void>((resolve, reject) =>
    server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (err) => (err ? reject(err) : resolve())),
  );
  endpoint = `127.0.0.1:${port}`;
});

after(() => {
  server?.forceShutdown();
  rmSync(dir, { recursive: true, force: true });
});

const client = (opts: { commandTimeoutMs?: number } = {}) =>
  new EtcdClient({ endpoints: endpoint, dialTimeoutMs: 2000, commandTimeoutMs: opts.commandTimeoutMs ?? 2000 });

test('snapshot save streams into FILE via FILE.part and checks the sha256 trailer', async () => {
  snapshotPlan = (call) =>
    sendChunks(call, db, () => {
      call.write({ remaining_bytes: '0', blob: digest });
      call.end();
    });
  const file = path.join(dir, 'good.db');
  const c = client();
  try {
    const progress: number[] = [];
    const saved = await saveSnapshot(c.target, file, { onProgress: (done) => progress.push(done) });
    const bytes = readFileSync(file);
    assert.deepEqual(bytes, Buffer.concat([db, digest]));
    assert.equal(existsSync(`${file}.part`), false);
    assert.equal(saved.size, db.length + 32);
    assert.equal(saved.sha256, createHash('sha256').update(bytes).digest('hex'));
    assert.equal(saved.dbSha256, digest.toString('hex'));
    assert.equal(saved.revision, 7);
    assert.equal(saved.keyCount, 3);
    assert.equal(saved.endpoint, endpoint);
    assert.equal(progress.at(-1), bytes.length);
    assert.deepEqual(verifySnapshotTrailer(bytes), { ok: true, dbSha256: digest.toString('hex') });
  } finally {
    c.close();
  }
});

test('snapshot save of several MiB in messages of mixed sizes keeps every byte', async () => {
  const big = randomBytes(5000 * 512);
  const bigDigest = createHash('sha256').update(big).digest();
  snapshotPlan = (call) => {
    let sent = 0;
    for (const n of [1 << 20, 7, 300_000, 1 << 20]) {
      call.write({ remaining_bytes: String(big.length - sent - n), blob: big.subarray(sent, sent + n) });
      sent += n;
    }
    sendChunks(call, big.subarray(sent), () => {
      call.write({ remaining_bytes: '0', blob: bigDigest });
      call.end();
    });
  };
  const file = path.join(dir, 'big.db');
  const c = client();
  try {
    const progress: Array<[number, number]> = [];
    const saved = await saveSnapshot(c.target, file, { onProgress: (done, total) => progress.push([done, total]) });
    assert.ok(readFileSync(file).equals(Buffer.concat([big, bigDigest])));
    assert.equal(saved.dbSha256, bigDigest.toString('hex'));
    assert.ok(progress.length >= 2, 'progress during the stream');
    assert.deepEqual(progress.at(-1), [big.length + 32, big.length + 32]);
  } finally {
    c.close();
  }
});

for (const [name, plan, expected] of [
  [
    'a wrong trailer',
    (call: grpc.ServerWritableStream<any, any>) => sendChunks(call, db, () => (call.write({ remaining_bytes: '0', blob: Buffer.alloc(32, 7) }), call.end())),
    /sha256 mismatch/,
  ],
  ['no trailer', (call: grpc.ServerWritableStream<any, any>) => sendChunks(call, db, () => call.end()), /sha256 checksum not found/],
  [
    'a stream that breaks',
    (call: grpc.ServerWritableStream<any, any>) =>
      sendChunks(call, db.subarray(0, 2000), () => call.emit('error', { code: grpc.status.DATA_LOSS, details: 'disk on fire' })),
    /^127\.0\.0\.1:\d+: disk on fire$/,
  ],
  [
    'an error before any data',
    (call: grpc.ServerWritableStream<any, any>) => call.emit('error', { code: grpc.status.PERMISSION_DENIED, details: 'etcdserver: permission denied' }),
    /^127\.0\.0\.1:\d+: etcdserver: permission denied$/,
  ],
  [
    'a stream that stalls',
    (call: grpc.ServerWritableStream<any, any>) => call.write({ remaining_bytes: '100', blob: db.subarray(0, 512) }),
    /snapshot stream stalled: no data for 300ms/,
  ],
] as const) {
  test(`snapshot save with ${name} fails, leaves no FILE.part and keeps an existing FILE`, async () => {
    snapshotPlan = plan;
    const file = path.join(dir, `bad-${name.replaceAll(' ', '-')}.db`);
    writeFileSync(file, 'previous snapshot');
    const c = client({ commandTimeoutMs: 300 });
    try {
      await assert.rejects(saveSnapshot(c.target, file), (e: Error) => e instanceof EtcdClientError && expected.test(e.message) && !e.message.includes('\n'));
    } finally {
      c.close();
    }
    assert.equal(existsSync(`${file}.part`), false);
    assert.equal(readFileSync(file, 'utf8'), 'previous snapshot');
  });
}

test('snapshot save needs exactly one endpoint', async () => {
  const c = new EtcdClient({ endpoints: `${endpoint},127.0.0.1:1` });
  await assert.rejects(saveSnapshot(c.target, path.join(dir, 'x.db')), (e: Error) => e instanceof InputError && /exactly one endpoint, got 2/.test(e.message));
  c.close();
});

test('TrailerCheck handles the trailer split across chunks', () => {
  const all = Buffer.concat([db, digest]);
  const check = new TrailerCheck();
  for (const cut of [1, 4090, 4100, 4127, all.length]) check.update(all.subarray(check.size, cut));
  const v = check.finish();
  assert.equal(v.ok, true);
});

test("server errors keep etcd's text and name the endpoint", async () => {
  const c = client();
  try {
    await assert.rejects(
      c.memberRemove(0x1234n),
      (e: Error) => e instanceof EtcdClientError && e.message === `${endpoint}: etcdserver: member not found` && e.kind === 'server',
    );
    const promoted = await c.memberPromote(0x8e9e05c52164694dn);
    assert.equal(promoted.members[0].id, 0x8e9e05c52164694dn, 'IDs travel as decimal strings and come back as bigint');
    assert.equal(promoted.header.clusterId, 14443903163313418560n);
  } finally {
    c.close();
  }
});

test('every call has the command timeout as its deadline', async () => {
  const c = client({ commandTimeoutMs: 300 });
  const t0 = Date.now();
  try {
    await assert.rejects(
      c.memberList(),
      (e: Error) => e instanceof EtcdClientError && e.kind === 'timeout' && e.message.startsWith(`${endpoint}: no answer within 300ms`),
    );
  } finally {
    c.close();
  }
  assert.ok(Date.now() - t0 < 2000, `took ${Date.now() - t0}ms`);
});

test('snapshot save from an endpoint that refuses connections fails within the dial timeout, naming it, and writes nothing', async () => {
  const [port] = await freePorts(1, 'client/client.test/closed-snapshot');
  const file = path.join(dir, 'refused.db');
  const t0 = Date.now();
  await assert.rejects(
    saveSnapshot(resolveTarget({ endpoints: `127.0.0.1:${port}`, dialTimeoutMs: 500 }), file),
    (e: Error) => e instanceof EtcdClientError && e.message === `cannot reach 127.0.0.1:${port} within 500ms (connection refused); check --endpoints`,
  );
  assert.ok(Date.now() - t0 < 1500, `took ${Date.now() - t0}ms`);
  assert.equal(existsSync(file) || existsSync(`${file}.part`), false);
});

test('an endpoint that refuses connections fails within the dial timeout, naming it', async () => {
  const [port] = await freePorts(1, 'client/client.test/closed');
  const c = new EtcdClient({ endpoints: `127.0.0.1:${port}`, dialTimeoutMs: 500 });
  const t0 = Date.now();
  try {
    await assert.rejects(
      c.status(),
      (e: Error) => e instanceof EtcdClientError && e.message === `cannot reach 127.0.0.1:${port} within 500ms (connection refused); check --endpoints`,
    );
  } finally {
    c.close();
  }
  assert.ok(Date.now() - t0 < 1500, `took ${Date.now() - t0}ms`);
});

test('with several endpoints, a reachable one serves even if the first is down', async () => {
  const [port] = await freePorts(1, 'client/client.test/closed2');
  const c = new EtcdClient({ endpoints: [`127.0.0.1:${port}`, endpoint], dialTimeoutMs: 1000 });
  try {
    assert.equal((await c.range('k', { countOnly: true })).count, 3);
    assert.equal(await c.activeEndpoint(), endpoint);
  } finally {
    c.close();
  }
});

test('unreadable TLS files are usage errors, before any dial', () => {
  assert.throws(
    () => new EtcdClient({ endpoints: 'https://127.0.0.1:1', tls: { caFile: path.join(dir, 'missing.pem') } }),
    (e: Error) => e instanceof InputError && e.message === `cannot read --cacert ${path.join(dir, 'missing.pem')}: no such file`,
  );
  assert.throws(() => new EtcdClient({ endpoints: '127.0.0.1:1', tls: { certFile: 'x.pem' } }), /--cert and --key go together: --key is missing/);
});

test('a single-key range or delete sends no range_end at all (etcd 3.4 reads an empty one as "every key from here")', () => {
  const kv = service('etcdserverpb.KV').service;
  const single = kv.Range.requestSerialize(rangeToWire('/a', { rangeEnd: Buffer.alloc(0) }));
  assert.equal(single.includes(Buffer.from([0x12, 0x00])), false, `no field 2 in ${single.toString('hex')}`);
  const del = kv.DeleteRange.requestSerialize(deleteToWire('/a', {}));
  assert.equal(del.includes(Buffer.from([0x12, 0x00])), false, `no field 2 in ${del.toString('hex')}`);
  const ranged = kv.Range.requestSerialize(rangeToWire('/a', { rangeEnd: '/b' }));
  assert.ok(ranged.includes(Buffer.concat([Buffer.from([0x12, 0x02]), Buffer.from('/b')])));
});
