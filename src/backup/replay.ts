// The replay rules: the state of a backed-up cluster at a revision, materialized
// in a scratch member of the source's runtime. Shared by `backup verify` and
// every restore from a store.
//
// 1. The full and the segments a plan names (replayPlan.ts) are downloaded and
//    decoded (sizes and both sha256 checked), every segment parsed, before any
//    member starts: a damaged object fails in seconds, named.
// 2. The full is restored into one scratch member on loopback ports, its data
//    dir on tmpfs when there is one (etcd 3.4 cannot be told not to fsync), with
//    --max-txn-ops and --max-request-bytes raised above the largest revision.
//    Nothing but the replay writes to it (no drill marker). With `inProcess`, a
//    Lifeboat full is instead opened as a kv store in this process
//    (inProcessReplay.ts): the same applier, no member, no gRPC, and the
//    source's cluster ID and membership kept.
// 3. Leases are granted with their recorded IDs and TTLs and kept alive
//    (leaseKeeper.ts); then each revision is one Txn, its events in order: a PUT
//    with its value and lease, a DELETE of the exact key. After each, the
//    member's revision must be the recorded one and every DELETE must have
//    deleted its key: etcd writes a revision only when a Txn changes something,
//    and the source wrote one only for a change, so a DELETE that finds nothing
//    (or a revision that leaves the member's revision where it was) means the
//    replay no longer holds what the cluster held. The replay stops there,
//    naming the revision and the object.
// 4. At every hash point the agent recorded, the member is compacted to the
//    recorded compact revision and its HashKV compared; a difference stops the
//    replay, naming the objects replayed since the last equal hash.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clientFor, type ConnectionOptions, type EtcdClient } from '../client/etcdClient.js';
import type { RuntimeName } from '../common/memberCommand.js';
import { ScratchCluster } from '../drill/scratchCluster.js';
import { etcdBinary } from '../ops/runtime.js';
import { restoreEtcdSnapshotFile } from '../recovery/etcdRestore.js';
import { restoreSnapshot } from '../recovery/restore.js';
import { snapshotStatus } from '../recovery/snapshotFormat.js';
import { snapshotRevision } from './snapshotRevision.js';
import { LeaseKeeper } from './leaseKeeper.js';
import type { FullManifest, SegmentManifest, StoredBytes } from './manifest.js';
import { decodeObject, ObjectIntegrityError } from './objectCodec.js';
import { ObjectMissing, type ObjectStore } from './objectStore.js';
import { readCatalog } from './catalog.js';
import { chooseCluster, planReplay, ReplayError, type ReplayPlan } from './replayPlan.js';
import { decodeSegment, SegmentFormatError, type RevisionRecord, type Segment } from './segmentCodec.js';
import type { TxnOp } from '../client/types.js';
import { saveSnapshot } from '../client/snapshotSave.js';
import { resolveTarget } from '../client/target.js';
import { ALL_KEYS } from '../client/keyRange.js';
import { InProcessStore, type TxnOutcome } from './inProcessReplay.js';

export { ReplayError } from './replayPlan.js';

/** etcd's defaults, below which the scratch member's limits are never set. */
const DEFAULT_MAX_TXN_OPS = 128;
const DEFAULT_MAX_REQUEST_BYTES = 2 * 1024 * 1024;
/** What a Txn carries per operation beyond its key and value (tags, lengths, the lease). */
const OP_OVERHEAD_BYTES = 64;

export interface ReplayOptions {
  store: ObjectStore;
  plan: ReplayPlan;
  /** age identities ("AGE-SECRET-KEY-1…") for an encrypted store; never printed */
  identities?: readonly string[];
  etcdBin?: string;
  /** member logs go here */
  logDir: string;
  /** downloads go here (default: a new temp dir, removed at close) */
  workDir?: string;
  /** the source's user, when its full has auth enabled (the scratch member keeps it) */
  credentials?: ConnectionOptions['credentials'];
  /** compare HashKV at every recorded hash point (default true) */
  checkHashPoints?: boolean;
  /**
   * A Lifeboat source is replayed in a kv store opened in this process, not in a
   * scratch member (an etcd source always has its member): `client` and
   * `endpoint` are then unavailable; keyCount and saveSnapshot work either way.
   */
  inProcess?: boolean;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface HashCheck {
  revision: number;
  compactRevision: number;
  recorded: number;
  replayed: number | null;
  /** null: not comparable (the replay was already compacted past the recorded compact revision) */
  equal: boolean | null;
  /** the object whose manifest recorded it */
  object: string;
}

export interface ReplayStats {
  revisions: number;
  events: number;
  leasesGranted: number;
  leasesRevoked: number;
  /** bytes downloaded */
  storedBytes: number;
  downloadMs: number;
  restoreMs: number;
  replayMs: number;
  /** of replayMs: compacting and computing HashKV at the hash points */
  hashMs: number;
}

/** What the replay writes to: the scratch member over gRPC, or the kv store opened in-process. */
interface ReplayTarget {
  revision(): Promise<number>;
  compactRevision(): Promise<number>;
  leaseCount: number;
  /** one revision's events as one Txn; throws when refused */
  txn(rec: RevisionRecord, ops: TxnOp[]): Promise<TxnOutcome>;
  grantLease(id: bigint, ttlSeconds: number): Promise<void>;
  revokeLease(id: bigint): void;
  settleRevokes(): Promise<{ revoked: number; holdingKeys: bigint[] }>;
  compact(revision: number): Promise<void>;
  hashKV(revision: number): Promise<{ hash: number; compactRevision: number }>;
  keyCount(): Promise<number>;
  /** throws what broke in the background (the member's lease keep-alive) */
  check(): void;
}

/** A scratch member (or an in-process store) holding the cluster's state at plan.target; close() stops it and removes its files. */
export class Replay {
  readonly hashChecks: HashCheck[] = [];
  readonly stats: ReplayStats = {
    revisions: 0,
    events: 0,
    leasesGranted: 0,
    leasesRevoked: 0,
    storedBytes: 0,
    downloadMs: 0,
    restoreMs: 0,
    replayMs: 0,
    hashMs: 0,
  };
  private scratch: ScratchCluster | undefined;
  private client_: EtcdClient | undefined;
  private keeper: LeaseKeeper | undefined;
  private local: InProcessStore | undefined;
  private target_: ReplayTarget | undefined;
  private readonly dirs: string[] = [];
  private readonly files = new Map<string, string>();
  private compacted = 0;
  /** objects replayed since the last equal hash: the suspects when the next one differs */
  private sinceEqual: string[] = [];

  private constructor(
    readonly o: ReplayOptions,
    readonly runtime: RuntimeName,
  ) {}

  get plan(): ReplayPlan {
    return this.o.plan;
  }

  /** Whether this replay runs in-process (a Lifeboat source with `inProcess`), not in a scratch member. */
  get inProcess(): boolean {
    return this.runtime === 'lifeboat' && this.o.inProcess === true;
  }

  private get target(): ReplayTarget {
    if (!this.target_) throw new Error('the replay has not restored its full');
    return this.target_;
  }

  /** Keys at plan.target. */
  keyCount(): Promise<number> {
    return this.target.keyCount();
  }

  /** The scratch member's client URL. */
  get endpoint(): string {
    return this.requireScratch().first.clientUrl;
  }

  get client(): EtcdClient {
    if (!this.client_) throw new Error('the replay has no scratch member');
    return this.client_;
  }

  private requireScratch(): ScratchCluster {
    if (!this.scratch) throw new Error('the replay has no scratch member');
    return this.scratch;
  }

  private say(line: string): void {
    this.o.onProgress?.(line);
  }

  /** A replay not started yet: run its phases in order (fetchAll, restoreFull, replaySegments), and close it in any case. */
  static prepare(o: ReplayOptions): Replay {
    return new Replay(o, o.plan.full.runtime);
  }

  /** Replays plan.target; throws ReplayError naming the object or revision that stops it (everything started is stopped). */
  static async run(o: ReplayOptions): Promise<Replay> {
    const r = Replay.prepare(o);
    try {
      await r.fetchAll();
      await r.restoreFull();
      await r.replaySegments();
      return r;
    } catch (e) {
      await r.close();
      throw e;
    }
  }

  // ---- 1. objects

  /** 1: download and decode every object, parse every segment. */
  async fetchAll(): Promise<void> {
    const t0 = Date.now();
    const work = this.o.workDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-replay-'));
    if (!this.o.workDir) this.dirs.push(work);
    fs.mkdirSync(work, { recursive: true });
    const { full, segments } = this.plan;
    this.say(`fetching ${full.object} and ${segments.length} segment${segments.length === 1 ? '' : 's'} from ${this.o.store.url}`);
    let maxOps = 0;
    let maxBytes = 0;
    for (const m of [full, ...segments]) {
      const plain = await this.fetch(m, work);
      if (m.kind !== 'segment') continue;
      for (const rec of this.readSegment(m, plain).records) {
        if (rec.kind !== 'revision') continue;
        maxOps = Math.max(maxOps, rec.events.length);
        maxBytes = Math.max(
          maxBytes,
          rec.events.reduce((n, e) => n + e.kv.key.length + e.kv.value.length + OP_OVERHEAD_BYTES, 0),
        );
      }
    }
    this.limits = { maxTxnOps: Math.max(DEFAULT_MAX_TXN_OPS, maxOps), maxRequestBytes: Math.max(DEFAULT_MAX_REQUEST_BYTES, maxBytes + 64 * 1024) };
    this.stats.downloadMs = Date.now() - t0;
  }

  private limits = { maxTxnOps: DEFAULT_MAX_TXN_OPS, maxRequestBytes: DEFAULT_MAX_REQUEST_BYTES };

  /**
   * The scratch member's --max-txn-ops and --max-request-bytes: always for etcd
   * (its 1.5 MiB default is below ours); for a Lifeboat member only above its
   * defaults (128 ops, 2 MiB), which members older than the two flags also take.
   */
  private limitFlags(): string[] {
    const { maxTxnOps, maxRequestBytes } = this.limits;
    if (this.runtime === 'lifeboat' && maxTxnOps <= DEFAULT_MAX_TXN_OPS && maxRequestBytes <= DEFAULT_MAX_REQUEST_BYTES) return [];
    return ['--max-txn-ops', String(maxTxnOps), '--max-request-bytes', String(maxRequestBytes)];
  }

  /** Downloads and decodes one object; its plain file. */
  private async fetch(m: StoredBytes, work: string): Promise<string> {
    const base = path.join(work, path.basename(m.object));
    try {
      this.stats.storedBytes += await this.o.store.download(m.object, `${base}.stored`, this.o.signal);
      await decodeObject(`${base}.stored`, `${base}.plain`, m, this.o.identities ?? []);
    } catch (e) {
      if (e instanceof ObjectMissing) throw new ReplayError(`${m.object} is not in the store (its manifest is)`, m.object);
      if (e instanceof ObjectIntegrityError) throw new ReplayError(e.message, m.object);
      throw e;
    } finally {
      fs.rmSync(`${base}.stored`, { force: true });
    }
    this.files.set(m.object, `${base}.plain`);
    return `${base}.plain`;
  }

  private readSegment(m: SegmentManifest, file: string): Segment {
    const fail = (why: string) => new ReplayError(`${m.object}: ${why}`, m.object);
    let seg: Segment;
    try {
      seg = decodeSegment(fs.readFileSync(file));
    } catch (e) {
      if (e instanceof SegmentFormatError) throw fail(e.message);
      throw e;
    }
    const id = seg.clusterId.toString(16).padStart(16, '0');
    if (id !== m.clusterId) throw fail(`holds cluster ${id}, its manifest says ${m.clusterId}`);
    const revs = seg.records.filter((r): r is RevisionRecord => r.kind === 'revision');
    if (revs.length === 0 || revs[0].revision !== m.fromRevision || revs[revs.length - 1].revision !== m.toRevision)
      throw fail(`holds revisions ${revs[0]?.revision ?? '-'}-${revs[revs.length - 1]?.revision ?? '-'}, its manifest says ${m.fromRevision}-${m.toRevision}`);
    return seg;
  }

  // ---- 2. the full, in a scratch member

  /** 2: restore the full into a scratch member and start it. */
  async restoreFull(): Promise<void> {
    const t0 = Date.now();
    const full: FullManifest = this.plan.full;
    const file = this.files.get(full.object)!;
    if (this.runtime === 'etcd') etcdBinary(this.o.etcdBin);
    const st = await snapshotStatus(file);
    // Read as the agent wrote it: an etcd file compacted past its newest key starts at the compaction's revision.
    const fileRevision = snapshotRevision(st);
    if (fileRevision !== full.revision)
      throw new ReplayError(`${full.object}: the snapshot is at revision ${fileRevision}, its manifest says ${full.revision}`, full.object);
    // tmpfs: the scratch member's writes never wait for a disk.
    const shm = fs.existsSync('/dev/shm') && fs.statSync('/dev/shm').isDirectory() ? '/dev/shm' : os.tmpdir();
    const dataRoot = fs.mkdtempSync(path.join(shm, 'lifeboat-replay-'));
    this.dirs.push(dataRoot);
    if (this.inProcess) return this.openFull(file, dataRoot, t0);
    if (st.authEnabled && !this.o.credentials)
      throw new ReplayError(`${full.object} has auth enabled, and so has the replay's member: give the source's root user (--user)`, full.object);
    const conn: ConnectionOptions = { dialTimeoutMs: 2000, commandTimeoutMs: 60_000, ...(this.o.credentials ? { credentials: this.o.credentials } : {}) };
    const sc = await ScratchCluster.plan({
      runtime: this.runtime,
      dir: dataRoot,
      logDir: this.o.logDir,
      size: 1,
      conn,
      extraArgs: this.limitFlags(),
      ...(this.o.etcdBin ? { etcdBin: this.o.etcdBin } : {}),
      ...(this.o.signal ? { signal: this.o.signal } : {}),
    });
    this.scratch = sc;
    const m = sc.first;
    const opts = { dataDir: m.dataDir, name: m.name, initialAdvertisePeerUrls: [m.peerUrl] };
    let token: string | undefined;
    if (this.runtime === 'etcd')
      token = (await restoreEtcdSnapshotFile(file, { ...opts, ...(this.o.etcdBin ? { etcdBin: this.o.etcdBin } : {}) })).initialClusterToken;
    else await restoreSnapshot(file, opts);
    fs.rmSync(file, { force: true });
    await sc.start(m, 'new', `${m.name}=${m.peerUrl}`, token);
    await sc.waitLeader();
    const client = clientFor([m.clientUrl], conn);
    this.client_ = client;
    const keeper = await LeaseKeeper.start(client);
    this.keeper = keeper;
    this.target_ = {
      revision: async () => (await client.status()).header.revision,
      compactRevision: async () => (await client.hashKV(0)).compactRevision,
      get leaseCount() {
        return keeper.count;
      },
      txn: async (_rec, ops) => {
        const res = await client.txn({ success: ops });
        return { revision: res.header.revision, deleted: res.responses.map((r) => ('deleteRange' in r ? r.deleteRange.deleted : undefined)) };
      },
      grantLease: (id, ttl) => keeper.grant(id, ttl),
      revokeLease: (id) => keeper.revoke(id),
      settleRevokes: () => keeper.settleRevokes(),
      compact: async (rev) => void (await client.compact(rev, { physical: true })),
      hashKV: (rev) => client.hashKV(rev),
      keyCount: async () => (await client.range(ALL_KEYS.key, { rangeEnd: ALL_KEYS.rangeEnd, countOnly: true })).count,
      check: () => keeper.check(),
    };
    await this.fullRestored(m.dataDir, t0);
  }

  /** 2, in-process: the full installed and opened as a kv store in `dir`. */
  private async openFull(file: string, dir: string, t0: number): Promise<void> {
    let local: InProcessStore;
    try {
      local = await InProcessStore.open(file, dir);
    } catch (e) {
      throw new ReplayError(`${this.plan.full.object}: ${(e as Error).message}`, this.plan.full.object);
    }
    this.local = local;
    fs.rmSync(file, { force: true });
    // The store answers at once; a throw becomes a rejection, as the member's would.
    const now = <T>(fn: () => T): Promise<T> => new Promise((resolve) => resolve(fn()));
    this.target_ = {
      revision: () => now(() => local.revision),
      compactRevision: () => now(() => local.compactRevision),
      get leaseCount() {
        return local.leaseCount;
      },
      txn: (rec) => now(() => local.txn(rec)),
      grantLease: (id, ttl) => now(() => local.grantLease(id, ttl)),
      revokeLease: (id) => local.revokeLease(id),
      settleRevokes: () => now(() => local.settleRevokes()),
      compact: (rev) => now(() => local.compact(rev)),
      hashKV: (rev) => now(() => local.hashKv(rev)),
      keyCount: () => now(() => local.keyCount()),
      check: () => undefined,
    };
    await this.fullRestored(`${dir} (in-process)`, t0);
  }

  private async fullRestored(where: string, t0: number): Promise<void> {
    const { full } = this.plan;
    const at = await this.target.revision();
    if (at !== this.plan.base) throw new ReplayError(`${full.object}: restored, the replay is at revision ${at}, the full at ${this.plan.base}`, full.object);
    this.compacted = await this.target.compactRevision();
    this.stats.restoreMs = Date.now() - t0;
    this.say(`restored ${full.object} (${this.runtime}, revision ${this.plan.base}, ${this.target.leaseCount} leases) in ${where}`);
    this.sinceEqual = [full.object];
    await this.hashPointsAt(this.plan.base);
  }

  // ---- 3. the segments, one Txn per revision

  /** 3 and 4: one Txn per revision, hash points compared. */
  async replaySegments(): Promise<void> {
    const t0 = Date.now();
    const { target } = this.plan;
    let reached = this.plan.base;
    let lastSaid = Date.now();
    for (const m of this.plan.segments) {
      const file = this.files.get(m.object)!;
      const seg = this.readSegment(m, file);
      this.sinceEqual.push(m.object);
      for (const rec of seg.records) {
        this.o.signal?.throwIfAborted();
        this.target.check();
        if (rec.kind === 'lease-grant') {
          if (rec.beforeRevision > target) continue;
          await this.target.grantLease(rec.id, rec.ttlSeconds);
          this.stats.leasesGranted++;
        } else if (rec.kind === 'lease-revoke') {
          if (rec.afterRevision < target) this.target.revokeLease(rec.id);
        } else {
          if (rec.revision <= reached) continue;
          if (rec.revision > target) break;
          if (rec.revision !== reached + 1)
            throw new ReplayError(`${m.object}: revision ${reached + 1} is missing (it goes from ${reached} to ${rec.revision})`, m.object, reached + 1);
          await this.apply(rec, m.object);
          reached = rec.revision;
          await this.hashPointsAt(reached, m.toRevision > reached ? m.object : undefined);
        }
      }
      fs.rmSync(file, { force: true });
      if (Date.now() - lastSaid > 5000) {
        this.say(`replayed to revision ${reached} of ${target}`);
        lastSaid = Date.now();
      }
      if (reached >= target) break;
    }
    if (reached !== target) throw new ReplayError(`the replay ended at revision ${reached}, not ${target}: the segments stop there`, undefined, reached + 1);
    const settled = await this.target.settleRevokes();
    this.stats.leasesRevoked = settled.revoked;
    const after = await this.target.revision();
    if (after !== target)
      throw new ReplayError(`revoking the leases the source revoked moved the replay from revision ${target} to ${after}`, undefined, target);
    this.stats.replayMs = Date.now() - t0;
    const compared = this.hashChecks.filter((h) => h.equal !== null).length;
    this.say(
      `replayed ${this.stats.revisions} revisions (${this.stats.events} events) to revision ${target} in ${(this.stats.replayMs / 1000).toFixed(3)}s, ${(this.stats.hashMs / 1000).toFixed(3)}s of it on ${compared} HashKV check${compared === 1 ? '' : 's'}`,
    );
  }

  private async apply(rec: RevisionRecord, object: string): Promise<void> {
    const at = `revision ${rec.revision} (${object})`;
    const ops: TxnOp[] = [];
    for (const e of rec.events) {
      if (e.kv.modRevision !== rec.revision)
        throw new ReplayError(`${at}: an event of key ${keyText(e.kv.key)} says mod revision ${e.kv.modRevision}`, object, rec.revision);
      ops.push(e.type === 'PUT' ? { put: { key: e.kv.key, value: e.kv.value, lease: e.kv.lease } } : { deleteRange: { key: e.kv.key } });
    }
    let res: TxnOutcome;
    try {
      res = await this.target.txn(rec, ops);
    } catch (e) {
      throw new ReplayError(`${at}: the replay refused its Txn: ${(e as Error).message}`, object, rec.revision);
    }
    res.deleted.forEach((deleted, i) => {
      if (deleted !== undefined && deleted !== 1)
        throw new ReplayError(
          `${at}: the DELETE of ${keyText(rec.events[i].kv.key)} found no such key in the replay (the cluster had it)`,
          object,
          rec.revision,
        );
    });
    if (res.revision !== rec.revision)
      throw new ReplayError(`${at}: the replay is at revision ${res.revision} after it, not ${rec.revision}`, object, rec.revision);
    this.stats.revisions++;
    this.stats.events += rec.events.length;
  }

  // ---- 4. hash points

  /** Compares HashKV with every point recorded at `rev`; `stillOpen`: the object being replayed, when it goes on past rev. */
  private async hashPointsAt(rev: number, stillOpen?: string): Promise<void> {
    if (this.o.checkHashPoints === false) return;
    for (const hp of this.plan.hashPoints.filter((h) => h.revision === rev)) {
      if (hp.compactRevision < this.compacted) {
        this.hashChecks.push({ ...pick(hp), replayed: null, equal: null });
        continue;
      }
      const t0 = Date.now();
      if (hp.compactRevision > this.compacted) {
        await this.target.compact(hp.compactRevision);
        this.compacted = hp.compactRevision;
      }
      const h = await this.target.hashKV(rev);
      this.stats.hashMs += Date.now() - t0;
      const equal = h.hash === hp.hash && h.compactRevision === hp.compactRevision;
      this.hashChecks.push({ ...pick(hp), replayed: h.hash, equal });
      if (!equal) {
        const suspects = this.sinceEqual.join(', ');
        throw new ReplayError(
          `HashKV at revision ${rev} differs: the replay has ${hex(h.hash)}, the cluster had ${hex(hp.hash)} (compact revision ${hp.compactRevision}, recorded in ${hp.object}): ${this.sinceEqual.length === 1 ? `${suspects} holds` : `one of ${suspects} holds`} something the cluster did not have`,
          this.sinceEqual[this.sinceEqual.length - 1],
          rev,
        );
      }
      this.sinceEqual = stillOpen ? [stillOpen] : [];
    }
  }

  /**
   * The state at plan.target as a snapshot file (FILE.part, fsynced, renamed):
   * saved from the scratch member, or written from the in-process store as the
   * member's snapshot save streams it.
   */
  async saveSnapshot(file: string): Promise<{ path: string; size: number }> {
    if (this.local) return this.local.writeSnapshot(file);
    const conn = { dialTimeoutMs: 2000, commandTimeoutMs: 600_000, ...(this.o.credentials ? { credentials: this.o.credentials } : {}) };
    return saveSnapshot(resolveTarget({ ...conn, endpoints: [this.endpoint] }), file);
  }

  /** Stops the scratch member (or closes the in-process store) and removes every file the replay made. */
  async close(): Promise<void> {
    this.keeper?.stop();
    this.client_?.close();
    this.local?.close();
    this.local = undefined;
    if (this.scratch) await this.scratch.stop();
    for (const d of this.dirs) fs.rmSync(d, { recursive: true, force: true });
    for (const f of this.files.values()) fs.rmSync(f, { force: true });
  }
}

/**
 * The state of a backed-up cluster at revision `at` (default: the last one
 * stored) in a running scratch member: the store read, the plan made, the
 * replay run. Close the result when done; a ReplayError names what stopped it.
 */
export async function replayTo(o: Omit<ReplayOptions, 'plan'> & { clusterId?: string; at?: number }): Promise<Replay> {
  const { clusterId, at, ...rest } = o;
  const catalog = await readCatalog(o.store);
  return Replay.run({ ...rest, plan: planReplay(catalog, chooseCluster(catalog, clusterId), at) });
}

const pick = (hp: { revision: number; compactRevision: number; hash: number; object: string }) => ({
  revision: hp.revision,
  compactRevision: hp.compactRevision,
  recorded: hp.hash,
  object: hp.object,
});

const hex = (n: number) => n.toString(16).padStart(8, '0');

/** A key for a one-line message: its text when printable, else hex. */
function keyText(k: Buffer): string {
  const s = k.toString('utf8');
  const shown = /^[\x20-\x7e]*$/.test(s) ? JSON.stringify(s) : `0x${k.toString('hex')}`;
  return shown.length > 80 ? `${shown.slice(0, 77)}...` : shown;
}

/** What every restore from a store passes to its replay as the operator gave it. */
export type ReplaySource = Pick<ReplayOptions, 'store' | 'identities' | 'etcdBin' | 'credentials' | 'signal'>;

/** A replay's options: the source's, and the rest. */
export function replayOptions(src: ReplaySource, rest: Omit<ReplayOptions, keyof ReplaySource>): ReplayOptions {
  return {
    store: src.store,
    ...rest,
    ...(src.identities ? { identities: src.identities } : {}),
    ...(src.etcdBin ? { etcdBin: src.etcdBin } : {}),
    ...(src.credentials ? { credentials: src.credentials } : {}),
    ...(src.signal ? { signal: src.signal } : {}),
  };
}

/** Reads one segment (downloaded into `work`, checked, decoded, the files removed): what a time point's mapping needs. */
export function segmentLoader(src: ReplaySource, work: string): (m: SegmentManifest) => Promise<Segment> {
  return async (m) => {
    const base = path.join(work, path.basename(m.object));
    try {
      await src.store.download(m.object, `${base}.stored`, src.signal);
      await decodeObject(`${base}.stored`, `${base}.plain`, m, src.identities ?? []);
      return decodeSegment(fs.readFileSync(`${base}.plain`));
    } finally {
      fs.rmSync(`${base}.stored`, { force: true });
      fs.rmSync(`${base}.plain`, { force: true });
    }
  };
}
