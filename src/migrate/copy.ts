// The consistent copy: every source key at one revision, read in pages in key
// order and written in batches. Progress is recorded after every batch, so an
// interrupted copy goes on after the last key written, at the same revision.
import type { EtcdClient } from '../client/etcdClient.js';
import { writeOps } from './destWriter.js';
import type { KeyMapping } from './keyMapping.js';
import type { MigrationProgress } from './progressFile.js';

const PAGE = 1000;

/** The revision a migration needs is below the source's compaction point. */
export class CompactedError extends Error {
  constructor(readonly revision: number) {
    super(`source revision ${revision} has been compacted`);
    this.name = 'CompactedError';
  }
}

export function compactedError(err: unknown, revision: number): unknown {
  return /required revision has been compacted/.test((err as Error).message ?? '') ? new CompactedError(revision) : err;
}

export interface CopyOptions {
  src: EtcdClient;
  dst: EtcdClient;
  mapping: KeyMapping;
  progress: MigrationProgress;
  save(): void;
  onProgress(done: number, total: number): void;
  signal: AbortSignal;
}

/** Copies from progress.copiedThrough (exclusive) to the end of the range, at progress.copyRevision. */
export async function copyAtRevision(o: CopyOptions): Promise<void> {
  const { src, dst, mapping, progress } = o;
  const rev = progress.copyRevision;
  const sel = mapping.source;
  try {
    const total = (await src.range(sel.key, { rangeEnd: sel.rangeEnd, revision: rev, countOnly: true })).count;
    let next = progress.copiedThrough ? Buffer.concat([Buffer.from(progress.copiedThrough, 'base64'), Buffer.from([0])]) : sel.key;
    // Bounded: each page moves `next` past at least one key, and the range is finite.
    for (;;) {
      o.signal.throwIfAborted();
      const page = await src.range(next, { rangeEnd: sel.rangeEnd, revision: rev, limit: PAGE });
      if (page.kvs.length === 0) break;
      await writeOps(
        dst,
        page.kvs.map((kv) => ({ put: { key: mapping.toDest(kv.key), value: kv.value } })),
      );
      const last = page.kvs[page.kvs.length - 1].key;
      progress.copiedThrough = last.toString('base64');
      progress.copiedKeys += page.kvs.length;
      o.save();
      o.onProgress(progress.copiedKeys, Math.max(total, progress.copiedKeys));
      if (!page.more) break;
      next = Buffer.concat([last, Buffer.from([0])]);
    }
  } catch (err) {
    throw compactedError(err, rev);
  }
}
