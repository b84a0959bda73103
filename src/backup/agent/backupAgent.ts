// The backup agent (`lifeboat backup run`): one watch over the whole keyspace
// from the last committed revision + 1, revisions cut into segments every
// --delta-interval, fulls on a schedule, after enough changes and whenever the
// chain breaks, all spooled durably and uploaded by the uploader. A committed
// revision is one in the spool (or the store): a restart resumes after the last.
//
// Time: every revision carries [currentSince, seenAt]: seenAt when the agent
// received it, currentSince the last time before it that the agent was
// confirmed current (a progress notice, or an event batch at the head). A
// progress revision only marks the agent current: it is never a resume point
// (etcd 3.4 can send one while older events are still on their way).
//
// Gaps: a compaction past the agent's next revision, a watch cancelled by the
// server, or a new cluster ID end the chain: the open segment is committed, a
// new full taken at once, and the gap [last stored + 1, new full − 1] recorded.
import { Cron } from 'croner';
import { clientFor, type ConnectionOptions, type EtcdClient } from '../../client/etcdClient.js';
import { ALL_KEYS } from '../../client/keyRange.js';
import type { WatchBatch, WatchEvent, WatchStream } from '../../client/watchStream.js';
import { RefusedError } from '../../common/errors.js';
import { runtimeOfVersion, type RuntimeName } from '../../ops/runtime.js';
import { lastStoredRevision, readCatalog } from '../catalog.js';
import { clusterIdText, gapKey, manifestKeyOf, segmentKey } from '../layout.js';
import { agentIdentity, MANIFEST_FORMAT, type GapManifest, type GapReason, type HashPoint, type Manifest, type SegmentManifest } from '../manifest.js';
import { encodeObject, type EncodeOptions } from '../objectCodec.js';
import type { ObjectStore } from '../objectStore.js';
import type { AgentLock } from './agentLock.js';
import type { AgentMetrics } from './agentMetrics.js';
import { takeFull, type TakenFull } from './fullBackup.js';
import { LeaseTracker } from './leaseTracker.js';
import { OpenSegment } from './openSegment.js';
import type { Spool } from './spool.js';
import { Uploader } from './uploader.js';

export interface AgentConfig {
  endpoints: string[];
  connection: ConnectionOptions;
  store: ObjectStore;
  spool: Spool;
  lock: AgentLock;
  codec: EncodeOptions;
  deltaIntervalMs: number;
  segmentBytes: number;
  /** cron expression (croner), or undefined for none */
  fullSchedule?: string;
  /** 0: off */
  fullAfterEvents: number;
  /** 0: off */
  fullAfterBytes: number;
  /** a hash point every this many revisions; 0: after fulls only */
  hashEvery: number;
  /** bytes; 0: no limit */
  spoolLimit: number;
  metrics: AgentMetrics;
  log: (line: string) => void;
}

/**
 * Where the segments go on from: the end of what is stored without a break from
 * the first full on (segments, recorded gaps, and fulls that start a chain after
 * a gap). A full the agent took in the background while its segments were
 * behind (then killed before it caught up) is past a break, so the agent goes
 * on from the break: never a full's revision with unstored revisions before it.
 */
export function resumePoint(ms: readonly Manifest[]): number {
  const fulls = ms.filter((m) => m.kind === 'full');
  if (fulls.length === 0) return 0;
  const spans = ms
    .map((m) => ({ from: m.kind === 'full' ? m.revision : m.fromRevision, to: m.kind === 'full' ? m.revision : m.toRevision }))
    .sort((a, b) => a.from - b.from);
  let reach = Math.min(...fulls.map((f) => (f.kind === 'full' ? f.revision : 0)));
  for (const s of spans) {
    if (s.from > reach + 1) break;
    reach = Math.max(reach, s.to);
  }
  return reach;
}

const RECONNECT_MIN_MS = 500;
const RECONNECT_MAX_MS = 10_000;
const LOUD_EVERY_MS = 30_000;
const LOCK_CHECK_MS = 60_000;

export class BackupAgent {
  private readonly uploader: Uploader;
  private readonly leases = new LeaseTracker();
  private readonly schedule?: Cron;
  private nextScheduledMs = Infinity;
  private stopped = false;
  private wakeSleep?: () => void;
  private watch?: WatchStream;

  private clusterId?: bigint;
  private runtime: RuntimeName = 'etcd';
  private endpoint = '';
  /** the last revision committed (in the spool or the store) */
  private lastStored = 0;
  /** the last revision received (in the open segment or committed) */
  private lastSeen = 0;
  private lastHashed = 0;
  private lastFullRevision = 0;
  private currentSinceMs = 0;
  private head = 0;
  private seg?: OpenSegment;
  private eventsSinceFull = 0;
  private bytesSinceFull = 0;
  private fullDue?: string;
  private fullTask?: Promise<void>;
  private lastLoudMs = 0;
  private lastLockCheckMs = Date.now();
  private warnedJump = false;
  /** the fatal error that stopped the agent (the lock taken from it) */
  private fatal?: Error;

  constructor(private readonly cfg: AgentConfig) {
    const m = cfg.metrics;
    this.uploader = new Uploader(cfg.store, cfg.spool, {
      uploaded: (e, man) => {
        m.objectsWritten++;
        m.bytesWritten += e.bytes;
        m.spoolBytes = cfg.spool.bytes;
        m.storeFailing = false;
        if (man.kind !== 'gap') m.lastUploadedRevision = Math.max(m.lastUploadedRevision, man.toRevision);
      },
      failed: (_e, err, retryInMs) => {
        m.storeRetries++;
        m.storeFailing = true;
        this.loud(`store: upload failed (${err.message}); retrying in ${retryInMs / 1000}s; ${this.spoolText()}`);
      },
    });
    if (cfg.fullSchedule) {
      this.schedule = new Cron(cfg.fullSchedule, { paused: true });
      this.nextScheduledMs = this.schedule.nextRun()?.getTime() ?? Infinity;
    }
    m.spoolLimit = cfg.spoolLimit;
    m.spoolBytes = cfg.spool.bytes;
  }

  private log(line: string): void {
    this.cfg.log(line);
  }

  /** A line said at most every 30 s (outages repeat). */
  private loud(line: string): void {
    const now = Date.now();
    if (now - this.lastLoudMs < LOUD_EVERY_MS) return;
    this.lastLoudMs = now;
    this.log(line);
  }

  private spoolText(): string {
    const p = this.cfg.spool.pending().length;
    return `${p} object(s), ${this.cfg.spool.bytes} bytes waiting in the spool; the store has revisions up to ${this.cfg.metrics.lastUploadedRevision}, the agent committed up to ${this.lastStored}`;
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wakeSleep = () => (clearTimeout(t), resolve());
    });
  }

  stop(): void {
    this.stopped = true;
    this.wakeSleep?.();
    this.watch?.close();
  }

  /** Runs until stop(); then commits the open segment and gives the uploader a while to drain the spool. */
  async run(): Promise<void> {
    this.uploader.start();
    let backoff = RECONNECT_MIN_MS;
    while (!this.stopped) {
      const client = clientFor(this.cfg.endpoints, this.cfg.connection);
      try {
        await this.session(client);
        backoff = RECONNECT_MIN_MS;
      } catch (e) {
        if (e instanceof RefusedError) {
          this.fatal = e;
          break;
        }
        if (this.stopped) break;
        this.cfg.metrics.behindSinceMs ??= Date.now();
        this.log(`watch: ${(e as Error).message}; reconnecting in ${(backoff / 1000).toFixed(1)}s`);
        await this.sleep(backoff);
        backoff = Math.min(RECONNECT_MAX_MS, backoff * 2);
      } finally {
        this.cfg.metrics.watchConnected = false;
        // A watch the server cancelled is still an open call: it would keep the process alive.
        this.watch?.close();
        this.watch = undefined;
        client.close();
      }
    }
    await this.closeSegment(undefined).catch((e: Error) => this.log(`could not commit the open segment: ${e.message}`));
    await this.fullTask;
    const left = await this.uploader.stop(10_000);
    if (left > 0) this.log(`stopping with ${this.spoolText()}: the next start uploads them`);
    if (this.fatal) throw this.fatal;
  }

  /** One connection: resume, a first full if there is none, then follow the watch until it ends. */
  private async session(client: EtcdClient): Promise<void> {
    const status = await client.status();
    this.runtime = runtimeOfVersion(status.version);
    const cid = status.header.clusterId;
    if (this.clusterId === undefined) await this.resume(cid);
    else if (cid !== this.clusterId) {
      const was = clusterIdText(this.clusterId);
      const from = this.lastStored + 1;
      this.log(`the cluster ID changed from ${was} to ${clusterIdText(cid)} (a recovery?): a new chain`);
      await this.closeSegment(client);
      await this.resume(cid);
      const full = this.lastStored === 0 ? await this.chainFull(client, 'new-cluster-id') : undefined;
      if (full && full.manifest.revision - 1 >= from)
        await this.recordGap(from, full.manifest.revision - 1, 'new-cluster-id', `the cluster ID changed from ${was} to ${clusterIdText(cid)}`);
    }
    if (this.lastStored === 0) await this.chainFull(client, 'first full');
    await this.pollLeases(client);
    const watch = await client.watch(ALL_KEYS.key, { rangeEnd: ALL_KEYS.rangeEnd, startRevision: this.lastSeen + 1, requireLeader: true });
    this.watch = watch;
    if (this.stopped) return watch.close();
    this.endpoint = await client.activeEndpoint();
    this.cfg.metrics.watchConnected = true;
    this.log(`watching ${this.endpoint} from revision ${this.lastSeen + 1}`);
    await this.follow(client, watch);
  }

  /** The resume point of cluster `cid`: the last revision in the store or the spool. */
  private async resume(cid: bigint): Promise<void> {
    const text = clusterIdText(cid);
    const catalog = await readCatalog(this.cfg.store);
    const c = catalog.clusters.find((x) => x.clusterId === text);
    const spooled = this.cfg.spool.pending().map((e) => e.manifest);
    const mine: Manifest[] = [...(c?.fulls ?? []), ...(c?.segments ?? []), ...spooled.filter((m) => m.clusterId === text)];
    // Set only once the store was read: a session that fails before resumes again.
    this.clusterId = cid;
    this.lastFullRevision = 0;
    this.lastStored = resumePoint(mine);
    this.lastSeen = this.lastStored;
    this.lastHashed = this.lastStored;
    this.seg = undefined;
    let lastFullAt = 0;
    let since = 0;
    let sinceAt = -1;
    for (const m of mine) {
      if (m.kind === 'full' && m.revision >= this.lastFullRevision) {
        this.lastFullRevision = m.revision;
        lastFullAt = Date.parse(m.takenAt);
      }
      // The window start of what comes next: no later than that of the last thing stored.
      const start = m.kind === 'full' ? Date.parse(m.takenAt) : m.kind === 'segment' ? Date.parse(m.windowStart) : undefined;
      if (start !== undefined && m.toRevision > sinceAt) {
        since = start;
        sinceAt = m.toRevision;
      }
    }
    this.currentSinceMs = since;
    const mt = this.cfg.metrics;
    mt.lastStoredRevision = this.lastStored;
    mt.lastUploadedRevision = lastStoredRevision(c);
    mt.lastFullRevision = this.lastFullRevision;
    mt.lastFullTimestampMs = lastFullAt;
    if (this.lastStored > 0) this.log(`cluster ${text}: resuming after revision ${this.lastStored} (last full at revision ${this.lastFullRevision || 'none'})`);
  }

  /** Follow the watch: revisions into the open segment, progress, leases, fulls, closing segments. */
  private async follow(client: EtcdClient, watch: WatchStream): Promise<void> {
    const delta = this.cfg.deltaIntervalMs;
    let nextTick = 0;
    for (;;) {
      if (this.stopped) return;
      await this.waitForSpool();
      if (this.stopped) return;
      const closeAt = this.seg && this.seg.revisions > 0 ? this.seg.openedAtMs + delta : Infinity;
      const wait = Math.max(1, Math.min(nextTick, closeAt) - Date.now());
      const batch = await watch.next(wait);
      if (batch === undefined && !watch.isOpen) {
        if (this.stopped) return;
        throw new Error(`the watch on ${this.endpoint} ended`);
      }
      if (batch?.canceled) return this.onCancel(client, batch);
      if (batch) await this.onBatch(client, batch);
      const now = Date.now();
      if (now >= nextTick) {
        nextTick = now + delta;
        watch.requestProgress();
        await this.pollLeases(client);
        this.checkFullTriggers(client, now);
        await this.checkLock(now);
      }
      if (this.seg && this.seg.revisions > 0 && (now >= this.seg.openedAtMs + delta || this.seg.size >= this.cfg.segmentBytes)) await this.closeSegment(client);
    }
  }

  private async onBatch(client: EtcdClient, batch: WatchBatch): Promise<void> {
    const seenAt = Date.now();
    if (batch.events.length > 0) {
      // Events come in revision order, each revision's whole.
      const groups: Array<{ rev: number; events: WatchEvent[] }> = [];
      for (const e of batch.events) {
        const rev = e.kv.modRevision;
        const last = groups[groups.length - 1];
        if (last && last.rev === rev) last.events.push(e);
        else groups.push({ rev, events: [e] });
      }
      for (const g of groups) {
        if (g.rev <= this.lastSeen) continue; // delivered again after a reconnect: stored already
        if (g.rev !== this.lastSeen + 1 && !this.warnedJump) {
          this.warnedJump = true;
          this.log(`warning: the watch jumped from revision ${this.lastSeen} to ${g.rev}`);
        }
        const seg = (this.seg ??= new OpenSegment(this.clusterId!));
        const unknown = g.events.filter((e) => e.type === 'PUT' && e.kv.lease !== 0n && !this.leases.has(e.kv.lease)).map((e) => e.kv.lease);
        if (unknown.length > 0) for (const l of await this.leases.lookup(client, unknown)) seg.leaseGrant(l.id, l.ttlSeconds, g.rev, seenAt);
        seg.revision(g.rev, g.events, seenAt, this.currentSinceMs);
        this.lastSeen = g.rev;
        this.eventsSinceFull += g.events.length;
        if (this.cfg.metrics.behindSinceMs === undefined) this.cfg.metrics.behindSinceMs = seenAt;
      }
    }
    this.head = Math.max(this.head, batch.headerRevision, this.lastSeen);
    // At the head: every revision up to it is here, so the agent is current now.
    if (batch.headerRevision <= this.lastSeen) this.currentSinceMs = seenAt;
    this.updateLag();
  }

  private updateLag(): void {
    const m = this.cfg.metrics;
    m.headRevision = this.head;
    m.lastStoredRevision = this.lastStored;
    if (this.lastStored >= this.head && this.currentSinceMs > 0) m.behindSinceMs = undefined;
    else m.behindSinceMs ??= Date.now();
  }

  private async onCancel(client: EtcdClient, batch: WatchBatch): Promise<void> {
    const c = batch.canceled!;
    await this.closeSegment(client);
    const from = this.lastStored + 1;
    const compacted = c.compactRevision > 0;
    const reason: GapReason = compacted ? 'compacted' : 'watch-cancelled';
    const detail = compacted
      ? `the cluster was compacted to revision ${c.compactRevision}, past the agent's next revision ${from}`
      : `the server cancelled the watch${c.reason ? `: ${c.reason}` : ''}`;
    this.log(`${detail}: the chain ends; taking a new full now`);
    const full = await this.chainFull(client, reason);
    if (full.manifest.revision - 1 >= from) await this.recordGap(from, full.manifest.revision - 1, reason, detail);
  }

  /** A full that starts a chain (the first, or after a gap): the agent resumes after its revision. */
  private async chainFull(client: EtcdClient, why: string): Promise<TakenFull> {
    const full = await this.full(client, why, false);
    if (!full) throw new Error('unreachable: a chain full is never skipped');
    const rev = full.manifest.revision;
    this.seg = undefined;
    this.lastStored = Math.max(this.lastStored, rev);
    this.lastSeen = this.lastStored;
    this.lastHashed = this.lastStored;
    this.currentSinceMs = full.startedAtMs;
    this.head = Math.max(this.head, rev);
    this.updateLag();
    return full;
  }

  /** Take, spool and announce a full; `skipUnchanged`: not when the cluster is still at the last full's revision. */
  private async full(client: EtcdClient, why: string, skipUnchanged: boolean): Promise<TakenFull | undefined> {
    const spool = this.cfg.spool;
    const r = await takeFull(
      client,
      spool.workDir,
      spool.newDataFile(),
      this.cfg.codec,
      skipUnchanged && this.lastFullRevision > 0 ? this.lastFullRevision : undefined,
    );
    if ('skipped' in r) {
      this.cfg.metrics.fullsSkipped++;
      this.log(`full (${why}) skipped: the cluster is still at revision ${r.revision}, the last full's`);
      return undefined;
    }
    const m = r.manifest;
    await spool.add(r.manifestKey, m, { key: r.key, file: r.dataFile });
    this.uploader.kick();
    this.lastFullRevision = Math.max(this.lastFullRevision, m.revision);
    this.eventsSinceFull = 0;
    this.bytesSinceFull = 0;
    const mt = this.cfg.metrics;
    mt.lastFullRevision = this.lastFullRevision;
    mt.lastFullTimestampMs = r.startedAtMs;
    mt.spoolBytes = spool.bytes;
    this.log(`full (${why}) at revision ${m.revision}: ${m.keyCount} keys, ${m.plainSize} bytes (${m.storedSize} stored) from ${m.member.endpoint}`);
    return r;
  }

  private checkFullTriggers(client: EtcdClient, now: number): void {
    if (now >= this.nextScheduledMs) {
      this.fullDue ??= 'schedule';
      this.nextScheduledMs = this.schedule?.nextRun()?.getTime() ?? Infinity;
    }
    if (this.cfg.fullAfterEvents > 0 && this.eventsSinceFull >= this.cfg.fullAfterEvents) this.fullDue ??= `${this.eventsSinceFull} events since the last`;
    if (this.cfg.fullAfterBytes > 0 && this.bytesSinceFull >= this.cfg.fullAfterBytes)
      this.fullDue ??= `${this.bytesSinceFull} bytes of changes since the last`;
    if (!this.fullDue || this.fullTask) return;
    const why = this.fullDue;
    // In the background: the watch goes on while a large full streams.
    this.fullTask = this.full(client, why, true).then(
      () => {
        this.fullDue = undefined;
        this.fullTask = undefined;
      },
      (e: Error) => {
        this.log(`full (${why}) failed: ${e.message}; trying again at the next interval`);
        this.fullTask = undefined;
      },
    );
  }

  private async pollLeases(client: EtcdClient): Promise<void> {
    const { granted, revoked } = await this.leases.poll(client);
    if (granted.length === 0 && revoked.length === 0) return;
    const seg = (this.seg ??= new OpenSegment(this.clusterId!));
    const now = Date.now();
    for (const g of granted) seg.leaseGrant(g.id, g.ttlSeconds, this.lastSeen + 1, now);
    for (const id of revoked) seg.leaseRevoke(id, this.lastSeen, now);
  }

  /** Commit the open segment: encoded into the spool (durably), with a hash point when one is due. */
  private async closeSegment(client: EtcdClient | undefined): Promise<void> {
    const seg = this.seg;
    if (!seg || seg.revisions === 0) return;
    this.seg = undefined;
    const cfg = this.cfg;
    const plain = seg.writer.finish();
    const key = segmentKey(
      seg.clusterId,
      seg.firstRevision,
      seg.lastRevision,
      seg.firstSeenAtMs,
      seg.lastSeenAtMs,
      cfg.codec.compression,
      cfg.codec.recipients.length > 0,
    );
    const dataFile = cfg.spool.newDataFile();
    const stored = await encodeObject(plain, dataFile, cfg.codec);
    const hashPoints: HashPoint[] = [];
    const n = cfg.hashEvery;
    if (client && n > 0 && Math.floor(seg.lastRevision / n) > Math.floor(this.lastHashed / n)) {
      try {
        const h = await client.hashKV(seg.lastRevision);
        hashPoints.push({ revision: seg.lastRevision, hash: h.hash, compactRevision: h.compactRevision });
        this.lastHashed = seg.lastRevision;
      } catch (e) {
        this.log(`hash point at revision ${seg.lastRevision} not recorded: ${(e as Error).message}`);
      }
    }
    const iso = (ms: number) => new Date(ms).toISOString();
    const manifest: SegmentManifest = {
      format: MANIFEST_FORMAT,
      kind: 'segment',
      clusterId: clusterIdText(seg.clusterId),
      fromRevision: seg.firstRevision,
      toRevision: seg.lastRevision,
      createdAt: new Date().toISOString(),
      agent: agentIdentity(),
      object: key,
      ...stored,
      runtime: this.runtime,
      member: { endpoint: this.endpoint },
      revisions: seg.revisions,
      events: seg.events,
      leaseRecords: seg.leaseRecords,
      windowStart: iso(seg.windowStartMs),
      firstSeenAt: iso(seg.firstSeenAtMs),
      lastSeenAt: iso(seg.lastSeenAtMs),
      hashPoints,
    };
    await cfg.spool.add(manifestKeyOf(key), manifest, { key, file: dataFile });
    this.uploader.kick();
    this.lastStored = Math.max(this.lastStored, seg.lastRevision);
    this.bytesSinceFull += plain.length;
    const mt = cfg.metrics;
    mt.lastSegmentTimestampMs = Date.now();
    mt.spoolBytes = cfg.spool.bytes;
    this.updateLag();
  }

  private async recordGap(from: number, to: number, reason: GapReason, detail: string): Promise<void> {
    const key = gapKey(this.clusterId!, from, to);
    const manifest: GapManifest = {
      format: MANIFEST_FORMAT,
      kind: 'gap',
      clusterId: clusterIdText(this.clusterId!),
      fromRevision: from,
      toRevision: to,
      createdAt: new Date().toISOString(),
      agent: agentIdentity(),
      reason,
      detail,
    };
    await this.cfg.spool.add(manifestKeyOf(key), manifest);
    this.uploader.kick();
    this.cfg.metrics.gaps++;
    this.log(`GAP recorded: revisions ${from}..${to} are not in the store (${detail})`);
  }

  /** Back-pressure: past --spool-limit the agent stops reading the watch (it never drops a committed revision). */
  private async waitForSpool(): Promise<void> {
    const limit = this.cfg.spoolLimit;
    while (limit > 0 && this.cfg.spool.bytes > limit && !this.stopped) {
      const m = this.cfg.metrics;
      m.spoolBytes = this.cfg.spool.bytes;
      this.head = Math.max(this.head, m.headRevision);
      this.loud(
        `SPOOL FULL: ${this.cfg.spool.bytes} bytes over --spool-limit ${limit}; the agent stopped reading the watch and is ${m.lagRevisions()} revisions, ${m.lagSeconds().toFixed(0)}s behind the cluster; ${this.spoolText()}; nothing is dropped`,
      );
      await this.sleep(1000);
    }
  }

  /** Stop when another agent took the lock (--force). */
  private async checkLock(now: number): Promise<void> {
    if (now - this.lastLockCheckMs < LOCK_CHECK_MS) return;
    this.lastLockCheckMs = now;
    let held;
    try {
      held = await this.cfg.lock.stillOurs();
    } catch {
      return; // the store is down: the uploader says so
    }
    if (!held.ours)
      throw new RefusedError(
        `the store's lock was taken by ${held.holder ? `the agent on ${held.holder.host} (pid ${held.holder.pid}, started ${held.holder.startedAt})` : 'someone else'}; this agent stops`,
      );
  }
}
