// HPACK on crafted bytes (src/net/hpack.ts): Huffman decoding, the :authority
// characters nghttp2 accepts, replacement values, and header block rewriting.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { huffmanDecode, isValidAuthority, replacementAuthority, rewriteHeaderBlock } from '../../src/net/hpack.js';
import { H_AUTHORITY_NAME, H_ETCDCTL_AUTHORITY, H_VALID_AUTHORITY, H_WWW_EXAMPLE_COM, hInt, huff, plain, replace, REQUEST_FIELDS } from './h2Bytes.js';

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
    const want = Buffer.concat([
      block.subarray(0, block.length - plain(long).length - 1),
      plain(replacementAuthority('127.0.0.1', 2379, 307)),
      Buffer.from([0x86]),
    ]);
    assert.deepEqual(out, want);
    assert.deepEqual([...plain(long).subarray(0, 3)], [0x7f, 0xb4, 0x01], 'the length takes three bytes');
  });

  test('several :authority fields are all replaced', () => {
    const block = Buffer.concat([Buffer.from([0x41]), plain('a/b'), Buffer.from([0x01]), plain('c d'), Buffer.from([0x41]), plain('ok')]);
    assert.deepEqual(
      rewriteHeaderBlock(block, replace),
      Buffer.concat([Buffer.from([0x41]), plain('xxx'), Buffer.from([0x01]), plain('xxx'), Buffer.from([0x41]), plain('ok')]),
    );
  });

  test('malformed blocks are left for nghttp2 to refuse', () => {
    const good = Buffer.concat([Buffer.from([0x41]), plain('http://127.0.0.1:2379')]);
    for (let cut = 1; cut < good.length; cut++) assert.equal(rewriteHeaderBlock(good.subarray(0, cut), replace), null, `cut at ${cut}`);
    assert.equal(rewriteHeaderBlock(Buffer.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff]), replace), null, 'endless integer');
    assert.equal(rewriteHeaderBlock(Buffer.concat([Buffer.from([0x41]), huff('1fff')]), replace), null, 'bad Huffman value');
  });
});
