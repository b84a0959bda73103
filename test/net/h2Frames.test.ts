// HTTP/2 frame handling on crafted bytes (src/net/h2Frames.ts): the client
// byte stream rewritten whole, cut at every byte, in random pieces, and the
// malformed or non-HTTP/2 streams that must pass as received.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AuthorityRewriter, EMPTY_SETTINGS } from '../../src/net/h2Frames.js';
import { replacementAuthority } from '../../src/net/hpack.js';
import {
  data,
  frame,
  H_ETCDCTL_AUTHORITY,
  H_VALID_AUTHORITY,
  huff,
  PING,
  plain,
  PREFACE,
  prng,
  replace,
  REQUEST_FIELDS,
  runAll,
  SETTINGS,
  WINDOW_UPDATE,
} from './h2Bytes.js';

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
    cases.push({
      name: 'HEADERS left alone (padded)',
      input: frame(0x1, 0x4 | 0x8, 3, Buffer.concat([Buffer.from([4]), ok, Buffer.alloc(4)])),
      want: frame(0x1, 0x4 | 0x8, 3, Buffer.concat([Buffer.from([4]), ok, Buffer.alloc(4)])),
    });
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
      for (let at = 0; at < input.length;) {
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
    for (let at = PREFACE.length; at < out.length;) {
      const len = out.readUIntBE(at, 3);
      frames.push({ type: out[at + 3], flags: out[at + 4], len, payload: out.subarray(at + 9, at + 9 + len) });
      at += 9 + len;
    }
    assert.deepEqual(
      frames.map((f) => [f.type, f.flags, f.len]),
      [
        [0x1, 0x0, 16384],
        [0x9, 0x4, huge.length - 16384],
      ],
    );
    const block = Buffer.concat(frames.map((f) => f.payload));
    assert.deepEqual(block, Buffer.concat([Buffer.from([0x41]), plain(replacementAuthority('127.0.0.1', 2379, 20009))]));
  });

  test('not HTTP/2: everything passes as it is', () => {
    const http1 = Buffer.from('GET / HTTP/1.1\r\nHost: a/b\r\n\r\n');
    assert.deepEqual(runAll(new AuthorityRewriter(replace), [http1]), http1);
    const almost = Buffer.concat([PREFACE.subarray(0, 10), Buffer.from('X'), frame(0x1, 0x4, 1, badBlock)]);
    for (let cut = 0; cut <= almost.length; cut++)
      assert.deepEqual(runAll(new AuthorityRewriter(replace), [almost.subarray(0, cut), almost.subarray(cut)]), almost);
  });

  test('a broken CONTINUATION sequence passes as received, for nghttp2 to refuse', () => {
    const broken = Buffer.concat([PREFACE, frame(0x1, 0, 1, badBlock.subarray(0, 20)), data(1, 5), frame(0x9, 0x4, 1, badBlock.subarray(20))]);
    const wrongStream = Buffer.concat([PREFACE, frame(0x1, 0, 1, badBlock.subarray(0, 20)), frame(0x9, 0x4, 3, badBlock.subarray(20))]);
    const badPadding = Buffer.concat([PREFACE, frame(0x1, 0x4 | 0x8, 1, Buffer.concat([Buffer.from([200]), badBlock]))]);
    for (const s of [broken, wrongStream, badPadding]) {
      for (let cut = 0; cut <= s.length; cut++) assert.deepEqual(runAll(new AuthorityRewriter(replace), [s.subarray(0, cut), s.subarray(cut)]), s);
    }
  });

  test("with stripSettingsAck, the client's first SETTINGS ACK is taken out at every cut, a later one passes", () => {
    const ACK = frame(0x4, 0x1, 0, Buffer.alloc(0));
    const s = Buffer.concat([PREFACE, SETTINGS, WINDOW_UPDATE, ACK, frame(0x1, 0x4, 1, badBlock), ACK, PING]);
    const wantS = Buffer.concat([PREFACE, SETTINGS, WINDOW_UPDATE, frame(0x1, 0x4, 1, fixedBlock), ACK, PING]);
    for (let cut = 0; cut <= s.length; cut++) {
      for (const cut2 of [cut, Math.min(s.length, cut + 5), Math.min(s.length, cut + 9)]) {
        const r = new AuthorityRewriter(replace, true);
        const got = runAll(r, [s.subarray(0, cut), s.subarray(cut, cut2), s.subarray(cut2)]);
        if (!got.equals(wantS)) assert.fail(`cuts at ${cut}, ${cut2}: output differs`);
        assert.equal(r.ackStripped, true);
        assert.equal(r.firstBlock, 'changed');
      }
    }
    // Without the flag every ACK passes (the server session sent the SETTINGS they answer).
    assert.deepEqual(
      runAll(new AuthorityRewriter(replace), [s]),
      Buffer.concat([PREFACE, SETTINGS, WINDOW_UPDATE, ACK, frame(0x1, 0x4, 1, fixedBlock), ACK, PING]),
    );
    assert.deepEqual(EMPTY_SETTINGS, frame(0x4, 0, 0, Buffer.alloc(0)));
  });

  test('firstBlock says how the first header block passed', () => {
    const first = (...frames: Buffer[]) => {
      const r = new AuthorityRewriter(replace);
      const verdicts: Array<string | undefined> = [];
      for (const f of [PREFACE, SETTINGS, ...frames]) {
        r.push(f);
        verdicts.push(r.firstBlock);
      }
      return verdicts.at(-1);
    };
    const ok = blockWith(plain('127.0.0.1:2379'));
    assert.equal(first(), undefined);
    assert.equal(first(frame(0x1, 0x4, 1, ok), frame(0x1, 0x4, 3, badBlock)), 'clean');
    assert.equal(first(frame(0x1, 0, 1, ok.subarray(0, 10)), frame(0x9, 0x4, 1, ok.subarray(10))), 'clean');
    assert.equal(first(frame(0x1, 0, 1, ok.subarray(0, 10))), undefined, 'not before the block ends');
    assert.equal(first(frame(0x1, 0x4, 1, badBlock), frame(0x1, 0x4, 3, ok)), 'changed');
    assert.equal(first(frame(0x1, 0, 1, badBlock.subarray(0, 20)), frame(0x9, 0x4, 1, badBlock.subarray(20))), 'changed');
    assert.equal(first(frame(0x1, 0, 1, ok.subarray(0, 10)), data(1, 5)), 'unexamined', 'a broken CONTINUATION sequence');
    assert.equal(first(frame(0x1, 0x4 | 0x8, 1, Buffer.concat([Buffer.from([200]), ok]))), 'unexamined', 'bad padding');
    assert.equal(first(frame(0x1, 0x4, 1, Buffer.alloc(300 * 1024))), 'unexamined', 'too big to examine');
  });

  test('input ending mid-frame comes out as received', () => {
    const s = Buffer.concat([PREFACE, SETTINGS, frame(0x1, 0, 1, badBlock.subarray(0, 20)), frame(0x9, 0x4, 1, badBlock.subarray(20))]);
    for (let end = 0; end < s.length; end++) {
      assert.deepEqual(runAll(new AuthorityRewriter(replace), [s.subarray(0, end)]), s.subarray(0, end));
    }
  });
});
