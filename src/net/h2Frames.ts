// HTTP/2 frames, client → server: AuthorityRewriter takes the client's byte
// stream in arbitrary chunks and gives the same stream back with every header
// block's rejected :authority values rewritten (hpack.ts). It refuses nothing:
// a stream that is not HTTP/2, a malformed frame or a broken header block
// passes exactly as received, for nghttp2 to judge. A state machine over
// bytes; no I/O.
import { rewriteHeaderBlock } from './hpack.js';

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

const SETTINGS = 0x4;
const PING = 0x6;
const ACK = 0x1;

/** An empty SETTINGS frame: what the listener sends a client before the server session starts (authorityListener.ts). */
export const EMPTY_SETTINGS = Buffer.from([0, 0, 0, SETTINGS, 0, 0, 0, 0, 0]);

/** How a connection's first header block passed: unchanged, with an :authority rewritten, or as received unexamined (too big, malformed). */
export type FirstBlock = 'clean' | 'changed' | 'unexamined';

/**
 * What the start of a client's byte stream says about the client, once the
 * connection preface and the header of the first frame (a SETTINGS, as RFC 9113
 * requires) are in: 'settings' for a non-empty SETTINGS (grpc-js, which always
 * sets INITIAL_WINDOW_SIZE), 'empty-settings' for an empty one (grpc-go, so
 * etcdctl, and Node's bare http2 client), 'other' for anything but an HTTP/2
 * client preface, undefined while the bytes so far are a prefix of one.
 */
export function prefaceKind(head: Buffer): 'empty-settings' | 'settings' | 'other' | undefined {
  const n = Math.min(head.length, PREFACE.length);
  if (!head.subarray(0, n).equals(PREFACE.subarray(0, n))) return 'other';
  if (head.length < PREFACE.length + 9) return undefined;
  const f = PREFACE.length;
  if (head[f + 3] !== SETTINGS || head.readUInt32BE(f + 5) !== 0) return 'other';
  return head.readUIntBE(f, 3) === 0 ? 'empty-settings' : 'settings';
}

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

  /** How the first header block passed, once it has. */
  firstBlock: FirstBlock | undefined;
  /** With stripSettingsAck: the client's first SETTINGS ACK has been taken out. */
  ackStripped = false;
  /** A PING has passed (its sender waits for the answer). */
  pinged = false;

  /**
   * stripSettingsAck: the server sent one SETTINGS frame of its own before the
   * server session started (EMPTY_SETTINGS); the client's first SETTINGS ACK answers
   * it and is taken out of the stream, since the session did not send it and would
   * fail on an ACK it never asked for.
   */
  constructor(
    private readonly replacement: (len: number) => Uint8Array,
    private readonly stripSettingsAck = false,
  ) {}

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
      const len = (h[hs] << 16) | (h[hs + 1] << 8) | h[hs + 2];
      const type = h[hs + 3];
      const flags = h[hs + 4];
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
          this.firstBlock ??= !frag ? 'unexamined' : rewritten ? 'changed' : 'clean';
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
      if (type === SETTINGS && flags & ACK && len === 0 && this.stripSettingsAck && !this.ackStripped) {
        // The answer to the listener's own SETTINGS: out of the stream (a split header was never emitted).
        this.ackStripped = true;
        if (!split && from < hs) out.push(chunk.subarray(from, hs));
        from = i;
        continue;
      }
      // Any other frame passes through (a HEADERS too big to examine too).
      if (type === HEADERS) this.firstBlock ??= 'unexamined';
      else if (type === PING) this.pinged = true;
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
    const payload = parts.length === 1 ? parts[0] : Buffer.concat(parts);
    this.collectParts = [];
    this.raw.push(payload);
    this.rawLen += payload.length;
    if (this.collectIsHeaders) {
      const frag = headersFragment(payload, this.collectFlags);
      if (!frag) return this.flushBlock(out, 'unexamined');
      this.blockPriority = frag.priority;
      this.fragments.push(frag.block);
    } else {
      this.fragments.push(payload);
    }
    if (this.collectFlags & END_HEADERS) {
      const block = this.fragments.length === 1 ? this.fragments[0] : Buffer.concat(this.fragments);
      const rewritten = rewriteHeaderBlock(block, this.replacement);
      if (!rewritten) return this.flushBlock(out, 'clean');
      for (const f of frameHeaderBlock(rewritten, this.blockFlags, this.blockSidBytes, this.blockPriority)) out.push(f);
      this.firstBlock ??= 'changed';
      this.resetBlock();
    }
  }

  /** The block so far, exactly as received: unchanged, or (by default) cut short or malformed. */
  private flushBlock(out: Buffer[], how: FirstBlock = 'unexamined'): void {
    this.firstBlock ??= how;
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
