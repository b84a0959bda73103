// A backup store written the way the agent writes one, from a real cluster, for
// tests of what reads stores (verify, restore) without running the agent: a full
// from `lifeboat snapshot save`, then segments of the revisions the test wrote,
// read back as watch events from the last stored revision + 1, with the leases
// granted meanwhile and a HashKV hash point at the end of each object, all
// through src/backup's SegmentWriter, encodeObject and serializeManifest.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { clientFor, type EtcdClient } from '../../src/client/etcdClient.js';
import { ALL_KEYS } from '../../src/client/keyRange.js';
import { fullKey, manifestKeyOf, segmentKey, clusterIdText, type Compression } from '../../src/backup/layout.js';
import { agentIdentity, serializeManifest, type FullManifest, type HashPoint, type SegmentManifest } from '../../src/backup/manifest.js';
import { decodeObject, encodeObject } from '../../src/backup/objectCodec.js';
import { FileStore } from '../../src/backup/fileStore.js';
import { decodeSegment, SegmentWriter, type RevisionRecord, type SegmentRecord } from '../../src/backup/segmentCodec.js';
import type { RuntimeName } from '../../src/common/memberCommand.js';
import { ScratchCluster } from '../../src/drill/scratchCluster.js';
import { restoreEtcdSnapshotFile } from '../../src/recovery/etcdRestore.js';
import { restoreSnapshot } from '../../src/recovery/restore.js';
import { snapshotStatus } from '../../src/recovery/snapshotFormat.js';
import { lifeboat } from './tools.js';

const conn = { dialTimeoutMs: 2000, commandTimeoutMs: 10_000 };

export interface BackupFixtureOptions {
  /** the live cluster's client URLs */
  endpoints: string[];
  runtime: 'etcd' | 'lifeboat';
  /** the store's directory (file:// store); created */
  storeDir: string;
  compression?: Compression;
  /** age recipients to encrypt to */
  recipients?: string[];
}

export class BackupFixture {
  readonly store: FileStore;
  readonly client: EtcdClient;
  clusterId = 0n;
  /** the last revision stored */
  revision = 0;
  /** every object written, in order (data object keys) */
  readonly objects: string[] = [];
  private readonly leases = new Set<bigint>();
  private readonly tmp: string;

  constructor(readonly o: BackupFixtureOptions) {
    fs.mkdirSync(o.storeDir, { recursive: true });
    this.store = new FileStore(`file://${o.storeDir}`, o.storeDir);
    this.client = clientFor(o.endpoints, conn);
    this.tmp = fs.mkdtempSync(path.join(path.dirname(o.storeDir), 'fixture-'));
  }

  get url(): string {
    return this.store.url;
  }

  private encoding() {
    return { compression: this.o.compression ?? 'gzip', recipients: this.o.recipients ?? [] };
  }

  private async hashPoint(revision: number): Promise<HashPoint> {
    const h = await this.client.hashKV(revision);
    return { revision, hash: h.hash, compactRevision: h.compactRevision };
  }

  private async put(key: string, file: string, m: FullManifest | SegmentManifest): Promise<void> {
    await this.store.put(key, undefined, { file });
    await this.store.put(manifestKeyOf(key), serializeManifest(m));
    this.objects.push(key);
  }

  /** A full of the cluster as it is now (snapshot save through the CLI). */
  async full(): Promise<FullManifest> {
    const snap = path.join(this.tmp, `full-${Date.now()}.db`);
    const saved = await lifeboat('snapshot', 'save', snap, '--endpoints', this.o.endpoints[0]);
    assert.equal(saved.code, 0, saved.stderr);
    const st = await snapshotStatus(snap);
    const status = await this.client.status();
    this.clusterId = status.header.clusterId;
    const now = Date.now();
    const enc = this.encoding();
    const key = fullKey(this.clusterId, st.revision, now, enc.compression, enc.recipients.length > 0);
    const stored = path.join(this.tmp, path.basename(key));
    const bytes = await encodeObject(snap, stored, enc);
    for (const id of await this.client.leaseLeases()) this.leases.add(id);
    const m: FullManifest = {
      format: 1,
      kind: 'full',
      clusterId: clusterIdText(this.clusterId),
      fromRevision: st.revision,
      toRevision: st.revision,
      createdAt: new Date(now).toISOString(),
      agent: agentIdentity(),
      object: key,
      ...bytes,
      runtime: this.o.runtime,
      member: { id: status.header.memberId.toString(16), name: '', endpoint: this.o.endpoints[0] },
      revision: st.revision,
      compactRevision: (await this.client.hashKV(st.revision)).compactRevision,
      keyCount: st.etcd?.liveKeys ?? st.totalKeys,
      takenAt: new Date(now).toISOString(),
      hashPoints: [await this.hashPoint(st.revision)],
    };
    await this.put(key, stored, m);
    this.revision = st.revision;
    return m;
  }

  /** The revisions since the last object, read back from the cluster's watch history. */
  async readRevisions(): Promise<RevisionRecord[]> {
    const head = (await this.client.status()).header.revision;
    const out: RevisionRecord[] = [];
    if (head <= this.revision) return out;
    const w = await this.client.watch(ALL_KEYS.key, { rangeEnd: ALL_KEYS.rangeEnd, startRevision: this.revision + 1 });
    try {
      const deadline = Date.now() + 10_000;
      while ((out.at(-1)?.revision ?? this.revision) < head) {
        assert.ok(Date.now() < deadline, `watch did not deliver up to revision ${head}`);
        const b = await w.next(5000);
        assert.ok(b && !b.canceled, `watch ended before revision ${head}`);
        for (const e of b.events) {
          const rev = e.kv.modRevision;
          if (out.at(-1)?.revision !== rev) out.push({ kind: 'revision', revision: rev, seenAtMs: Date.now(), currentSinceMs: Date.now() - 100, events: [] });
          out.at(-1)!.events.push({ type: e.type, kv: e.kv });
        }
      }
    } finally {
      w.close();
    }
    return out;
  }

  /**
   * A segment of every revision since the last object, with grants of the leases
   * that appeared since. `edit` may change the records before they are written
   * (a test's wrong key): the manifest then describes the edited bytes, as an
   * agent with a bug would have written them.
   */
  async segment(edit?: (records: SegmentRecord[]) => SegmentRecord[]): Promise<SegmentManifest> {
    const revs = await this.readRevisions();
    assert.ok(revs.length > 0, 'no revision to put in a segment');
    const from = revs[0].revision;
    const to = revs[revs.length - 1].revision;
    let records: SegmentRecord[] = [];
    const live = new Set(await this.client.leaseLeases());
    for (const id of live) {
      if (this.leases.has(id)) continue;
      const t = await this.client.leaseTimeToLive(id);
      records.push({ kind: 'lease-grant', id, ttlSeconds: t.grantedTtl, beforeRevision: from, seenAtMs: Date.now() });
      this.leases.add(id);
    }
    records.push(...revs);
    for (const id of [...this.leases].filter((l) => !live.has(l))) {
      records.push({ kind: 'lease-revoke', id, afterRevision: to, seenAtMs: Date.now() });
      this.leases.delete(id);
    }
    if (edit) records = edit(records);
    return this.writeSegment(records, revs, await this.hashPoint(to));
  }

  /** Writes `records` as a segment and its manifest (revs: its revision records before any edit, for the manifest's counts). */
  private async writeSegment(records: SegmentRecord[], revs: RevisionRecord[], hashPoint: HashPoint): Promise<SegmentManifest> {
    const from = revs[0].revision;
    const to = revs[revs.length - 1].revision;
    const w = new SegmentWriter(this.clusterId);
    for (const r of records) {
      if (r.kind === 'revision') w.revision(r);
      else if (r.kind === 'lease-grant') w.leaseGrant(r);
      else w.leaseRevoke(r);
    }
    const enc = this.encoding();
    const t0 = revs[0].seenAtMs;
    const t1 = revs[revs.length - 1].seenAtMs;
    const key = segmentKey(this.clusterId, from, to, t0, t1, enc.compression, enc.recipients.length > 0);
    const stored = path.join(this.tmp, path.basename(key));
    const bytes = await encodeObject(w.finish(), stored, enc);
    const m: SegmentManifest = {
      format: 1,
      kind: 'segment',
      clusterId: clusterIdText(this.clusterId),
      fromRevision: from,
      toRevision: to,
      createdAt: new Date().toISOString(),
      agent: agentIdentity(),
      object: key,
      ...bytes,
      runtime: this.o.runtime,
      member: { endpoint: this.o.endpoints[0] },
      revisions: revs.length,
      events: revs.reduce((n, r) => n + r.events.length, 0),
      leaseRecords: records.filter((r) => r.kind !== 'revision').length,
      windowStart: new Date(revs[0].currentSinceMs).toISOString(),
      firstSeenAt: new Date(t0).toISOString(),
      lastSeenAt: new Date(t1).toISOString(),
      hashPoints: [hashPoint],
    };
    await this.put(key, stored, m);
    this.revision = Math.max(this.revision, to);
    return m;
  }

  /**
   * Rewrites segment `m` in the store at `storeDir` with its records edited (a
   * wrong key, as an agent with a bug would have stored it): the object and a
   * manifest whose sizes and sha256 describe the new bytes, hash points kept.
   */
  static async rewriteSegment(storeDir: string, m: SegmentManifest, edit: (records: SegmentRecord[]) => SegmentRecord[]): Promise<void> {
    const store = new FileStore(`file://${storeDir}`, storeDir);
    const work = fs.mkdtempSync(path.join(path.dirname(storeDir), 'rewrite-'));
    try {
      await store.download(m.object, path.join(work, 'stored'));
      await decodeObject(path.join(work, 'stored'), path.join(work, 'plain'), m);
      const seg = decodeSegment(fs.readFileSync(path.join(work, 'plain')));
      const w = new SegmentWriter(seg.clusterId);
      for (const r of edit(seg.records)) {
        if (r.kind === 'revision') w.revision(r);
        else if (r.kind === 'lease-grant') w.leaseGrant(r);
        else w.leaseRevoke(r);
      }
      const bytes = await encodeObject(w.finish(), path.join(work, 'new'), { compression: m.compression, recipients: m.recipients });
      await store.put(m.object, undefined, { file: path.join(work, 'new') });
      await store.put(manifestKeyOf(m.object), serializeManifest({ ...m, ...bytes }));
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  }

  /** The whole keyspace at `revision`, as `key=value@mod/version/lease` lines: what a test compares a replay with. */
  static async keyspace(client: EtcdClient, revision?: number): Promise<string[]> {
    const r = await client.range(ALL_KEYS.key, { rangeEnd: ALL_KEYS.rangeEnd, ...(revision ? { revision } : {}) });
    return r.kvs.map((kv) => `${kv.key.toString()}=${kv.value.toString()}@${kv.createRevision}/${kv.modRevision}/${kv.version}/${kv.lease.toString(16)}`);
  }

  /** The keyspace a member restored from snapshot `file` serves (etcd: restored as etcdctl snapshot restore does), in a scratch directory under `dir`. */
  static async restoredKeyspace(file: string, runtime: RuntimeName, dir: string): Promise<string[]> {
    return (await BackupFixture.restoredState(file, runtime, dir)).keys;
  }

  /** The keyspace and the leases a member restored from `file` serves (etcd: through etcdctl snapshot restore). */
  static async restoredState(file: string, runtime: RuntimeName, dir: string): Promise<{ keys: string[]; leases: bigint[] }> {
    const root = fs.mkdtempSync(path.join(dir, 'check-'));
    const sc = await ScratchCluster.plan({ runtime, dir: root, logDir: root, size: 1, conn });
    const m = sc.first;
    const opts = { dataDir: m.dataDir, name: m.name, initialAdvertisePeerUrls: [m.peerUrl] };
    let token: string | undefined;
    if (runtime === 'etcd') token = (await restoreEtcdSnapshotFile(file, opts)).initialClusterToken;
    else await restoreSnapshot(file, opts);
    try {
      await sc.start(m, 'new', `${m.name}=${m.peerUrl}`, token);
      await sc.waitLeader();
      const c = clientFor([m.clientUrl], conn);
      try {
        return { keys: await BackupFixture.keyspace(c), leases: await c.leaseLeases() };
      } finally {
        c.close();
      }
    } finally {
      await sc.stop();
      fs.rmSync(root, { recursive: true, force: true });
    }
  }

  close(): void {
    this.client.close();
    fs.rmSync(this.tmp, { recursive: true, force: true });
  }
}
