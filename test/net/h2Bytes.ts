// Byte builders shared by the test/net tests: HPACK integers and string
// literals, Huffman encodings, HTTP/2 frames, the rewriter run over chunks,
// and a seeded generator (mulberry32).
import { replacementAuthority } from '../../src/net/hpack.js';
import type { AuthorityRewriter } from '../../src/net/h2Frames.js';

// ---- byte builders ----------------------------------------------------------

/** RFC 7541 §5.1 integer: `flags` in the first byte's high bits, an N-bit prefix. */
export function hInt(prefixBits: number, flags: number, v: number): Buffer {
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
export const plain = (s: string | Buffer) => Buffer.concat([hInt(7, 0, Buffer.byteLength(s)), Buffer.from(s)]);
/** A Huffman string literal from its encoded bytes. */
export const huff = (hex: string) => Buffer.concat([hInt(7, 0x80, hex.length / 2), Buffer.from(hex, 'hex')]);

// Huffman encodings (RFC 7541 Appendix B; the first from its C.4.1 example).
export const H_WWW_EXAMPLE_COM = 'f1e3c2e5f23a6ba0ab90f4ff';
export const H_AUTHORITY_NAME = 'b83b5339ec327d7f'; // ":authority"
export const H_ETCDCTL_AUTHORITY = '9d29aee30c044eae05c0b86e32c85a67'; // "http://127.0.0.1:33143"
export const H_VALID_AUTHORITY = '089d5c0b8170dc132ebf'; // "127.0.0.1:2379"

export function frame(type: number, flags: number, sid: number, payload: Buffer): Buffer {
  const h = Buffer.alloc(9);
  h.writeUIntBE(payload.length, 0, 3);
  h[3] = type;
  h[4] = flags;
  h.writeUInt32BE(sid, 5);
  return Buffer.concat([h, payload]);
}
export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
export const SETTINGS = frame(0x4, 0, 0, Buffer.from('000300000064', 'hex'));
export const WINDOW_UPDATE = frame(0x8, 0, 0, Buffer.from('00100000', 'hex'));
export const PING = frame(0x6, 0, 0, Buffer.from('0102030405060708', 'hex'));
export const data = (sid: number, n: number, flags = 0) => frame(0x0, flags, sid, Buffer.alloc(n, sid & 0xff));

/** Fields every request below carries besides :authority: :method POST, :scheme http, :path. */
export const REQUEST_FIELDS = Buffer.concat([Buffer.from([0x83, 0x86]), Buffer.from([0x44]), plain('/etcdserverpb.Maintenance/Status')]);

export const replace = (len: number) => Buffer.from(replacementAuthority('127.0.0.1', 2379, len), 'latin1');

/** A seeded generator of integers in [0, n) (mulberry32). */
export function prng(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n) | 0;
  };
}

export function runAll(r: AuthorityRewriter, chunks: Buffer[]): Buffer {
  const out: Buffer[] = [];
  for (const c of chunks) out.push(...r.push(c));
  out.push(...r.end());
  return Buffer.concat(out);
}
