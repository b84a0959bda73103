// Writing revisions that do not come from the log: a migration's import of etcd's
// `key` bucket, its final revision and compaction point, and a restore's bump
// (etcd's `--bump-revision N --mark-compacted`). Each is committed at once, since
// no log replays it.

import type { StoredRevision } from './keyValueCodec.js';
import type { StoreCore } from './storeCore.js';

export class RevisionImport {
  /** The last revision importRevisions wrote (main, sub). */
  private imported: [number, number] = [-1, -1];

  constructor(private readonly core: StoreCore) {}

  /** See KvStore.bumpRevision. */
  bump(n: number, markCompacted: boolean): void {
    const { core } = this;
    core.assertOpen();
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`bump revision ${n} must be a whole number >= 0`);
    const { state, tables } = core;
    core.tx.committed(() => {
      state.current += n;
      if (markCompacted && state.current > state.compacted) {
        tables.compact(state.compacted, state.current);
        state.compacted = state.current;
      }
    });
  }

  /** See KvStore.importRevisions. */
  revisions(batch: readonly StoredRevision[]): void {
    this.assertNotApplied('import revisions');
    const { state, tables } = this.core;
    const blob = (b: Uint8Array) => (Buffer.isBuffer(b) ? b : Buffer.from(b));
    this.core.tx.committed(() => {
      for (const r of batch) {
        const [m, s] = this.imported;
        if (r.main < m || (r.main === m && r.sub <= s)) {
          throw new Error(`kv: imported revision ${r.main}_${r.sub} does not come after ${m}_${s}; revisions must be imported in order`);
        }
        if (r.tombstone) tables.writeTombstone(blob(r.key), r.main, r.sub);
        else tables.writePut(blob(r.key), r.main, r.sub, r.createRevision, r.version, r.lease, blob(r.value));
        this.imported = [r.main, r.sub];
        if (r.main > state.current) state.current = r.main;
      }
    });
  }

  /** See KvStore.setRevision. */
  setRevision(current: number, compacted: number): void {
    this.assertNotApplied('set the revision');
    const { state, tables } = this.core;
    if (!Number.isSafeInteger(current) || current < state.current) {
      throw new RangeError(`kv: revision ${current} is below the store's ${state.current}`);
    }
    if (!Number.isSafeInteger(compacted) || compacted < -1 || compacted > current) {
      throw new RangeError(`kv: compaction revision ${compacted} must be between -1 and ${current}`);
    }
    this.core.tx.committed(() => {
      state.current = current;
      if (compacted > state.compacted) {
        tables.compact(state.compacted, compacted);
        state.compacted = compacted;
      }
    });
  }

  private assertNotApplied(what: string): void {
    this.core.assertOpen();
    const { appliedIndex } = this.core.state;
    if (appliedIndex !== 0) {
      throw new Error(`kv: cannot ${what} in ${this.core.path}: entries up to ${appliedIndex} are applied; import only into a new store`);
    }
  }
}
