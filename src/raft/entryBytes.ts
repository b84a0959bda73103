// Where the retained log's entry data lives. An entry's bytes arrive as a view into
// something larger: a Node pool slab of 8 KiB shared with short-lived buffers (a
// proposal's encoding), or a received message of many entries. Kept as they came,
// each retained entry kept all of that alive: a leader under 100-client puts held
// 4-5 MiB of 8 KiB slabs for about 2 MiB of entries. Copied into chunks of their own
// here, the log holds its bytes and little more; a chunk is freed once the log
// has compacted (or truncated) every entry in it.
import type { Entry } from './types.js';

const CHUNK_BYTES = 256 * 1024;
/** Larger data is kept as given: its buffer is mostly its own. */
const COPIED_MAX_BYTES = 16 * 1024;

export class EntryBytes {
  private chunk = new Uint8Array(0);
  private used = 0;

  /** `e` itself when its data is empty or large, else a copy of it whose data is in a chunk. */
  keep(e: Entry): Entry {
    const n = e.data.length;
    if (n === 0 || n > COPIED_MAX_BYTES) return e;
    if (this.used + n > this.chunk.length) {
      this.chunk = new Uint8Array(CHUNK_BYTES);
      this.used = 0;
    }
    const data = this.chunk.subarray(this.used, this.used + n);
    data.set(e.data);
    this.used += n;
    return { ...e, data };
  }
}
