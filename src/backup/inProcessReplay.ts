// The replay of a Lifeboat (embedded) source in-process: the full installed as a
// kv store opened directly (no member, no gRPC), each recorded revision applied
// as one transaction through the member's own applier, leases written as the
// member's grant writes them, HashKV as the member computes it, and the output
// written from the store as the member's snapshot save streams it. Applies are
// held and committed every COMMIT_EVERY revisions: the scratch store lives on
// tmpfs and is thrown away, so only the output file's durability matters.
// The full's cluster ID and membership are never rewritten, so the output
// carries the source's.
import fs from 'node:fs';
import path from 'node:path';
import { ALL_KEYS } from '../client/keyRange.js';
import { KvStore, restoreSnapshot, type KvRequest, type KvWriter, type RequestOp } from '../kv/index.js';
import type { RevisionRecord } from './segmentCodec.js';

/** Revisions per SQLite commit. */
const COMMIT_EVERY = 1000;
/** Longer than any replay: commits come from COMMIT_EVERY (or the held transaction's batch limit), never from its timer. */
const HOLD_MS = 3_600_000;

export interface TxnOutcome {
  revision: number;
  /** per event: keys a DELETE deleted (undefined for a PUT) */
  deleted: Array<number | undefined>;
}

export class InProcessStore {
  private index: number;
  private readonly term: number;
  private sinceCommit = 0;
  /** leases the source revoked, revoked at the end once they hold no key (as LeaseKeeper does) */
  private readonly revoked = new Set<bigint>();

  private constructor(private readonly kv: KvStore) {
    this.index = kv.appliedIndex();
    this.term = kv.appliedTerm();
  }

  /** Installs the Lifeboat snapshot `file` (trailer checked) as `dir`/kv.db and opens it. */
  static async open(file: string, dir: string): Promise<InProcessStore> {
    const dbPath = path.join(dir, 'kv.db');
    await restoreSnapshot(file, dbPath);
    // quick_check is skipped: the file's sha256 was just checked.
    return new InProcessStore(KvStore.open(dbPath, { quickCheck: false, commitDelayMs: HOLD_MS }));
  }

  get revision(): number {
    return this.kv.currentRevision();
  }

  get compactRevision(): number {
    return this.kv.compactRevision();
  }

  get leaseCount(): number {
    return this.kv.cluster.leases().length;
  }

  keyCount(): number {
    return this.kv.range({ key: ALL_KEYS.key, rangeEnd: ALL_KEYS.rangeEnd, countOnly: true }).count;
  }

  /** One entry, as a member applies one: its index recorded with its effects. */
  private entry<T>(fn: (w: KvWriter) => T): T {
    return this.kv.apply(++this.index, this.term, fn);
  }

  /** One revision's events as one Txn; throws the applier's error when it refuses it. */
  txn(rec: RevisionRecord): TxnOutcome {
    const success: RequestOp[] = rec.events.map((e) =>
      e.type === 'PUT' ? { requestPut: { key: e.kv.key, value: e.kv.value, lease: e.kv.lease } } : { requestDeleteRange: { key: e.kv.key } },
    );
    const req: KvRequest = { txn: { success } };
    const out = this.entry((w) => w.request(req));
    if (out.error) throw out.error;
    if (!('txn' in out.response)) throw new Error('the applier answered a Txn with something else');
    const txn = out.response.txn;
    if (++this.sinceCommit >= COMMIT_EVERY) this.commit();
    return {
      revision: txn.header.revision,
      deleted: txn.responses.map((r) => ('responseDeleteRange' in r ? r.responseDeleteRange.deleted : undefined)),
    };
  }

  /** A lease with its recorded ID and TTL, as the member's grant writes it; one the store already has is kept as it is. */
  grantLease(id: bigint, ttlSeconds: number): void {
    this.revoked.delete(id);
    this.entry((w) => {
      if (!w.cluster.lease(id)) w.cluster.putLease({ id, ttl: ttlSeconds });
    });
  }

  revokeLease(id: bigint): void {
    this.revoked.add(id);
  }

  /** Revokes the revoked leases that hold no key (so no revision is written); see LeaseKeeper.settleRevokes. */
  settleRevokes(): { revoked: number; holdingKeys: bigint[] } {
    let revoked = 0;
    const holdingKeys: bigint[] = [];
    for (const id of this.revoked) {
      if (!this.kv.cluster.lease(id)) continue;
      if (this.kv.leaseKeys(id).length > 0) {
        holdingKeys.push(id);
        continue;
      }
      this.entry((w) => w.revokeLease(id));
      revoked++;
    }
    this.revoked.clear();
    return { revoked, holdingKeys };
  }

  /** A physical compaction, applied as the member applies one. */
  compact(revision: number): void {
    const out = this.entry((w) => w.request({ compaction: { revision, physical: true } }));
    if (out.error) throw out.error;
  }

  /** HashKV as the member computes it (the same function, on this connection: held applies included). */
  hashKv(revision: number): { hash: number; compactRevision: number } {
    return this.kv.hashKv(revision);
  }

  commit(): void {
    this.kv.commit();
    this.sinceCommit = 0;
  }

  /**
   * The store as a snapshot file, streamed as the member's Maintenance.Snapshot
   * streams it (KvStore.openSnapshot), written to FILE.part, fsynced and renamed.
   */
  async writeSnapshot(file: string): Promise<{ path: string; size: number }> {
    this.commit();
    const out = path.resolve(file);
    const part = `${out}.part`;
    const src = await this.kv.openSnapshot();
    let fh: fs.promises.FileHandle | undefined;
    try {
      fh = await fs.promises.open(part, 'w');
      for await (const chunk of src.chunks(1 << 20)) await fh.write(chunk);
      await fh.sync();
      await fh.close();
      fh = undefined;
      await fs.promises.rename(part, out);
      const dir = await fs.promises.open(path.dirname(out), 'r');
      try {
        await dir.sync();
      } finally {
        await dir.close();
      }
    } catch (e) {
      await fh?.close();
      fs.rmSync(part, { force: true });
      throw e;
    } finally {
      src.release();
    }
    return { path: out, size: src.size };
  }

  close(): void {
    this.kv.close();
  }
}
