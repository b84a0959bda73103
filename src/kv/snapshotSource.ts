// A snapshot streamed straight from the store's file (KvStore.openSnapshot): the
// worker holds a read under which the file holds exactly that read's state
// (snapshotHold.ts), and the member's thread reads the file's pages in chunks,
// hashing each once as it goes, then sends the sha256 trailer. No copy is made.
// The bytes are those of a snapshot file (snapshotFile.ts): database ‖ sha256.

import { createHash } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { SNAPSHOT_TRAILER } from './snapshotFile.js';
import type { HeldSnapshot } from './snapshotHold.js';

/** What a streamed snapshot holds, known before its first byte. */
export interface KvSnapshotSource {
  appliedIndex: number;
  appliedTerm: number;
  revision: number;
  compactRevision: number;
  /** Bytes of the snapshot: the database, then its 32-byte sha256. */
  size: number;
  /**
   * The snapshot's bytes in chunks of at most `chunkBytes`, the 32-byte trailer
   * alone in the last one. Iterate once; the held read ends when the iteration
   * does (completed, thrown or returned early). Throws before the trailer if the
   * read was lost meanwhile (the store closed): the bytes read may then be torn.
   */
  chunks(chunkBytes: number): AsyncGenerator<Buffer>;
  /** Ends the held read without streaming (it is idempotent; chunks() calls it too). */
  release(): void;
}

/** Byte offsets of SQLite's file format write/read versions: 2 means WAL, 1 a rollback journal. */
const FORMAT_VERSION_AT = [18, 19];

export function snapshotSource(dbPath: string, held: HeldSnapshot, stillHeld: () => boolean, release: () => void): KvSnapshotSource {
  const dbBytes = held.pageSize * held.pageCount;
  let released = false;
  const end = () => {
    if (released) return;
    released = true;
    release();
  };
  async function* chunks(chunkBytes: number): AsyncGenerator<Buffer> {
    try {
      const fh = await fsp.open(dbPath, 'r');
      try {
        const hash = createHash('sha256');
        for (let off = 0; off < dbBytes;) {
          const buf = Buffer.allocUnsafe(Math.min(chunkBytes, dbBytes - off));
          // Bounded: every pass reads at least one byte or throws.
          for (let got = 0; got < buf.length;) {
            const { bytesRead } = await fh.read(buf, got, buf.length - got, off + got);
            if (bytesRead === 0) throw new Error(`kv: ${dbPath} ended at ${off + got} bytes while ${dbBytes} were held for a snapshot`);
            got += bytesRead;
          }
          // The copy is a plain rollback-journal database, as VACUUM INTO made it:
          // it opens without its (absent) WAL anywhere, read-only too.
          if (off === 0) for (const at of FORMAT_VERSION_AT) if (at < buf.length) buf[at] = 1;
          hash.update(buf);
          off += buf.length;
          yield buf;
        }
        // Every byte above was read while the read was held, so none could change under it.
        if (!stillHeld()) throw new Error(`kv: the store at ${dbPath} was closed during a snapshot; it was not completed`);
        yield hash.digest();
      } finally {
        await fh.close();
      }
    } finally {
      end();
    }
  }
  return {
    appliedIndex: held.appliedIndex,
    appliedTerm: held.appliedTerm,
    revision: held.revision,
    compactRevision: held.compactRevision,
    size: dbBytes + SNAPSHOT_TRAILER,
    chunks,
    release: end,
  };
}
