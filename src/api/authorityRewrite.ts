// Serving gRPC to clients that send an :authority Node's HTTP/2 refuses.
//
// etcdctl 3.4 (`endpoint status`, `endpoint hashkv`, `move-leader`) dials each
// endpoint through grpc-go's passthrough resolver with the endpoint string as
// the target, so its requests carry `:authority: http://127.0.0.1:2379`. nghttp2
// (inside Node's http2) rejects an :authority holding "/" (or any character
// outside RFC 3986's authority set) with RST_STREAM PROTOCOL_ERROR; etcd's Go
// server accepts it. We never read :authority, so we accept TCP connections
// ourselves and hand grpc-js a Duplex over each socket in which the client's
// HEADERS frames have such an :authority replaced by a valid one. Everything
// else passes byte for byte; the server→client direction is untouched.
//
// HPACK: a literal :authority "with incremental indexing" enters both the
// client's (encoder's) and nghttp2's (decoder's) dynamic table, the client's
// with the original value and nghttp2's with ours. Entry indexes stay aligned,
// but an entry's size is name + value octets + 32, and once the 4096-octet
// table fills (a long-lived connection with distinct grpc-timeout values gets
// there) each side evicts by its own sizes. A replacement *longer* than the
// original makes nghttp2 evict entries the client still refers to: wrong
// headers or COMPRESSION_ERROR (test/api/authorityRewrite.test.ts shows it
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
import * as grpc from '@grpc/grpc-js';
import dns from 'node:dns/promises';
import { EventEmitter } from 'node:events';
import net from 'node:net';
import { Duplex } from 'node:stream';

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
  const order = lens.map((_, s) => s).sort((a, b) => lens[a]! - lens[b]! || a - b);
  order.forEach((s, i) => (SYMBOLS[i] = s));
  for (const l of lens) COUNT[l]!++;
  let code = 0;
  let offset = 0;
  for (let l = 1; l <= 30; l++) {
    FIRST[l] = code;
    OFFSET[l] = offset;
    code = (code + COUNT[l]!) << 1;
    offset += COUNT[l]!;
  }
})();

/** Decodes an HPACK Huffman string; null if malformed (EOS inside, bad padding). */
export function huffmanDecode(src: Uint8Array, start = 0, end = src.length): Buffer | null {
  const out = Buffer.allocUnsafe(Math.ceil(((end - start) * 8) / 5));
  let o = 0;
  let code = 0;
  let len = 0;
  for (let i = start; i < end; i++) {
    const byte = src[i]!;
    for (let b = 7; b >= 0; b--) {
      code = (code << 1) | ((byte >> b) & 1);
      len++;
      if (len < 5) continue;
      const idx = code - FIRST[len]!;
      if (idx >= 0 && idx < COUNT[len]!) {
        const sym = SYMBOLS[OFFSET[len]! + idx]!;
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
  for (let i = 0; i < v.length; i++) if (!AUTHORITY_OK[v[i]!]) return false;
  return true;
}

const AUTHORITY_NAME = Buffer.from(':authority');
const MAX_INT = 1 << 24; // far beyond any header block we look at

/** Where the last readInt() stopped. */
let intEnd = 0;

/** RFC 7541 §5.1 integer with an N-bit prefix at buf[pos]; -1 if truncated or absurd. */
function readInt(buf: Uint8Array, pos: number, prefixBits: number): number {
  const max = (1 << prefixBits) - 1;
  let v = buf[pos]! & max;
  pos++;
  if (v === max) {
    let shift = 0;
    for (;;) {
      if (pos >= buf.length) return -1;
      const b = buf[pos++]!;
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
    const b = block[pos]!;
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
      const huffman = (block[pos]! & 0x80) !== 0;
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
    const huffman = (block[pos]! & 0x80) !== 0;
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

// ---- HTTP/2 frames, client → server ----------------------------------------

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
const HEADERS = 0x1;
const CONTINUATION = 0x9;
const END_STREAM = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY = 0x20;
/** SETTINGS_MAX_FRAME_SIZE's floor: a frame this size is valid for every peer. */
const MAX_FRAME = 16384;
/** A header block larger than this passes through unexamined (nghttp2 applies its own limits). */
const MAX_BLOCK = 256 * 1024;

const enum Mode {
  Preface,
  Frames,
  /** Not HTTP/2 after all (bad preface): bytes pass as they are. */
  Raw,
}

/**
 * The client→server byte stream in, the same stream out with literal
 * :authority values nghttp2 would reject replaced (see rewriteHeaderBlock).
 * Frames other than HEADERS and the CONTINUATIONs of a header block pass as
 * the very same bytes (views of the input chunks, no copies); a HEADERS frame
 * that needs no change passes unchanged too. A changed header block is
 * re-framed as one HEADERS frame (its CONTINUATIONs merged, padding dropped,
 * priority kept), split into CONTINUATIONs only beyond 16384 octets.
 */
export class AuthorityRewriter {
  private mode = Mode.Preface;
  private prefaceSeen = 0;
  /** A frame header split across chunks. */
  private readonly hdr = Buffer.alloc(9);
  private hdrHave = 0;
  /** Payload octets of a pass-through frame still to come. */
  private passLeft = 0;
  /** Payload of a HEADERS/CONTINUATION frame being gathered. */
  private collectLeft = 0;
  private collectParts: Buffer[] = [];
  private collectFlags = 0;
  private collectIsHeaders = false;
  /** The header block in progress (between HEADERS and END_HEADERS). */
  private inBlock = false;
  private blockSid = 0;
  private blockFlags = 0;
  private blockSidBytes: Buffer = Buffer.alloc(4);
  private blockPriority: Buffer | null = null;
  private fragments: Buffer[] = [];
  /** The block's frames exactly as received, for when it passes unchanged. */
  private raw: Buffer[] = [];
  private rawLen = 0;

  constructor(private readonly replacement: (len: number) => Uint8Array) {}

  /** The output for one input chunk: views of it, plus rewritten frames. */
  push(chunk: Buffer): Buffer[] {
    const out: Buffer[] = [];
    const n = chunk.length;
    if (this.mode === Mode.Raw) {
      out.push(chunk);
      return out;
    }
    let i = 0;
    let from = 0; // chunk[from, i) passes through, not yet emitted
    while (i < n) {
      if (this.mode === Mode.Preface) {
        while (i < n && this.prefaceSeen < PREFACE.length && chunk[i] === PREFACE[this.prefaceSeen]) {
          i++;
          this.prefaceSeen++;
        }
        if (this.prefaceSeen === PREFACE.length) this.mode = Mode.Frames;
        else if (i < n) {
          this.mode = Mode.Raw;
          i = n;
        }
        continue;
      }
      if (this.passLeft > 0) {
        const k = Math.min(this.passLeft, n - i);
        i += k;
        this.passLeft -= k;
        continue;
      }
      if (this.collectLeft > 0) {
        const k = Math.min(this.collectLeft, n - i);
        this.collectParts.push(chunk.subarray(i, i + k));
        i += k;
        from = i;
        this.collectLeft -= k;
        if (this.collectLeft === 0) this.frameCollected(out);
        continue;
      }
      // A frame header.
      let h: Buffer;
      let hs: number;
      let split: boolean;
      if (this.hdrHave === 0 && n - i >= 9) {
        h = chunk;
        hs = i;
        split = false;
        i += 9;
      } else {
        if (this.hdrHave === 0 && from < i) {
          out.push(chunk.subarray(from, i));
        }
        const k = Math.min(9 - this.hdrHave, n - i);
        chunk.copy(this.hdr, this.hdrHave, i, i + k);
        this.hdrHave += k;
        i += k;
        from = i;
        if (this.hdrHave < 9) break;
        this.hdrHave = 0;
        h = this.hdr;
        hs = 0;
        split = true;
      }
      const len = (h[hs]! << 16) | (h[hs + 1]! << 8) | h[hs + 2]!;
      const type = h[hs + 3]!;
      const flags = h[hs + 4]!;
      const sid = h.readUInt32BE(hs + 5) & 0x7fffffff;

      if (this.inBlock) {
        if (type === CONTINUATION && sid === this.blockSid && this.rawLen + 9 + len <= MAX_BLOCK) {
          if (!split && from < hs) out.push(chunk.subarray(from, hs));
          this.startCollect(split ? Buffer.from(h) : chunk.subarray(hs, hs + 9), len, flags, false, out);
          from = i;
          continue;
        }
        // Not the CONTINUATION that must follow (nghttp2 will say so), or too big: as received.
        this.flushBlock(out);
      }
      if (type === HEADERS && len <= MAX_BLOCK) {
        // Fast path: a whole HEADERS frame in this chunk, needing no change, stays in place.
        if (!split && flags & END_HEADERS && i + len <= n) {
          const frag = headersFragment(chunk.subarray(i, i + len), flags);
          const rewritten = frag && rewriteHeaderBlock(frag.block, this.replacement);
          if (!rewritten) {
            i += len;
            continue;
          }
          if (from < hs) out.push(chunk.subarray(from, hs));
          for (const f of frameHeaderBlock(rewritten, flags, chunk.subarray(hs + 5, hs + 9), frag.priority)) out.push(f);
          i += len;
          from = i;
          continue;
        }
        if (!split && from < hs) out.push(chunk.subarray(from, hs));
        this.inBlock = true;
        this.blockSid = sid;
        this.blockFlags = flags;
        this.blockSidBytes = Buffer.from(h.subarray(hs + 5, hs + 9));
        this.startCollect(split ? Buffer.from(h) : chunk.subarray(hs, hs + 9), len, flags, true, out);
        from = i;
        continue;
      }
      // Any other frame passes through.
      if (split) out.push(Buffer.from(h));
      this.passLeft = len;
    }
    if (from < n) out.push(from === 0 ? chunk : chunk.subarray(from));
    return out;
  }

  /** The input ended: whatever is held back goes out as received. */
  end(): Buffer[] {
    const out: Buffer[] = [];
    if (this.inBlock) this.flushBlock(out);
    if (this.hdrHave > 0) out.push(Buffer.from(this.hdr.subarray(0, this.hdrHave)));
    this.hdrHave = 0;
    return out;
  }

  private startCollect(header: Buffer, len: number, flags: number, isHeaders: boolean, out: Buffer[]): void {
    this.raw.push(header);
    this.rawLen += 9;
    this.collectLeft = len;
    this.collectFlags = flags;
    this.collectIsHeaders = isHeaders;
    this.collectParts = [];
    if (len === 0) this.frameCollected(out);
  }

  private frameCollected(out: Buffer[]): void {
    const parts = this.collectParts;
    const payload = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    this.collectParts = [];
    this.raw.push(payload);
    this.rawLen += payload.length;
    if (this.collectIsHeaders) {
      const frag = headersFragment(payload, this.collectFlags);
      if (!frag) return this.flushBlock(out);
      this.blockPriority = frag.priority;
      this.fragments.push(frag.block);
    } else {
      this.fragments.push(payload);
    }
    if (this.collectFlags & END_HEADERS) {
      const block = this.fragments.length === 1 ? this.fragments[0]! : Buffer.concat(this.fragments);
      const rewritten = rewriteHeaderBlock(block, this.replacement);
      if (!rewritten) return this.flushBlock(out);
      for (const f of frameHeaderBlock(rewritten, this.blockFlags, this.blockSidBytes, this.blockPriority)) out.push(f);
      this.resetBlock();
    }
  }

  /** The block so far, exactly as received. */
  private flushBlock(out: Buffer[]): void {
    for (const r of this.raw) out.push(r);
    for (const p of this.collectParts) out.push(p);
    this.collectParts = [];
    this.collectLeft = 0;
    this.resetBlock();
  }

  private resetBlock(): void {
    this.inBlock = false;
    this.raw = [];
    this.rawLen = 0;
    this.fragments = [];
    this.blockPriority = null;
  }
}

/** A HEADERS payload's header block fragment and priority fields; null if malformed. */
function headersFragment(payload: Buffer, flags: number): { block: Buffer; priority: Buffer | null } | null {
  let off = 0;
  let pad = 0;
  if (flags & PADDED) {
    if (payload.length < 1) return null;
    pad = payload[0]!;
    off = 1;
  }
  let priority: Buffer | null = null;
  if (flags & PRIORITY) {
    if (payload.length < off + 5) return null;
    priority = payload.subarray(off, off + 5);
    off += 5;
  }
  if (off + pad > payload.length) return null;
  return { block: payload.subarray(off, payload.length - pad), priority };
}

/** A header block as a HEADERS frame (and CONTINUATIONs past 16384 octets), unpadded. */
function frameHeaderBlock(block: Buffer, flags: number, sidBytes: Uint8Array, priority: Buffer | null): Buffer[] {
  const frames: Buffer[] = [];
  const first = MAX_FRAME - (priority ? 5 : 0);
  const keep = flags & (END_STREAM | (priority ? PRIORITY : 0));
  let at = Math.min(block.length, first);
  const head = Buffer.allocUnsafe(9 + (priority ? 5 : 0) + at);
  writeFrameHeader(head, (priority ? 5 : 0) + at, HEADERS, keep | (at === block.length ? END_HEADERS : 0), sidBytes);
  if (priority) priority.copy(head, 9);
  block.copy(head, 9 + (priority ? 5 : 0), 0, at);
  frames.push(head);
  while (at < block.length) {
    const k = Math.min(MAX_FRAME, block.length - at);
    const f = Buffer.allocUnsafe(9 + k);
    writeFrameHeader(f, k, CONTINUATION, at + k === block.length ? END_HEADERS : 0, sidBytes);
    block.copy(f, 9, at, at + k);
    frames.push(f);
    at += k;
  }
  return frames;
}

function writeFrameHeader(b: Buffer, len: number, type: number, flags: number, sidBytes: Uint8Array): void {
  b[0] = len >>> 16;
  b[1] = (len >>> 8) & 0xff;
  b[2] = len & 0xff;
  b[3] = type;
  b[4] = flags;
  b.set(sidBytes.subarray(0, 4), 5);
}

// ---- the connection and the listener ----------------------------------------

/**
 * A client socket as grpc-js/http2 sees it: reads rewritten, writes as they
 * are. http2 wraps a non-net.Socket Duplex in its JSStreamSocket; close, error,
 * EOF (and, through the socket's allowHalfOpen=false, the automatic end that
 * follows it), back-pressure and shutdown map one to one onto the socket.
 */
class RewritingConnection extends Duplex {
  private readonly rewriter: AuthorityRewriter;
  /** The client's address, in net.Socket's `_peername` form. */
  readonly peer: { address?: string; port?: number; family?: string };

  constructor(private readonly socket: net.Socket, replacement: (len: number) => Uint8Array) {
    super({ allowHalfOpen: true });
    this.peer = { address: socket.remoteAddress, port: socket.remotePort, family: socket.remoteFamily };
    this.rewriter = new AuthorityRewriter(replacement);
    socket.on('data', (chunk: Buffer) => {
      let out: Buffer[];
      try {
        out = this.rewriter.push(chunk);
      } catch (e) {
        this.destroy(e as Error); // a bug here costs this connection, never the process
        return;
      }
      let more = true;
      for (const b of out) more = this.push(b);
      if (!more) socket.pause();
    });
    socket.on('end', () => {
      for (const b of this.rewriter.end()) this.push(b);
      this.push(null);
    });
    socket.on('error', (err) => this.destroy(err));
    socket.on('close', () => this.destroy());
  }

  override _read(): void {
    this.socket.resume();
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.socket.write(chunk, cb);
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, cb: (err?: Error | null) => void): void {
    this.socket.cork();
    for (let i = 0; i < chunks.length; i++) {
      if (i === chunks.length - 1) this.socket.write(chunks[i]!.chunk, cb);
      else this.socket.write(chunks[i]!.chunk);
    }
    this.socket.uncork();
  }

  override _final(cb: (err?: Error | null) => void): void {
    // Socket errors reach us through 'error'; here only the FIN matters.
    this.socket.end(() => cb());
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    this.socket.destroy();
    cb(err);
  }
}

/**
 * So grpc-js's call.getPeer() and traces name the client, as with a plain
 * socket: http2's JSStreamSocket has no peer address of its own, but reports
 * `_peername` when set. We set it from a 'session' listener that runs before
 * grpc-js's; finding the injector's http2 server takes a look at grpc-js's
 * internals, so this is best effort (getPeer() says "unknown" otherwise).
 */
function forwardPeers(server: grpc.Server, before: Set<unknown>): void {
  try {
    const servers = (server as unknown as { http2Servers?: Map<unknown, unknown> }).http2Servers;
    const h2 = servers && [...servers.keys()].find((k) => !before.has(k));
    if (!(h2 instanceof EventEmitter)) return;
    h2.prependListener('session', (session: { socket?: Record<string, unknown> }) => {
      try {
        const socket = session.socket;
        const conn = socket?.stream;
        if (socket && conn instanceof RewritingConnection) socket._peername = conn.peer;
      } catch {
        // cosmetic only
      }
    });
  } catch {
    // cosmetic only
  }
}

function http2ServersOf(server: grpc.Server): Set<unknown> {
  const servers = (server as unknown as { http2Servers?: Map<unknown, unknown> }).http2Servers;
  return new Set(servers instanceof Map ? servers.keys() : []);
}

export interface AuthorityRewriteListener {
  /** The port bound (the one asked for, or the one chosen for port 0). */
  readonly port: number;
  /** Refuses new connections from now on; connections already open carry on. */
  stopAccepting(): void;
  /** Stops accepting, drops the connections still open, resolves once all are gone. */
  close(): Promise<void>;
}

/** "127.0.0.1:2379", "[::1]:2379", "::1:2379" (as transport/urls hostPort writes it), ":2379". */
function splitHostPort(hostPort: string): { host: string; port: number } {
  const m = /^\[([^\]]*)\]:(\d+)$/.exec(hostPort) ?? /^(.*):(\d+)$/.exec(hostPort);
  if (!m) throw new Error(`bad address ${hostPort}: expected host:port`);
  const port = Number(m[2]);
  if (port > 65535) throw new Error(`bad port in ${hostPort}`);
  return { host: m[1]!, port };
}

/**
 * Binds the gRPC server's services on `hostPort` through the :authority
 * rewrite (instead of server.bindAsync). Like bindAsync, a host name binds
 * every address it resolves to, succeeding if at least one binds; port 0
 * picks a free port (the same one for every address).
 */
export async function listenWithAuthorityRewrite(server: grpc.Server, hostPort: string): Promise<AuthorityRewriteListener> {
  const { host, port: wanted } = splitHostPort(hostPort);
  const addresses = host === '' ? ['::'] : net.isIP(host) ? [host] : (await dns.lookup(host, { all: true })).map((a) => a.address);
  const before = http2ServersOf(server);
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  forwardPeers(server, before);
  const sockets = new Set<net.Socket>();
  const servers: net.Server[] = [];
  const serverClosed: Array<Promise<void>> = [];
  let port = wanted;
  let firstError: Error | undefined;

  const onConnection = (socket: net.Socket) => {
    const local = socket.localAddress;
    const localPort = socket.localPort;
    if (local === undefined || localPort === undefined) {
      socket.destroy(); // reset before we saw it
      return;
    }
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    socket.on('error', () => {}); // reported through the connection; never unhandled
    socket.setNoDelay(true); // what http2 does to a plain socket (it cannot to a wrapped one)
    const h = local.includes(':') && local.startsWith('::ffff:') && net.isIPv4(local.slice(7)) ? local.slice(7) : local;
    const cache = new Map<number, Buffer>();
    const conn = new RewritingConnection(socket, (len) => {
      let v = cache.get(len);
      if (!v) cache.set(len, (v = Buffer.from(replacementAuthority(h, localPort, len), 'latin1')));
      return v;
    });
    injector.injectConnection(conn);
  };

  for (const address of addresses) {
    const srv = net.createServer({ allowHalfOpen: false }, onConnection);
    try {
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen({ host: address, port }, () => {
          srv.off('error', reject);
          resolve();
        });
      });
      srv.on('error', () => {}); // accept errors (EMFILE...) are retried by libuv
      port = (srv.address() as net.AddressInfo).port;
      servers.push(srv);
      serverClosed.push(new Promise<void>((resolve) => srv.once('close', () => resolve())));
    } catch (e) {
      firstError ??= e as Error;
    }
  }
  if (servers.length === 0) {
    injector.destroy();
    throw firstError ?? new Error(`no address to listen on for ${hostPort}`);
  }

  const stopAccepting = () => {
    for (const s of servers) if (s.listening) s.close();
  };
  let closed: Promise<void> | undefined;
  return {
    port,
    stopAccepting,
    close() {
      closed ??= (async () => {
        stopAccepting();
        for (const s of sockets) s.destroy();
        injector.destroy();
        await Promise.all(serverClosed);
      })();
      return closed;
    },
  };
}
