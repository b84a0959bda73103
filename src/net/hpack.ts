// HPACK (RFC 7541) just far enough to rewrite one field: the :authority of a
// complete header block, when nghttp2 would reject its value (see
// authorityListener.ts for why). rewriteHeaderBlock() returns the block with
// each such literal value replaced by replacementAuthority() of the same
// decoded length, or null when nothing changes or the block is malformed.
// Pure functions over bytes; no I/O.
//
// HPACK: a literal :authority "with incremental indexing" enters both the
// client's (encoder's) and nghttp2's (decoder's) dynamic table, the client's
// with the original value and nghttp2's with ours. Entry indexes stay aligned,
// but an entry's size is name + value octets + 32, and once the 4096-octet
// table fills (a long-lived connection with distinct grpc-timeout values gets
// there) each side evicts by its own sizes. A replacement *longer* than the
// original makes nghttp2 evict entries the client still refers to: wrong
// headers or COMPRESSION_ERROR (test/net/authorityListener.test.ts shows it
// within ~50 requests when the value is a fixed host:port). A shorter one
// would be harmless (nghttp2 then merely keeps extra old entries), but we keep
// the tables identical: the replacement always has exactly the original's
// decoded length (Huffman strings are decoded to learn it, with the canonical
// code of RFC 7541 Appendix B below). It is `host:port` of the local address
// the client reached, the port left-padded with zeros
// ("127.0.0.1:000000012379" for "http://127.0.0.1:12379"; RFC 3986 has
// `port = *DIGIT`, so leading zeros are valid and name the same port). Not
// userinfo padding ("xxx@host:port"): RFC 9113 §8.3.1 forbids userinfo in
// :authority, so a stricter nghttp2 may refuse "@". A value shorter than
// `host:port` becomes that many "x" (a valid reg-name; nothing reads it).
// Only values nghttp2 would reject are replaced: a valid :authority (what
// grpc-js and most clients send) passes unchanged, and so do its frames.
//
// Not handled, by design: a literal whose *name* refers to a dynamic-table
// entry named :authority (clients name :authority by its static index 1;
// finding the others would mean mirroring the whole dynamic table).

// ---- HPACK Huffman decoding (RFC 7541 Appendix B) -------------------------

// The code is canonical (codes ordered by length, then symbol), so each
// symbol's code length is enough: one letter per symbol 0..256, 'A' = 5 bits.
const HUFFMAN_LENGTHS =
  'ISXXXXXXXTZXXZXXXXXXXXZXXXXXXXXXBFFHIBDGFFDGDBBBAAABBBBBBBCDKBHF' +
  'IBCCCCCCCCCCCCCCCCCCCCCCDCDIOIJBKABABABBBACCBBBABCBAABCCCCCKGJIX' +
  'PRPPRRRSRSSSSSTSTTRSTSSSSQRSRSSTRQPRRSSQSRRTQRSSQQRQSRSSPRRRSRRS' +
  'VVPORSRUVVVWWVTUOQVWWVWTQQVVXWWWPTPQRQQSRRUUTTVSVWVVWWWWWXWWWWWV' +
  'Z';
const EOS = 256;
/** Per code length: the first code, how many codes, where they start in SYMBOLS. */
const FIRST = new Int32Array(31);
const COUNT = new Int32Array(31);
const OFFSET = new Int32Array(31);
const SYMBOLS = new Uint16Array(257);
(() => {
  const lens = Array.from(HUFFMAN_LENGTHS, (c) => c.charCodeAt(0) - 65 + 5);
  const order = lens.map((_, s) => s).sort((a, b) => lens[a] - lens[b] || a - b);
  order.forEach((s, i) => (SYMBOLS[i] = s));
  for (const l of lens) COUNT[l]++;
  let code = 0;
  let offset = 0;
  for (let l = 1; l <= 30; l++) {
    FIRST[l] = code;
    OFFSET[l] = offset;
    code = (code + COUNT[l]) << 1;
    offset += COUNT[l];
  }
})();

/** Decodes an HPACK Huffman string; null if malformed (EOS inside, bad padding). */
export function huffmanDecode(src: Uint8Array, start = 0, end = src.length): Buffer | null {
  const out = Buffer.allocUnsafe(Math.ceil(((end - start) * 8) / 5));
  let o = 0;
  let code = 0;
  let len = 0;
  for (let i = start; i < end; i++) {
    const byte = src[i];
    for (let b = 7; b >= 0; b--) {
      code = (code << 1) | ((byte >> b) & 1);
      len++;
      if (len < 5) continue;
      const idx = code - FIRST[len];
      if (idx >= 0 && idx < COUNT[len]) {
        const sym = SYMBOLS[OFFSET[len] + idx];
        if (sym === EOS) return null;
        out[o++] = sym;
        code = 0;
        len = 0;
      } else if (len >= 30) {
        return null;
      }
    }
  }
  // Padding: fewer than 8 bits, all ones (a prefix of EOS).
  if (len > 7 || code !== (1 << len) - 1) return null;
  return out.subarray(0, o);
}

// ---- HPACK header blocks ----------------------------------------------------

/** nghttp2's VALID_AUTHORITY_CHARS: RFC 3986 unreserved, sub-delims, "%", ":", "@", "[", "]". */
const AUTHORITY_OK = new Uint8Array(256);
for (const c of "!$%&'()*+,-.0123456789:;=@ABCDEFGHIJKLMNOPQRSTUVWXYZ[]_abcdefghijklmnopqrstuvwxyz~") AUTHORITY_OK[c.charCodeAt(0)] = 1;

/** Would nghttp2 accept this :authority value? */
export function isValidAuthority(v: Uint8Array): boolean {
  for (let i = 0; i < v.length; i++) if (!AUTHORITY_OK[v[i]]) return false;
  return true;
}

const AUTHORITY_NAME = Buffer.from(':authority');
const MAX_INT = 1 << 24; // far beyond any header block we look at

/** Where the last readInt() stopped. */
let intEnd = 0;

/** RFC 7541 §5.1 integer with an N-bit prefix at buf[pos]; -1 if truncated or absurd. */
function readInt(buf: Uint8Array, pos: number, prefixBits: number): number {
  const max = (1 << prefixBits) - 1;
  let v = buf[pos] & max;
  pos++;
  if (v === max) {
    let shift = 0;
    for (;;) {
      if (pos >= buf.length) return -1;
      const b = buf[pos++];
      v += (b & 0x7f) * 2 ** shift;
      shift += 7;
      if (v > MAX_INT) return -1;
      if ((b & 0x80) === 0) break;
    }
  }
  intEnd = pos;
  return v;
}

/** A plain (non-Huffman) HPACK string literal. */
function encodeString(value: Uint8Array): Buffer {
  const head: number[] = [];
  if (value.length < 127) head.push(value.length);
  else {
    head.push(127);
    let rest = value.length - 127;
    while (rest >= 128) {
      head.push((rest & 0x7f) | 0x80);
      rest = Math.floor(rest / 128);
    }
    head.push(rest);
  }
  return Buffer.concat([Buffer.from(head), value]);
}

/**
 * Rewrites every literal :authority field of a complete header block whose
 * value nghttp2 would reject, to `replacement(decodedLength)`. Returns null
 * when nothing changes, or when the block is malformed (it then goes to
 * nghttp2 untouched, to fail there exactly as it would have).
 */
export function rewriteHeaderBlock(block: Uint8Array, replacement: (len: number) => Uint8Array): Buffer | null {
  const edits: Array<{ start: number; end: number; value: Uint8Array }> = [];
  let pos = 0;
  while (pos < block.length) {
    const b = block[pos];
    if (b & 0x80) {
      // Indexed field.
      if (readInt(block, pos, 7) < 0) return null;
      pos = intEnd;
      continue;
    }
    if ((b & 0xe0) === 0x20) {
      // Dynamic table size update.
      if (readInt(block, pos, 5) < 0) return null;
      pos = intEnd;
      continue;
    }
    // Literal: with incremental indexing (01), without (0000) or never (0001) indexed.
    const nameIndex = readInt(block, pos, b & 0x40 ? 6 : 4);
    if (nameIndex < 0) return null;
    pos = intEnd;
    let isAuthority = nameIndex === 1;
    if (nameIndex === 0) {
      const huffman = (block[pos] & 0x80) !== 0;
      const n = pos < block.length ? readInt(block, pos, 7) : -1;
      if (n < 0 || intEnd + n > block.length) return null;
      if (n <= AUTHORITY_NAME.length) {
        const name = huffman ? huffmanDecode(block, intEnd, intEnd + n) : block.subarray(intEnd, intEnd + n);
        isAuthority = name !== null && AUTHORITY_NAME.equals(name);
      }
      pos = intEnd + n;
    }
    if (pos >= block.length) return null;
    const valueStart = pos;
    const huffman = (block[pos] & 0x80) !== 0;
    const n = readInt(block, pos, 7);
    if (n < 0 || intEnd + n > block.length) return null;
    pos = intEnd + n;
    if (isAuthority) {
      const value = huffman ? huffmanDecode(block, intEnd, pos) : block.subarray(intEnd, pos);
      if (value !== null && !isValidAuthority(value)) edits.push({ start: valueStart, end: pos, value: replacement(value.length) });
    }
  }
  if (edits.length === 0) return null;
  const parts: Uint8Array[] = [];
  let at = 0;
  for (const e of edits) {
    parts.push(block.subarray(at, e.start), encodeString(e.value));
    at = e.end;
  }
  parts.push(block.subarray(at));
  return Buffer.concat(parts);
}

/**
 * An :authority of exactly `len` octets for a client that reached host:port
 * (see the top of this file): the port zero-padded, or "x"s when too short.
 */
export function replacementAuthority(host: string, port: number, len: number): string {
  const h = host.includes(':') ? `[${host}]` : host;
  const p = String(port);
  if (len >= h.length + 1 + p.length) return `${h}:${p.padStart(len - h.length - 1, '0')}`;
  return 'x'.repeat(len);
}
