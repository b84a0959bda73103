// The :authority rewrite in front of our gRPC server (src/net/authorityListener.ts, grpcServer.ts)
// with real clients end to end — etcdctl (whose endpoint commands send
// `:authority: http://host:port`), grpc-js, and Node's http2 client filling
// and evicting the HPACK table — and closing the listener.
import * as grpc from '#grpc-js';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import http2 from 'node:http2';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { listenWithAuthorityRewrite, type AuthorityRewriteListener } from '../../src/net/authorityListener.js';
import { service } from '../../src/proto/grpcClients.js';
import { GrpcServer } from '../../src/net/grpcServer.js';
import type { ServiceDefinition } from '../../src/proto/load.js';
import { freePorts } from '../support/ports.js';
import { frame, plain, PREFACE, prng, REQUEST_FIELDS, SETTINGS } from './h2Bytes.js';

// ---- end to end -------------------------------------------------------------

const Maintenance = service('etcdserverpb.Maintenance');
const asIs = (b: Buffer) => b;
/** Raw bytes both ways: big messages, to push DATA and flow control through the wrapper. */
const Bulk = {
  Echo: {
    originalName: 'echo',
    path: '/test.Bulk/Echo',
    requestStream: false,
    responseStream: false,
    requestSerialize: asIs,
    requestDeserialize: asIs,
    responseSerialize: asIs,
    responseDeserialize: asIs,
  },
};
const SNAP_CHUNK = 1 << 20;
const SNAP_CHUNKS = 5;
const HEADER = { cluster_id: '17', member_id: '42', revision: '7', raft_term: '3' };

function requireEtcdctl(): void {
  try {
    execFileSync('sh', ['-c', 'command -v etcdctl'], { stdio: 'ignore' });
  } catch {
    const msg = 'etcd-client is required: apt-get install -y etcd-client';
    const err = new Error(msg);
    err.stack = `Error: ${msg}`;
    throw err;
  }
}

function etcdctl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('etcdctl', args, { timeout: 20_000, env: { ...process.env, ETCDCTL_API: '3' } }, (err, stdout, stderr) =>
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    );
  });
}

describe('end to end, our gRPC server behind the rewrite', () => {
  let server: GrpcServer;
  let listener: AuthorityRewriteListener;
  let port: number;
  const peers: string[] = [];
  /** Whether the server saw the client go away mid-snapshot ('cancelled', with `cancelled` set). */
  let snapshotCancelled = false;
  /** The x-request metadata of each Status call, as the server decoded it. */
  const xRequests: string[] = [];

  before(async () => {
    requireEtcdctl();
    [port] = (await freePorts(1, 'authorityRewrite')) as [number];
    server = new GrpcServer({ maxReceiveMessageLength: 8 << 20 });
    server.addService(Bulk as unknown as ServiceDefinition, {
      // "fail: <details>" comes back as status 9 with those details.
      Echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        const text = call.request.subarray(0, 6).toString('latin1');
        if (text === 'fail: ') cb({ code: 9, details: call.request.subarray(6).toString() });
        else cb(null, call.request);
      },
    });
    server.addService(Maintenance.service as unknown as ServiceDefinition, {
      Status: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        peers.push(call.getPeer());
        xRequests.push(String(call.metadata.get('x-request')[0] ?? ''));
        cb(null, {
          header: HEADER,
          version: '3.4.23',
          dbSize: '4096',
          leader: '42',
          raftIndex: '9',
          raftTerm: '3',
          raftAppliedIndex: '9',
          dbSizeInUse: '4096',
        });
      },
      HashKV: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { header: HEADER, hash: 123456, compact_revision: '0' }),
      Alarm: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb({ code: 9, details: 'etcdserver: no alarms / 100% here' }),
      // x-mode: ok (5 chunks of 1 MiB), fail (2, then an error), early (an error first), hang (1, then wait for the client to go).
      Snapshot: (call: grpc.ServerWritableStream<unknown, unknown>) => {
        const mode = String(call.metadata.get('x-mode')[0]);
        const fail = () =>
          call.emit('error', Object.assign(new Error('etcdserver: snapshot failed / 100%'), { code: 9, details: 'etcdserver: snapshot failed / 100%' }));
        if (mode === 'early') return fail();
        const chunks = mode === 'ok' ? SNAP_CHUNKS : mode === 'fail' ? 2 : 1;
        for (let i = 0; i < chunks; i++) call.write({ remaining_bytes: String((SNAP_CHUNKS - 1 - i) * SNAP_CHUNK), blob: Buffer.alloc(SNAP_CHUNK, i + 1) });
        if (mode === 'ok') call.end();
        else if (mode === 'fail') fail();
        else call.once('cancelled', () => (snapshotCancelled = call.cancelled));
      },
    });
    listener = await listenWithAuthorityRewrite(server, `127.0.0.1:${port}`);
    assert.equal(listener.port, port);
  });

  after(async () => {
    await new Promise<void>((resolve) => server?.tryShutdown(() => resolve()));
    server?.forceShutdown();
    await listener?.close();
  });

  test('etcdctl endpoint status/hashkv with an http:// endpoint (:authority "http://...")', async () => {
    const st = await etcdctl('--endpoints', `http://127.0.0.1:${port}`, 'endpoint', 'status', '-w', 'json');
    assert.equal(st.code, 0, st.stderr);
    const status = JSON.parse(st.stdout) as Array<{ Endpoint: string; Status: { version: string; leader: number; header: { member_id: number } } }>;
    assert.equal(status[0].Endpoint, `http://127.0.0.1:${port}`);
    assert.equal(status[0].Status.version, '3.4.23');
    assert.equal(status[0].Status.header.member_id, 42);
    const hk = await etcdctl('--endpoints', `http://127.0.0.1:${port}`, 'endpoint', 'hashkv', '-w', 'json');
    assert.equal(hk.code, 0, hk.stderr);
    assert.equal((JSON.parse(hk.stdout) as Array<{ HashKV: { hash: number } }>)[0].HashKV.hash, 123456);
  });

  test('etcdctl with a plain host:port endpoint', async () => {
    const st = await etcdctl('--endpoints', `127.0.0.1:${port}`, 'endpoint', 'status', '-w', 'json');
    assert.equal(st.code, 0, st.stderr);
    assert.equal((JSON.parse(st.stdout) as Array<{ Status: { version: string } }>)[0].Status.version, '3.4.23');
  });

  test('grpc-js connections and a valid first request get the socket itself; a rewritten first request or a PING first, the rewrite', async () => {
    const before = listener.connections();
    const client = new Maintenance(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      Status(req: object, cb: (err: grpc.ServiceError | null, res: { version: string }) => void): void;
    };
    try {
      const res = await new Promise<{ version: string }>((resolve, reject) => client.Status({}, (err, r) => (err ? reject(err) : resolve(r))));
      assert.equal(res.version, '3.4.23');
    } finally {
      client.close();
    }
    const afterGrpcJs = listener.connections();
    assert.deepEqual(afterGrpcJs, { native: before.native + 1, rewritten: before.rewritten });

    // Node's bare http2 client, like grpc-go, sends an empty SETTINGS: its first request decides.
    const session = async (first: string, opts: { waitMs?: number; ping?: boolean }, then: string[]) => {
      const was = listener.connections();
      const h2 = http2.connect(`http://127.0.0.1:${port}`);
      h2.on('error', () => {});
      try {
        await new Promise((r) => setTimeout(r, opts.waitMs ?? 0));
        if (opts.ping) {
          // Node cancels a ping made before the session has connected.
          if (h2.connecting) await new Promise((resolve) => h2.once('connect', resolve));
          await new Promise<void>((resolve, reject) => h2.ping((err) => (err ? reject(err) : resolve())));
        }
        await h2Status(h2, first, 'first', 0);
        for (const [i, a] of then.entries()) await h2Status(h2, a, `then-${i}`, i + 1);
      } finally {
        h2.close();
      }
      const now = listener.connections();
      return { native: now.native - was.native, rewritten: now.rewritten - was.rewritten };
    };
    const good = `127.0.0.1:${port}`;
    const bad = `http://127.0.0.1:${port}`;
    assert.deepEqual(await session(good, {}, [good, good]), { native: 1, rewritten: 0 }, 'a valid :authority first: the socket');
    assert.deepEqual(await session(bad, {}, [bad, good, bad]), { native: 0, rewritten: 1 }, 'an :authority rewritten first: the rewrite');
    // A client idle for a while before its first call waits for nothing: its first request still decides.
    assert.deepEqual(await session(good, { waitMs: 700 }, [good]), { native: 1, rewritten: 0 }, 'an idle start, then a valid :authority');
    // A PING before any request wants its answer: the rewrite at once (its session answers).
    assert.deepEqual(await session(good, { ping: true }, [bad]), { native: 0, rewritten: 1 }, 'a PING first: the rewrite');

    // etcdctl: its endpoint commands dial the endpoint string as it is, so an http:// endpoint is rewritten;
    // a host:port endpoint's connection carries a valid :authority and gets the socket.
    const a = listener.connections();
    const st = await etcdctl('--endpoints', bad, 'endpoint', 'status', '-w', 'json');
    assert.equal(st.code, 0, st.stderr);
    const b = listener.connections();
    assert.ok(b.rewritten > a.rewritten, `etcdctl's http:// endpoint went through the rewrite: ${JSON.stringify([a, b])}`);
    const put = await etcdctl('--endpoints', good, 'endpoint', 'status', '-w', 'json');
    assert.equal(put.code, 0, put.stderr);
    const c = listener.connections();
    assert.ok(c.native > b.native, `etcdctl's host:port endpoint got the socket: ${JSON.stringify([b, c])}`);
  });

  test('a probed connection decided mid-frame: what the probe read past the first request reaches the server whole', async () => {
    // A grpc-go-like client by hand: empty SETTINGS, then (once the listener's SETTINGS is in) the ACK,
    // a request, and the start of a second one, cut inside its frame header or its header block.
    const block = (xRequest: string) =>
      Buffer.concat([
        REQUEST_FIELDS,
        Buffer.from([0x01]), // :authority, literal without indexing
        plain(`127.0.0.1:${port}`),
        Buffer.from([0x0f, 0x10]), // content-type (static index 31)
        plain('application/grpc'),
        Buffer.from([0x00]),
        plain('te'),
        plain('trailers'),
        Buffer.from([0x00]),
        plain('x-request'),
        plain(xRequest),
      ]);
    for (const cut of [4, 9 + 20]) {
      const was = listener.connections();
      const tag = `probe-cut-${cut}`;
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => {});
      try {
        let got = Buffer.alloc(0);
        const settings = new Promise<void>((resolve) =>
          socket.on('data', (c: Buffer) => {
            got = Buffer.concat([got, c]);
            if (got.length >= 9) resolve();
          }),
        );
        await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
        socket.write(Buffer.concat([PREFACE, frame(0x4, 0, 0, Buffer.alloc(0))]));
        await settings;
        assert.deepEqual(got.subarray(0, 9), frame(0x4, 0, 0, Buffer.alloc(0)), "the listener's own empty SETTINGS comes first");
        const second = frame(0x1, 0x4, 3, block(`${tag}-b`));
        socket.write(
          Buffer.concat([
            frame(0x4, 0x1, 0, Buffer.alloc(0)),
            frame(0x1, 0x4, 1, block(`${tag}-a`)),
            frame(0x0, 0x1, 1, Buffer.alloc(5)),
            second.subarray(0, cut),
          ]),
        );
        await new Promise((r) => setTimeout(r, 100));
        socket.write(Buffer.concat([second.subarray(cut), frame(0x0, 0x1, 3, Buffer.alloc(5))]));
        for (let i = 0; i < 100 && !xRequests.includes(`${tag}-b`); i++) await new Promise((r) => setTimeout(r, 50));
        assert.ok(xRequests.includes(`${tag}-a`) && xRequests.includes(`${tag}-b`), `both requests served (cut at ${cut}): ${xRequests.slice(-3).join(', ')}`);
        const now = listener.connections();
        assert.deepEqual({ native: now.native - was.native, rewritten: now.rewritten - was.rewritten }, { native: 1, rewritten: 0 });
      } finally {
        socket.destroy();
      }
    }
  });

  test('grpc-js: 500 sequential calls on one connection, each with its own deadline', async () => {
    const client = new Maintenance(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      Status(req: object, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res: { version: string }) => void): void;
    };
    try {
      for (let i = 0; i < 500; i++) {
        const res = await new Promise<{ version: string }>((resolve, reject) =>
          client.Status({}, { deadline: Date.now() + 10_000 + i * 7 }, (err, r) => (err ? reject(err) : resolve(r))),
        );
        assert.equal(res.version, '3.4.23');
      }
    } finally {
      client.close();
    }
    assert.match(peers.at(-1)!, /^127\.0\.0\.1:\d+$/, 'getPeer() names the client');
  });

  test('unary calls answered as grpc-js answers them: values, error statuses, an oversized request, a compressed one, one that would inflate past the limit', async () => {
    const BulkClient = grpc.makeGenericClientConstructor(Bulk, 'Bulk');
    type EchoClient = grpc.Client & { Echo(req: Buffer, cb: (err: grpc.ServiceError | null, res: Buffer) => void): void };
    const connect = (opts: grpc.ChannelOptions) => new BulkClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), opts) as unknown as EchoClient;
    const echo = (c: EchoClient, req: Buffer) => new Promise<Buffer>((resolve, reject) => c.Echo(req, (err, res) => (err ? reject(err) : resolve(res))));
    const failure = (p: Promise<unknown>) =>
      p.then(
        () => assert.fail('the call succeeded'),
        (e: grpc.ServiceError) => e,
      );
    const plain = connect({ 'grpc.max_send_message_length': 16 << 20 });
    const gzip = connect({ 'grpc.default_compression_algorithm': grpc.compressionAlgorithms.gzip, 'grpc.max_send_message_length': 16 << 20 });
    try {
      const before = server.calls();
      assert.deepEqual(await echo(plain, Buffer.from('hello')), Buffer.from('hello'));
      const err = await failure(echo(plain, Buffer.from('fail: etcdserver: 100% odd / détail')));
      assert.equal(err.code, 9);
      assert.equal(err.details, 'etcdserver: 100% odd / détail');
      const big = await failure(echo(plain, Buffer.alloc((8 << 20) + 1)));
      assert.equal(big.code, grpc.status.RESOURCE_EXHAUSTED);
      assert.match(big.details, /^Received message larger than max \(8388609 vs 8388608\)$/);
      assert.equal(server.calls(), before + 3, 'all three were served');
      assert.deepEqual(await echo(gzip, Buffer.from('zipped '.repeat(100))), Buffer.from('zipped '.repeat(100)));
      assert.equal(server.calls(), before + 4, 'the compressed request was served too');
      // A small compressed request that would inflate past the limit is refused as a large one is.
      const bomb = await failure(echo(gzip, Buffer.alloc((8 << 20) + 1)));
      assert.equal(bomb.code, grpc.status.RESOURCE_EXHAUSTED);
      assert.match(bomb.details, /^Received message that decompresses to a size larger than 8388608$/);
    } finally {
      plain.close();
      gzip.close();
    }
    // etcdctl (grpc-go) reads a direct error status too.
    const n = server.calls();
    const alarms = await etcdctl('--endpoints', `127.0.0.1:${port}`, 'alarm', 'list');
    assert.notEqual(alarms.code, 0);
    assert.match(alarms.stderr, /etcdserver: no alarms \/ 100% here/);
    assert.ok(server.calls() > n);
  });

  test('server-streaming calls: every message whole and in order, an error after messages or before any, a client that goes away', async () => {
    type SnapshotClient = grpc.Client & { Snapshot(req: object, md: grpc.Metadata): grpc.ClientReadableStream<{ remaining_bytes: string; blob: Buffer }> };
    const client = new Maintenance(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as SnapshotClient;
    const snapshot = (mode: string) => {
      const md = new grpc.Metadata();
      md.set('x-mode', mode);
      return client.Snapshot({}, md);
    };
    /** Every message until the end, and the error the call ended with (none for OK). */
    const drain = (s: grpc.ClientReadableStream<{ remaining_bytes: string; blob: Buffer }>) =>
      new Promise<{ got: Array<{ remaining_bytes: string; blob: Buffer }>; err?: grpc.ServiceError }>((resolve) => {
        const got: Array<{ remaining_bytes: string; blob: Buffer }> = [];
        s.on('data', (m: { remaining_bytes: string; blob: Buffer }) => got.push(m));
        s.on('error', (err: grpc.ServiceError) => resolve({ got, err }));
        s.on('status', (st: grpc.StatusObject) => st.code === grpc.status.OK && resolve({ got }));
      });
    try {
      const before = server.calls();
      const ok = await drain(snapshot('ok'));
      assert.equal(ok.err, undefined);
      assert.deepEqual(
        ok.got.map((m) => m.remaining_bytes),
        Array.from({ length: SNAP_CHUNKS }, (_, i) => String((SNAP_CHUNKS - 1 - i) * SNAP_CHUNK)),
      );
      ok.got.forEach((m, i) => assert.ok(m.blob.equals(Buffer.alloc(SNAP_CHUNK, i + 1)), `chunk ${i} arrived whole`));
      const failed = await drain(snapshot('fail'));
      assert.equal(failed.got.length, 2);
      assert.equal(failed.err?.code, 9);
      assert.equal(failed.err?.details, 'etcdserver: snapshot failed / 100%');
      const early = await drain(snapshot('early'));
      assert.deepEqual([early.got.length, early.err?.code, early.err?.details], [0, 9, 'etcdserver: snapshot failed / 100%']);
      const hang = snapshot('hang');
      await new Promise((resolve) => hang.once('data', resolve));
      hang.on('error', () => {}); // CANCELLED, as asked
      hang.cancel();
      for (let i = 0; i < 100 && !snapshotCancelled; i++) await new Promise((r) => setTimeout(r, 20));
      assert.ok(snapshotCancelled, 'the handler saw the client go away');
      assert.equal(server.calls(), before + 4, 'all four were served');
    } finally {
      client.close();
    }
  });

  /** One raw gRPC Status call over a Node http2 session; checks what the server decoded. */
  async function h2Status(session: http2.ClientHttp2Session, authority: string, xRequest: string, i: number): Promise<void> {
    const res = await new Promise<{ status: number; grpcStatus: string | undefined; body: Buffer }>((resolve, reject) => {
      const req = session.request({
        ':method': 'POST',
        ':path': '/etcdserverpb.Maintenance/Status',
        ':authority': authority,
        'content-type': 'application/grpc',
        te: 'trailers',
        'grpc-timeout': `${10_000 + i}m`,
        'x-request': xRequest,
      });
      let status = 0;
      let grpcStatus: string | undefined;
      const body: Buffer[] = [];
      req.on('response', (h) => {
        status = Number(h[':status']);
        if (h['grpc-status'] !== undefined) grpcStatus = String(h['grpc-status']);
      });
      req.on('trailers', (t) => (grpcStatus = String(t['grpc-status'])));
      req.on('data', (c: Buffer) => body.push(c));
      req.on('end', () => resolve({ status, grpcStatus, body: Buffer.concat(body) }));
      req.on('error', reject);
      req.end(Buffer.alloc(5)); // one empty StatusRequest message
    });
    assert.equal(res.status, 200, `request ${i} (${authority})`);
    assert.equal(res.grpcStatus, '0', `request ${i} (${authority})`);
    assert.ok(res.body.length > 5 && res.body.includes(Buffer.from('3.4.23')), `request ${i}: a StatusResponse`);
    assert.equal(xRequests.at(-1), xRequest, `request ${i}: the server decoded the very headers sent`);
  }

  test('Node http2: 400 requests with bad and good :authority values of many lengths, filling and evicting the HPACK table', async () => {
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    const seen: string[] = [];
    const sentX: string[] = [];
    const rnd = prng(12345);
    try {
      for (let i = 0; i < 400; i++) {
        let authority: string;
        const pick = rnd(10);
        if (pick < 2 && seen.length > 0)
          authority = seen[rnd(seen.length)]!; // reuse: maybe an indexed field
        else if (pick < 4) authority = `127.0.0.1:${port}`;
        else if (pick < 6)
          authority = `a/${i}`; // shorter than host:port
        else authority = `http://h${i}.example:${port}/${'p'.repeat(rnd(120))}`;
        seen.push(authority);
        // New values enter the dynamic table; reused ones come back as indexed fields.
        const xRequest = rnd(3) === 0 && sentX.length > 0 ? sentX[rnd(sentX.length)] : `r${i}-${'q'.repeat(rnd(60))}`;
        sentX.push(xRequest);
        await h2Status(session, authority, xRequest, i);
      }
    } finally {
      session.close();
    }
  });

  test("Node http2: the server's HPACK table stays in step with the client's (entries keep their size)", async () => {
    // Every request adds a short invalid :authority ("a/17"; a replacement of another
    // length would make the server's table evict at other moments than the client's),
    // then refers back to an x-request value sent k requests before, for k up to about
    // the table's reach: the oldest entries the client still indexes.
    const session = http2.connect(`http://127.0.0.1:${port}`);
    session.on('error', () => {});
    const sentX: string[] = [];
    try {
      for (let i = 0; i < 300; i++) {
        const k = 1 + (i % 30);
        const xRequest = i % 2 === 1 && sentX.length >= k ? sentX[sentX.length - k] : `r${i}-${'q'.repeat(i % 40)}`;
        sentX.push(xRequest);
        await h2Status(session, `a/${i}`, xRequest, i);
      }
    } finally {
      session.close();
    }
  });

  test('big messages both ways, several at once (DATA frames, flow control, back-pressure)', async () => {
    const BulkClient = grpc.makeGenericClientConstructor(Bulk, 'Bulk');
    const client = new BulkClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
      'grpc.max_send_message_length': 8 << 20,
      'grpc.max_receive_message_length': 8 << 20,
    }) as unknown as grpc.Client & { Echo(req: Buffer, cb: (err: grpc.ServiceError | null, res: Buffer) => void): void };
    try {
      for (let round = 0; round < 3; round++) {
        await Promise.all(
          [1, 2, 3, 4].map(async (k) => {
            const msg = Buffer.alloc(3 * 1024 * 1024 + k * 1000);
            for (let i = 0; i < msg.length; i += 4) msg.writeUInt32LE((i * 2654435761 + k) >>> 0, i & ~3);
            const back = await new Promise<Buffer>((resolve, reject) => client.Echo(msg, (err, res) => (err ? reject(err) : resolve(res))));
            assert.ok(back.equals(msg), `message ${k} came back intact`);
          }),
        );
      }
    } finally {
      client.close();
    }
  });

  test('a client closing its side (FIN) is answered as a plain socket would be: the server closes too', async () => {
    const events = await new Promise<string[]>((resolve) => {
      const ev: string[] = [];
      const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true }, () => {
        s.write(Buffer.concat([PREFACE, SETTINGS]));
        setTimeout(() => s.end(), 50);
      });
      s.resume();
      s.on('end', () => ev.push('end'));
      s.on('error', (e) => ev.push(`error ${(e as NodeJS.ErrnoException).code}`));
      s.on('close', () => resolve(ev));
      setTimeout(() => s.destroy(), 5000).unref();
    });
    assert.deepEqual(events, ['end']);
  });

  test('a client that connects and vanishes, or sends garbage, leaves the server serving', async () => {
    for (const bytes of [
      Buffer.alloc(0),
      PREFACE.subarray(0, 10),
      Buffer.from('GET / HTTP/1.1\r\n\r\n'),
      Buffer.concat([PREFACE, frame(0x1, 0x4, 1, Buffer.from([0xff]))]),
    ]) {
      await new Promise<void>((resolve) => {
        const s = net.connect(port, '127.0.0.1', () => {
          s.write(bytes);
          setTimeout(() => s.destroy(), 20);
        });
        s.on('error', () => {});
        s.on('close', () => resolve());
      });
    }
    const st = await etcdctl('--endpoints', `http://127.0.0.1:${port}`, 'endpoint', 'status', '-w', 'json');
    assert.equal(st.code, 0, st.stderr);
  });
});

describe('closing', () => {
  test('close() refuses new connections and drops the open ones', async () => {
    const [port] = (await freePorts(1, 'authorityRewrite-close')) as [number];
    const server = new GrpcServer();
    server.addService(Maintenance.service as unknown as ServiceDefinition, {
      Status: (_c: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { version: 'x' }),
    });
    const l = await listenWithAuthorityRewrite(server, `127.0.0.1:${port}`);
    const open = net.connect(port, '127.0.0.1');
    open.on('error', () => {});
    open.resume(); // read, so that the server's FIN is seen
    await new Promise((r) => open.once('connect', r));
    const closed = new Promise((r) => open.once('close', r));
    l.stopAccepting();
    await assert.rejects(new Promise((resolve, reject) => net.connect(port, '127.0.0.1', () => resolve(undefined)).once('error', reject)), /ECONNREFUSED/);
    await l.close();
    await closed;
    await l.close(); // twice is fine
    server.forceShutdown();
  });

  test('a port in use fails with the listen error', async () => {
    const [port] = (await freePorts(1, 'authorityRewrite-busy')) as [number];
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(port, '127.0.0.1', () => r()));
    try {
      await assert.rejects(listenWithAuthorityRewrite(new GrpcServer(), `127.0.0.1:${port}`), /EADDRINUSE/);
    } finally {
      blocker.close();
    }
  });
});
