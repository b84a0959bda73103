// The :authority rewrite in front of grpc-js (src/api/authorityRewrite.ts):
// HPACK and frame handling on crafted bytes, then real clients end to end —
// etcdctl (whose endpoint commands send `:authority: http://host:port`),
// grpc-js, and Node's http2 client filling and evicting the HPACK table.
import * as grpc from '@grpc/grpc-js';
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import http2 from 'node:http2';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  AuthorityRewriter,
  huffmanDecode,
  isValidAuthority,
  listenWithAuthorityRewrite,
  replacementAuthority,
  rewriteHeaderBlock,
  type AuthorityRewriteListener,
} from '../../src/api/authorityRewrite.js';
import { service } from '../../src/api/protos.js';
import { freePorts } from '../support/ports.js';

// ---- byte builders ----------------------------------------------------------

/** RFC 7541 §5.1 integer: `flags` in the first byte's high bits, an N-bit prefix. */
function hInt(prefixBits: number, flags: number, v: number): Buffer {
  const max = (1 << prefixBits) - 1;
  if (v < max) return Buffer.from([flags | v]);
  const out = [flags | max];
  v -= max;
  while (v >= 128) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.from(out);
}
/** A plain string literal. */
const plain = (s: string | Buffer) => Buffer.concat([hInt(7, 0, Buffer.byteLength(s)), Buffer.from(s)]);
/** A Huffman string literal from its encoded bytes. */
const huff = (hex: string) => Buffer.concat([hInt(7, 0x80, hex.length / 2), Buffer.from(hex, 'hex')]);

// Huffman encodings (RFC 7541 Appendix B; the first from its C.4.1 example).
const H_WWW_EXAMPLE_COM = 'f1e3c2e5f23a6ba0ab90f4ff';
const H_AUTHORITY_NAME = 'b83b5339ec327d7f'; // ":authority"
const H_ETCDCTL_AUTHORITY = '9d29aee30c044eae05c0b86e32c85a67'; // "http://127.0.0.1:33143"
const H_VALID_AUTHORITY = '089d5c0b8170dc132ebf'; // "127.0.0.1:2379"

function frame(type: number, flags: number, sid: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(sid, 5);
  return Buffer.concat([h, payload]);
}
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const SETTINGS = frame(0x4, 0, 0, Buffer.from('000300000064', 'hex'));
const WINDOW_UPDATE = frame(0x8, 0, 0, Buffer.from('00100000', 'hex'));
const PING = frame(0x6, 0, 0, Buffer.from('0102030405060708', 'hex'));
const data = (sid: number, n: number, flags = 0) => frame(0x0, flags, sid, Buffer.alloc(n, sid & 0xff));

/** Fields every request below carries besides :authority: :method POST, :scheme http, :path. */
const REQUEST_FIELDS = Buffer.concat([Buffer.from([0x83, 0x86]), Buffer.from([0x44]), plain('/etcdserverpb.Maintenance/Status')]);

const replace = (len: number) => Buffer.from(replacementAuthority('127.0.0.1', 2379, len), 'latin1');

/** A seeded generator of integers in [0, n) (mulberry32). */
function prng(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) / 4294967296) * n | 0;
  };
}

function runAll(r: AuthorityRewriter, chunks: Buffer[]): Buffer {
  const out: Buffer[] = [];
  for (const c of chunks) out.push(...r.push(c));
  out.push(...r.end());
  return Buffer.concat(out);
}

// ---- HPACK --------------------------------------------------------------------

describe('HPACK pieces', () => {
  test('Huffman decoding: RFC 7541 vectors and what etcdctl sends', () => {
    assert.equal(huffmanDecode(Buffer.from(H_WWW_EXAMPLE_COM, 'hex'))?.toString(), 'www.example.com');
    assert.equal(huffmanDecode(Buffer.from('a8eb10649cbf', 'hex'))?.toString(), 'no-cache');
    assert.equal(huffmanDecode(Buffer.from('25a849e95bb8e8b4bf', 'hex'))?.toString(), 'custom-value');
    assert.equal(huffmanDecode(Buffer.from(H_AUTHORITY_NAME, 'hex'))?.toString(), ':authority');
    assert.equal(huffmanDecode(Buffer.from(H_ETCDCTL_AUTHORITY, 'hex'))?.toString(), 'http://127.0.0.1:33143');
    assert.equal(huffmanDecode(Buffer.alloc(0))?.toString(), '');
  });

  test('Huffman decoding rejects bad padding and EOS', () => {
    assert.equal(huffmanDecode(Buffer.from('f1e3c2e5f23a6ba0ab90f4', 'hex')), null, 'padding of 0 bits ends mid-symbol');
    assert.equal(huffmanDecode(Buffer.from('18', 'hex')), null, "'a' (00011) padded with zeros");
    assert.equal(huffmanDecode(Buffer.from('1f', 'hex'))?.toString(), 'a', "'a' (00011) padded with ones");
    assert.equal(huffmanDecode(Buffer.from('1fff', 'hex')), null, 'padding longer than 7 bits');
    assert.equal(huffmanDecode(Buffer.from('ffffffff', 'hex')), null, 'EOS (30 ones)');
  });

  test('authority characters: what nghttp2 accepts', () => {
    assert.ok(isValidAuthority(Buffer.from('127.0.0.1:2379')));
    assert.ok(isValidAuthority(Buffer.from('[::1]:2379')));
    assert.ok(isValidAuthority(Buffer.from('')));
    assert.ok(!isValidAuthority(Buffer.from('http://127.0.0.1:2379')));
    assert.ok(!isValidAuthority(Buffer.from('a b')));
    assert.ok(!isValidAuthority(Buffer.from('a?b')));
  });

  test('replacement values keep the length and stay valid', () => {
    assert.equal(replacementAuthority('127.0.0.1', 12379, 22), '127.0.0.1:000000012379');
    assert.equal(replacementAuthority('127.0.0.1', 12379, 15), '127.0.0.1:12379');
    assert.equal(replacementAuthority('127.0.0.1', 12379, 14), 'x'.repeat(14));
    assert.equal(replacementAuthority('::1', 2379, 20), '[::1]:00000000002379');
    for (let len = 0; len < 300; len++) {
      const v = replacementAuthority('10.1.2.3', 2379, len);
      assert.equal(v.length, len);
      assert.ok(isValidAuthority(Buffer.from(v)));
      assert.ok(!v.includes('@'));
    }
  });
});

describe('rewriting a header block', () => {
  test('a literal with incremental indexing, name index 1, plain value', () => {
    const block = Buffer.concat([REQUEST_FIELDS, Buffer.from([0x41]), plain('http://a:1'), Buffer.from([0x5f, 0x03]), plain('3.4')]);
    const out = rewriteHeaderBlock(block, replace);
    assert.deepEqual(out, Buffer.concat([REQUEST_FIELDS, Buffer.from([0x41]), plain('xxxxxxxxxx'), Buffer.from([0x5f, 0x03]), plain('3.4')]));
  });

  test('a Huffman-coded value is decoded to learn its length, then replaced by a plain one', () => {
    const block = Buffer.concat([Buffer.from([0x83, 0x86, 0x41]), huff(H_ETCDCTL_AUTHORITY), Buffer.from([0x84])]);
    const out = rewriteHeaderBlock(block, replace);
    assert.deepEqual(out, Buffer.concat([Buffer.from([0x83, 0x86, 0x41]), plain('127.0.0.1:000000002379'), Buffer.from([0x84])]));
  });

  test('without indexing (0000) and never indexed (0001), with a literal name, plain or Huffman', () => {
    for (const head of [
      Buffer.from([0x01]),
      Buffer.from([0x11]),
      Buffer.concat([Buffer.from([0x40]), plain(':authority')]),
      Buffer.concat([Buffer.from([0x00]), plain(':authority')]),
      Buffer.concat([Buffer.from([0x10]), huff(H_AUTHORITY_NAME)]),
    ]) {
      const block = Buffer.concat([Buffer.from([0x82]), head, plain('http://127.0.0.1:2379')]);
      const out = rewriteHeaderBlock(block, replace);
      assert.deepEqual(out, Buffer.concat([Buffer.from([0x82]), head, plain('127.0.0.1:00000002379')]), head.toString('hex'));
    }
  });

  test('a valid :authority, other names and indexed fields pass unchanged', () => {
    const blocks = [
      Buffer.concat([REQUEST_FIELDS, Buffer.from([0x41]), plain('127.0.0.1:2379')]),
      Buffer.concat([REQUEST_FIELDS, Buffer.from([0x41]), huff(H_VALID_AUTHORITY)]),
      Buffer.concat([Buffer.from([0x40]), plain(':authorit'), plain('a/b'), Buffer.from([0x40]), plain('x-authority'), plain('a/b')]),
      Buffer.concat([Buffer.from([0x04]), plain('/a/b'), Buffer.from([0xbe, 0xff, 0x80, 0x01])]), // :path literal; indexed 62 and 255
      Buffer.concat([Buffer.from([0x3f, 0xe1, 0x1f]), Buffer.from([0x82])]), // table size update to 4096
    ];
    for (const b of blocks) assert.equal(rewriteHeaderBlock(b, replace), null, b.toString('hex'));
  });

  test('multi-byte integers: a size update, a big name index, a long value', () => {
    const long = 'http://' + 'h'.repeat(300);
    const block = Buffer.concat([
      Buffer.from([0x3f, 0xe1, 0x1f]),
      hInt(4, 0x00, 300), // literal without indexing, name index 300 (dynamic)
      plain('v'),
      hInt(7, 0x80, 1000), // indexed field 1000
      Buffer.from([0x41]),
      plain(long),
      Buffer.from([0x86]),
    ]);
    const out = rewriteHeaderBlock(block, replace);
    const want = Buffer.concat([block.subarray(0, block.length - plain(long).length - 1), plain(replacementAuthority('127.0.0.1', 2379, 307)), Buffer.from([0x86])]);
    assert.deepEqual(out, want);
    assert.deepEqual([...plain(long).subarray(0, 3)], [0x7f, 0xb4, 0x01], 'the length takes three bytes');
  });

  test('several :authority fields are all replaced', () => {
    const block = Buffer.concat([Buffer.from([0x41]), plain('a/b'), Buffer.from([0x01]), plain('c d'), Buffer.from([0x41]), plain('ok')]);
    assert.deepEqual(rewriteHeaderBlock(block, replace), Buffer.concat([Buffer.from([0x41]), plain('xxx'), Buffer.from([0x01]), plain('xxx'), Buffer.from([0x41]), plain('ok')]));
  });

  test('malformed blocks are left for nghttp2 to refuse', () => {
    const good = Buffer.concat([Buffer.from([0x41]), plain('http://127.0.0.1:2379')]);
    for (let cut = 1; cut < good.length; cut++) assert.equal(rewriteHeaderBlock(good.subarray(0, cut), replace), null, `cut at ${cut}`);
    assert.equal(rewriteHeaderBlock(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), replace), null, 'endless integer');
    assert.equal(rewriteHeaderBlock(Buffer.concat([Buffer.from([0x41]), huff('1fff')]), replace), null, 'bad Huffman value');
  });
});

// ---- frames -----------------------------------------------------------------

describe('rewriting the client byte stream', () => {
  const BAD = 'http://127.0.0.1:2379';
  const GOOD = '127.0.0.1:00000002379';
  const blockWith = (v: Buffer) => Buffer.concat([REQUEST_FIELDS, Buffer.from([0x41]), v, Buffer.from([0x40]), plain('te'), plain('trailers')]);
  const badBlock = blockWith(plain(BAD));
  const fixedBlock = blockWith(plain(GOOD));

  // Input and expected output, frame by frame.
  const cases: Array<{ name: string; input: Buffer; want: Buffer }> = [];
  cases.push({ name: 'preface and SETTINGS', input: Buffer.concat([PREFACE, SETTINGS]), want: Buffer.concat([PREFACE, SETTINGS]) });
  cases.push({ name: 'HEADERS to rewrite', input: frame(0x1, 0x4, 1, badBlock), want: frame(0x1, 0x4, 1, fixedBlock) });
  cases.push({ name: 'DATA', input: data(1, 40, 0x1), want: data(1, 40, 0x1) });
  {
    const ok = blockWith(huff(H_VALID_AUTHORITY));
    cases.push({ name: 'HEADERS left alone (padded)', input: frame(0x1, 0x4 | 0x8, 3, Buffer.concat([Buffer.from([4]), ok, Buffer.alloc(4)])), want: frame(0x1, 0x4 | 0x8, 3, Buffer.concat([Buffer.from([4]), ok, Buffer.alloc(4)])) });
  }
  cases.push({ name: 'WINDOW_UPDATE', input: WINDOW_UPDATE, want: WINDOW_UPDATE });
  {
    // PADDED + PRIORITY + END_STREAM: padding dropped, priority kept.
    const prio = Buffer.from([0x80, 0, 0, 1, 200]);
    const input = frame(0x1, 0x1 | 0x4 | 0x8 | 0x20, 5, Buffer.concat([Buffer.from([7]), prio, blockWith(huff(H_ETCDCTL_AUTHORITY)), Buffer.alloc(7)]));
    const want = frame(0x1, 0x1 | 0x4 | 0x20, 5, Buffer.concat([prio, blockWith(plain('127.0.0.1:000000002379'))]));
    cases.push({ name: 'padded HEADERS with priority', input, want });
  }
  {
    // A block over HEADERS + 2 CONTINUATIONs, the :authority field cut in the middle of its value.
    const cut1 = REQUEST_FIELDS.length + 5;
    const cut2 = cut1 + 10;
    const input = Buffer.concat([
      frame(0x1, 0x8, 7, Buffer.concat([Buffer.from([2]), badBlock.subarray(0, cut1), Buffer.alloc(2)])),
      frame(0x9, 0, 7, badBlock.subarray(cut1, cut2)),
      frame(0x9, 0x4, 7, badBlock.subarray(cut2)),
    ]);
    cases.push({ name: 'HEADERS + CONTINUATIONs', input, want: frame(0x1, 0x4, 7, fixedBlock) });
  }
  {
    // CONTINUATIONs of a block that needs no change stay as they were.
    const ok = blockWith(plain('127.0.0.1:2379'));
    const input = Buffer.concat([frame(0x1, 0, 9, ok.subarray(0, 10)), frame(0x9, 0x4, 9, ok.subarray(10))]);
    cases.push({ name: 'unchanged HEADERS + CONTINUATION', input, want: input });
  }
  cases.push({ name: 'PING and big DATA', input: Buffer.concat([PING, data(5, 20000)]), want: Buffer.concat([PING, data(5, 20000)]) });
  cases.push({ name: 'empty HEADERS', input: frame(0x1, 0x4, 11, Buffer.alloc(0)), want: frame(0x1, 0x4, 11, Buffer.alloc(0)) });

  const input = Buffer.concat(cases.map((c) => c.input));
  const want = Buffer.concat(cases.map((c) => c.want));

  test('each kind of frame, in one chunk', () => {
    const r = new AuthorityRewriter(replace);
    for (const c of cases) assert.deepEqual(Buffer.concat(r.push(c.input)), c.want, c.name);
    assert.deepEqual(r.end(), []);
    assert.deepEqual(runAll(new AuthorityRewriter(replace), [input]), want);
  });

  test('the same stream cut in two at every byte boundary', () => {
    for (let cut = 0; cut <= input.length; cut++) {
      const got = runAll(new AuthorityRewriter(replace), [input.subarray(0, cut), input.subarray(cut)]);
      if (!got.equals(want)) assert.fail(`cut at ${cut}: output differs`);
    }
  });

  test('the same stream one byte at a time, and in random pieces', () => {
    const bytes = Array.from(input, (_, i) => input.subarray(i, i + 1));
    assert.deepEqual(runAll(new AuthorityRewriter(replace), bytes), want);
    const random = prng(7);
    const rnd = () => random(40) + 1;
    for (let round = 0; round < 50; round++) {
      const pieces: Buffer[] = [];
      for (let at = 0; at < input.length; ) {
        const n = rnd();
        pieces.push(input.subarray(at, at + n));
        at += n;
      }
      assert.deepEqual(runAll(new AuthorityRewriter(replace), pieces), want);
    }
  });

  test('frames that pass are views of the input, not copies', () => {
    const r = new AuthorityRewriter(replace);
    r.push(Buffer.concat([PREFACE, SETTINGS]));
    const chunk = Buffer.concat([data(1, 1000), WINDOW_UPDATE, frame(0x1, 0x4, 3, blockWith(plain('127.0.0.1:2379'))), data(3, 50)]);
    const out = r.push(chunk);
    assert.equal(out.length, 1);
    assert.equal(out[0], chunk, 'the very same Buffer');
    // A DATA frame split over chunks: each piece passes as it came.
    const big = data(5, 5000);
    const a = big.subarray(0, 2000);
    const b = big.subarray(2000);
    assert.deepEqual(r.push(a), [a]);
    assert.deepEqual(r.push(b), [b]);
  });

  test('a rewritten block over 16384 octets is re-split into CONTINUATIONs', () => {
    const huge = Buffer.concat([Buffer.from([0x41]), plain('http://x/' + 'p'.repeat(20000))]);
    const r = new AuthorityRewriter(replace);
    const out = runAll(r, [PREFACE, frame(0x1, 0x0, 1, huge.subarray(0, 16000)), frame(0x9, 0x4, 1, huge.subarray(16000))]);
    const frames: Array<{ type: number; flags: number; len: number; payload: Buffer }> = [];
    for (let at = PREFACE.length; at < out.length; ) {
      const len = out.readUIntBE(at, 3);
      frames.push({ type: out[at + 3], flags: out[at + 4], len, payload: out.subarray(at + 9, at + 9 + len) });
      at += 9 + len;
    }
    assert.deepEqual(frames.map((f) => [f.type, f.flags, f.len]), [[0x1, 0x0, 16384], [0x9, 0x4, huge.length - 16384]]);
    const block = Buffer.concat(frames.map((f) => f.payload));
    assert.deepEqual(block, Buffer.concat([Buffer.from([0x41]), plain(replacementAuthority('127.0.0.1', 2379, 20009))]));
  });

  test('not HTTP/2: everything passes as it is', () => {
    const http1 = Buffer.from('GET / HTTP/1.1\r\nHost: a/b\r\n\r\n');
    assert.deepEqual(runAll(new AuthorityRewriter(replace), [http1]), http1);
    const almost = Buffer.concat([PREFACE.subarray(0, 10), Buffer.from('X'), frame(0x1, 0x4, 1, badBlock)]);
    for (let cut = 0; cut <= almost.length; cut++) assert.deepEqual(runAll(new AuthorityRewriter(replace), [almost.subarray(0, cut), almost.subarray(cut)]), almost);
  });

  test('a broken CONTINUATION sequence passes as received, for nghttp2 to refuse', () => {
    const broken = Buffer.concat([PREFACE, frame(0x1, 0, 1, badBlock.subarray(0, 20)), data(1, 5), frame(0x9, 0x4, 1, badBlock.subarray(20))]);
    const wrongStream = Buffer.concat([PREFACE, frame(0x1, 0, 1, badBlock.subarray(0, 20)), frame(0x9, 0x4, 3, badBlock.subarray(20))]);
    const badPadding = Buffer.concat([PREFACE, frame(0x1, 0x4 | 0x8, 1, Buffer.concat([Buffer.from([200]), badBlock]))]);
    for (const s of [broken, wrongStream, badPadding]) {
      for (let cut = 0; cut <= s.length; cut++) assert.deepEqual(runAll(new AuthorityRewriter(replace), [s.subarray(0, cut), s.subarray(cut)]), s);
    }
  });

  test('input ending mid-frame comes out as received', () => {
    const s = Buffer.concat([PREFACE, SETTINGS, frame(0x1, 0, 1, badBlock.subarray(0, 20)), frame(0x9, 0x4, 1, badBlock.subarray(20))]);
    for (let end = 0; end < s.length; end++) {
      assert.deepEqual(runAll(new AuthorityRewriter(replace), [s.subarray(0, end)]), s.subarray(0, end));
    }
  });
});

// ---- end to end -------------------------------------------------------------

const Maintenance = service('etcdserverpb.Maintenance');
const asIs = (b: Buffer) => b;
/** Raw bytes both ways: big messages, to push DATA and flow control through the wrapper. */
const Bulk: grpc.ServiceDefinition = {
  Echo: { path: '/test.Bulk/Echo', requestStream: false, responseStream: false, requestSerialize: asIs, requestDeserialize: asIs, responseSerialize: asIs, responseDeserialize: asIs },
};
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

describe('end to end, a grpc-js server behind the rewrite', () => {
  let server: grpc.Server;
  let listener: AuthorityRewriteListener;
  let port: number;
  const peers: string[] = [];
  /** The x-request metadata of each Status call, as the server decoded it. */
  const xRequests: string[] = [];

  before(async () => {
    requireEtcdctl();
    [port] = (await freePorts(1, 'authorityRewrite')) as [number];
    server = new grpc.Server({ 'grpc.max_receive_message_length': 8 << 20 });
    server.addService(Bulk, { Echo: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => cb(null, call.request) });
    server.addService(Maintenance.service, {
      Status: (call: grpc.ServerUnaryCall<unknown, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        peers.push(call.getPeer());
        xRequests.push(String(call.metadata.get('x-request')[0] ?? ''));
        cb(null, { header: HEADER, version: '3.4.23', dbSize: '4096', leader: '42', raftIndex: '9', raftTerm: '3', raftAppliedIndex: '9', dbSizeInUse: '4096' });
      },
      HashKV: (_call: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { header: HEADER, hash: 123456, compact_revision: '0' }),
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
        if (pick < 2 && seen.length > 0) authority = seen[rnd(seen.length)]!; // reuse: maybe an indexed field
        else if (pick < 4) authority = `127.0.0.1:${port}`;
        else if (pick < 6) authority = `a/${i}`; // shorter than host:port
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

  test('Node http2: the server\'s HPACK table stays in step with the client\'s (entries keep their size)', async () => {
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
    for (const bytes of [Buffer.alloc(0), PREFACE.subarray(0, 10), Buffer.from('GET / HTTP/1.1\r\n\r\n'), Buffer.concat([PREFACE, frame(0x1, 0x4, 1, Buffer.from([0xff]))])]) {
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
    const server = new grpc.Server();
    server.addService(Maintenance.service, { Status: (_c: unknown, cb: grpc.sendUnaryData<unknown>) => cb(null, { version: 'x' }) });
    const l = await listenWithAuthorityRewrite(server, `127.0.0.1:${port}`);
    const open = net.connect(port, '127.0.0.1');
    open.on('error', () => {});
    open.resume(); // read, so that the server's FIN is seen
    await new Promise((r) => open.once('connect', r));
    const closed = new Promise((r) => open.once('close', r));
    l.stopAccepting();
    await assert.rejects(
      new Promise((resolve, reject) => net.connect(port, '127.0.0.1', () => resolve(undefined)).once('error', reject)),
      /ECONNREFUSED/,
    );
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
      await assert.rejects(listenWithAuthorityRewrite(new grpc.Server(), `127.0.0.1:${port}`), /EADDRINUSE/);
    } finally {
      blocker.close();
    }
  });
});
