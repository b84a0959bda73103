// One pass over an etcd backend file (a snapshot or member/snap/db): every page
// checked as bbolt's tx.Check does, every bucket decoded, and the figures
// `etcdctl snapshot status` prints computed as etcd computes them
// (clientv3/snapshot/v3_snapshot.go Status):
//   hash      CRC-32C over, for each top-level bucket in byte order, its name and
//             then each k‖v of its elements (a nested bucket's value is nil);
//   revision  the main revision of the last key in bucket `key`;
//   totalKey  the elements of the top-level buckets (ForEach does not descend into
//             nested buckets: one of those counts once, as its key);
//   totalSize meta.pgid × pageSize.
// Key-bucket revisions can be streamed to a callback (the import into Lifeboat).

import { crc32c } from '../common/crc32c.js';
import { BoltDb } from './boltDb.js';
import { checkPageAccounting, newTracker } from './boltCheck.js';
import { BoltFormatError, EtcdDataError } from './boltErrors.js';
import { printable, type BoltEntry, type BucketRef, type PageTracker } from './bucketCursor.js';
import {
  BUCKET,
  META_KEY,
  decodeAlarm,
  decodeKeyValue,
  decodeLease,
  decodeMember,
  decodeRemovedMember,
  decodeRevisionKey,
  decodeRevisionValue,
  decodeUint64BE,
  failed,
  type Decoded,
  type EtcdAlarm,
  type EtcdLease,
  type EtcdMember,
} from './etcdBuckets.js';

/** One stored revision of bucket `key`, as Lifeboat's KV stores it. Buffers are views. */
export interface EtcdRevision {
  key: Buffer;
  main: number;
  sub: number;
  createRevision: number;
  version: number;
  lease: bigint;
  value: Buffer;
  tombstone: boolean;
}

export interface EtcdDbSummary {
  file: string;
  fileSize: number;
  pageSize: number;
  /** Which meta page was used (0 or 1), its txid, and why the other was not, if it is damaged. */
  metaPage: number;
  txid: bigint;
  otherMetaInvalid?: string;
  /** etcdctl snapshot status: hash (CRC-32C), revision, totalKey, totalSize. */
  hash: number;
  revision: number;
  totalKey: number;
  totalSize: number;
  /** Elements per top-level bucket, in byte order. */
  buckets: Array<{ name: string; entries: number }>;
  /** Stored revisions in bucket `key`, and how many are tombstones. */
  revisions: number;
  tombstones: number;
  /** Keys whose latest stored revision is not a tombstone (when counted). */
  liveKeys?: number;
  consistentIndex?: number;
  /** finishedCompactRev (-1: never compacted) and scheduledCompactRev, when stored. */
  compactRevision: number;
  scheduledCompactRevision?: number;
  /** The revision etcd resumes at: max(last stored revision, finished compaction). */
  currentRevision: number;
  leases: EtcdLease[];
  members: EtcdMember[];
  removedMembers: bigint[];
  clusterVersion?: string;
  alarms: EtcdAlarm[];
  authEnabled: boolean;
  authUsers: number;
  authRoles: number;
}

export interface ScanOptions {
  /** Called for each revision of bucket `key`, in revision order. */
  onRevision?: (r: EtcdRevision) => void;
  /** Called for each entry of the auth buckets (`auth`, `authUsers`, `authRoles`), copied. */
  onAuth?: (bucket: 'auth' | 'authUsers' | 'authRoles', key: Buffer, value: Buffer) => void;
  /** Count live keys (a map of every key: skip it when the caller counts another way). Default true. */
  countLiveKeys?: boolean;
  /** Bytes of pages read so far of the file's, now and then (for a progress bar). */
  onProgress?: (read: number, total: number) => void;
  cacheBytes?: number;
}

const MAX_BUCKET_DEPTH = 32;
const HASH_CHUNK = 64 * 1024;

/** CRC-32C of a stream of byte strings, fed to the native code in 64 KiB chunks. */
class Crc32cStream {
  private crc = 0;
  private readonly buf = Buffer.allocUnsafe(HASH_CHUNK);
  private used = 0;

  update(b: Buffer): void {
    if (b.length >= HASH_CHUNK) {
      this.flush();
      this.crc = crc32c(b, this.crc);
      return;
    }
    if (this.used + b.length > HASH_CHUNK) this.flush();
    b.copy(this.buf, this.used);
    this.used += b.length;
  }

  digest(): number {
    this.flush();
    return this.crc >>> 0;
  }

  private flush(): void {
    if (this.used === 0) return;
    this.crc = crc32c(this.buf.subarray(0, this.used), this.crc);
    this.used = 0;
  }
}

/** Reads the whole file once; throws BoltFormatError / EtcdDataError on damage. */
export function scanEtcdDb(file: string, opts: ScanOptions = {}): EtcdDbSummary {
  const db = BoltDb.open(file, { cacheBytes: opts.cacheBytes });
  try {
    return new Scanner(db, opts).run();
  } finally {
    db.close();
  }
}

class Scanner {
  private readonly hash = new Crc32cStream();
  private readonly live: Map<string, boolean> | undefined;
  private readonly tracker: PageTracker;
  private readonly s: EtcdDbSummary;
  private lastMain = -1;
  private lastSub = -1;

  constructor(
    private readonly db: BoltDb,
    private readonly opts: ScanOptions,
  ) {
    this.live = opts.countLiveKeys === false ? undefined : new Map();
    this.tracker = newTracker(db);
    this.s = {
      file: db.file,
      fileSize: db.fileSize,
      pageSize: db.pageSize,
      metaPage: db.meta.page,
      txid: db.meta.txid,
      ...(db.otherMetaInvalid ? { otherMetaInvalid: db.otherMetaInvalid } : {}),
      hash: 0,
      revision: 0,
      totalKey: 0,
      totalSize: db.size,
      buckets: [],
      revisions: 0,
      tombstones: 0,
      compactRevision: -1,
      currentRevision: 1,
      leases: [],
      members: [],
      removedMembers: [],
      alarms: [],
      authEnabled: false,
      authUsers: 0,
      authRoles: 0,
    };
  }

  run(): EtcdDbSummary {
    const root = this.db.root();
    for (const top of this.db.entries(root, this.tracker)) {
      if (!top.isBucket) {
        throw new EtcdDataError(this.db.file, `top-level key ${printable(top.key)} is not a bucket (etcd: cannot get hash of bucket)`, top.pageId, top.offset);
      }
      const bucket = this.db.bucketOf(root, top);
      const name = top.key.toString('latin1');
      this.hash.update(top.key);
      let n = 0;
      for (const e of this.db.entries(bucket, this.tracker)) {
        this.hash.update(e.key);
        n++;
        if (e.isBucket) {
          this.walkNested(this.db.bucketOf(bucket, e), 1);
          continue;
        }
        this.hash.update(e.value);
        this.decode(name, e);
      }
      this.s.buckets.push({ name, entries: n });
      this.s.totalKey += n;
    }
    checkPageAccounting(this.db, this.tracker);
    this.s.hash = this.hash.digest();
    if (this.live) {
      let alive = 0;
      for (const v of this.live.values()) if (v) alive++;
      this.s.liveKeys = alive;
    }
    this.s.currentRevision = Math.max(this.s.revision, this.s.compactRevision, 1);
    return this.s;
  }

  /** Nested buckets are not part of etcd's figures, but their pages are checked. */
  private walkNested(b: BucketRef, depth: number): void {
    if (depth > MAX_BUCKET_DEPTH) {
      throw new BoltFormatError(this.db.file, `buckets nested more than ${MAX_BUCKET_DEPTH} deep at ${b.name}`, b.referrer, b.referrerOffset);
    }
    for (const e of this.db.entries(b, this.tracker)) if (e.isBucket) this.walkNested(this.db.bucketOf(b, e), depth + 1);
  }

  private value<T>(bucket: string, e: BoltEntry, d: Decoded<T>): T {
    if (failed(d)) throw new EtcdDataError(this.db.file, `bucket ${bucket}, key ${printable(e.key)}: ${d.error}`, e.pageId, e.offset);
    return d;
  }

  private decode(bucket: string, e: BoltEntry): void {
    switch (bucket) {
      case BUCKET.key:
        return this.revision(e);
      case BUCKET.meta: {
        const k = e.key.toString('latin1');
        if (k === META_KEY.consistentIndex) this.s.consistentIndex = this.value(bucket, e, decodeUint64BE(e.value));
        else if (k === META_KEY.finishedCompactRev) this.s.compactRevision = this.value(bucket, e, decodeRevisionValue(e.value));
        else if (k === META_KEY.scheduledCompactRev) this.s.scheduledCompactRevision = this.value(bucket, e, decodeRevisionValue(e.value));
        return;
      }
      case BUCKET.lease:
        this.s.leases.push(this.value(bucket, e, decodeLease(e.key, e.value)));
        return;
      case BUCKET.members:
        this.s.members.push(this.value(bucket, e, decodeMember(e.key, e.value)));
        return;
      case BUCKET.membersRemoved:
        this.s.removedMembers.push(this.value(bucket, e, decodeRemovedMember(e.key)));
        return;
      case BUCKET.cluster:
        if (e.key.toString('latin1') === 'clusterVersion') this.s.clusterVersion = e.value.toString('utf8');
        return;
      case BUCKET.alarm:
        this.s.alarms.push(this.value(bucket, e, decodeAlarm(e.key)));
        return;
      case BUCKET.auth:
        if (e.key.toString('latin1') === 'authEnabled') this.s.authEnabled = e.value.length === 1 && e.value[0] === 1;
        this.opts.onAuth?.('auth', Buffer.from(e.key), Buffer.from(e.value));
        return;
      case BUCKET.authUsers:
        this.s.authUsers++;
        this.opts.onAuth?.('authUsers', Buffer.from(e.key), Buffer.from(e.value));
        return;
      case BUCKET.authRoles:
        this.s.authRoles++;
        this.opts.onAuth?.('authRoles', Buffer.from(e.key), Buffer.from(e.value));
        return;
      default:
        return;
    }
  }

  private revision(e: BoltEntry): void {
    const rk = this.value(BUCKET.key, e, decodeRevisionKey(e.key));
    if (rk.main < this.lastMain || (rk.main === this.lastMain && rk.sub <= this.lastSub)) {
      throw new EtcdDataError(this.db.file, `bucket key: revision ${rk.main}_${rk.sub} is stored twice (as a put and a tombstone)`, e.pageId, e.offset);
    }
    this.lastMain = rk.main;
    this.lastSub = rk.sub;
    const kv = this.value(BUCKET.key, e, decodeKeyValue(e.value));
    if (!rk.tombstone) {
      if (kv.modRevision !== rk.main) {
        throw new EtcdDataError(
          this.db.file,
          `bucket key: revision ${rk.main}_${rk.sub} holds a KeyValue with mod_revision ${kv.modRevision}`,
          e.pageId,
          e.offset,
        );
      }
      if (kv.createRevision < 1 || kv.createRevision > rk.main || kv.version < 1) {
        throw new EtcdDataError(
          this.db.file,
          `bucket key: revision ${rk.main}_${rk.sub} holds a KeyValue with create_revision ${kv.createRevision} and version ${kv.version}`,
          e.pageId,
          e.offset,
        );
      }
    }
    this.s.revisions++;
    if (rk.tombstone) this.s.tombstones++;
    this.s.revision = rk.main;
    this.live?.set(kv.key.toString('latin1'), !rk.tombstone);
    if (this.opts.onProgress && this.s.revisions % 1000 === 0) {
      const pages = this.db.pages;
      this.opts.onProgress(pages.reads * pages.pageSize, pages.highWater * pages.pageSize);
    }
    this.opts.onRevision?.({
      key: kv.key,
      main: rk.main,
      sub: rk.sub,
      createRevision: rk.tombstone ? 0 : kv.createRevision,
      version: rk.tombstone ? 0 : kv.version,
      lease: rk.tombstone ? 0n : kv.lease,
      value: rk.tombstone ? Buffer.alloc(0) : kv.value,
      tombstone: rk.tombstone,
    });
  }
}
