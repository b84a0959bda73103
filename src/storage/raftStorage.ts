// The Raft half of a data directory: the log and hard state in segment files,
// snapshots, the member's identity, and the lock. See layout.ts for the files.
//
// Writes are group commits: save() turns a snapshot marker, entries and the hard
// state into records, writes them with one write and makes them durable with one
// fsync when asked. A Raft truncation is a Truncate record followed by the new
// entries.
//
// Open replays the segments in sequence order. The newest segment may end in a
// torn record (a write that was never acknowledged): it is cut off with a warning.
// Any other damage — a bad record with intact records after it, an older segment
// that lost its seal, a missing segment, a foreign file — throws
// StorageCorruptError naming the file and offset and the recovery command.

import nodeFs from 'node:fs';
import path from 'node:path';
import { failpointArg } from '../common/failpoint.js';
import type { ConfState, Entry, HardState, NodeId, PersistedState, Snapshot, SnapshotMeta } from '../raft/types.js';
import { StorageError } from './errors.js';
import { NodeFileSystem, type FileHandle, type FileSystem } from './fileSystem.js';
import { DirLock } from './dirLock.js';
import { memberDir, segmentName, snapDir, TEMP_SUFFIX, walDir } from './layout.js';
import type { OpenOptions } from './openOptions.js';
import { recoverDataDir } from './recoverDataDir.js';
import { encodeRecords, RecordType, type LogRecord } from './logRecord.js';
import { writeMemberMeta, type MemberMeta } from './memberMeta.js';
import { MemLog } from './memLog.js';
import { encodeSegmentHeader, SEGMENT_HEADER, type SegmentInfo } from './segment.js';
import { listSnapshots, readSnapshotFile, writeSnapshotFile } from './snapshotFile.js';
import type { StorageWarning } from './warning.js';

export type { OpenOptions } from './openOptions.js';

export interface OpenResult {
  storage: RaftStorage;
  /** Ready for `new Raft(config, state)`. */
  state: PersistedState;
  member: MemberMeta;
  warnings: StorageWarning[];
}

export interface SaveBatch {
  hardState?: HardState;
  /** Contiguous; the first may be <= lastIndex() to replace a conflicting suffix. */
  entries?: readonly Entry[];
  /** A snapshot from the leader: it replaces the whole log (entries in the batch follow it). */
  snapshot?: Snapshot;
}

interface OpenSegment {
  info: SegmentInfo;
  fh: FileHandle;
  /** Where the next record goes. */
  writeOff: number;
  /** Bytes of the file already written (records or preallocated zeros). */
  allocated: number;
}

const MiB = 1024 * 1024;
/** Preallocation writes zeros from this, a chunk at a time: a buffer of the whole 4 MiB kept an idle member 4 MiB larger. */
const ZERO_CHUNK = Buffer.alloc(64 * 1024);
const sameHardState = (a: HardState, b: HardState) => a.term === b.term && a.vote === b.vote && a.commit === b.commit;
const sameIds = (a: readonly NodeId[], b: readonly NodeId[]) => a.length === b.length && a.every((id, i) => id === b[i]);
const sameConf = (a: ConfState, b: ConfState) => sameIds(a.voters, b.voters) && sameIds(a.learners, b.learners);

export class RaftStorage {
  private current?: OpenSegment;
  private failure?: Error;
  /** An fsync is running in the thread pool (sync()): the open segment must not change meanwhile. */
  private syncing = false;
  private closed = false;

  private constructor(
    readonly dataDir: string,
    private identity: MemberMeta,
    private readonly fs: FileSystem,
    private readonly lock: DirLock,
    private readonly log: MemLog,
    private hs: HardState,
    private snap: SnapshotMeta,
    private readonly segments: SegmentInfo[],
    private readonly segmentBytes: number,
    private readonly preallocBytes: number,
    private readonly largeWriteBytes: number,
    private readonly keepSnapshots: number,
    private readonly readOnly: boolean,
  ) {}

  /** Opens (or, given an identity, creates) the data dir's member/ and recovers the persisted state. */
  static open(dataDir: string, opts: OpenOptions = {}): OpenResult {
    const fs = opts.fs ?? new NodeFileSystem();
    const warnings: StorageWarning[] = [];
    if (!fs.exists(memberDir(dataDir))) {
      if (!opts.identity || opts.readOnly) throw new StorageError(`data dir ${dataDir} holds no member (${memberDir(dataDir)} not found)`);
      fs.mkdirp(memberDir(dataDir));
    }
    if (opts.lock === 'check' && !opts.readOnly)
      throw new StorageError(`checking the lock without taking it is for read-only opening only (data dir ${dataDir})`);
    const lock = opts.lock === 'check' ? DirLock.check(fs, dataDir) : DirLock.acquire(fs, dataDir, warnings);
    try {
      const r = recoverDataDir(dataDir, fs, opts, warnings);
      const storage = new RaftStorage(
        dataDir,
        r.member,
        fs,
        lock,
        r.log,
        r.hardState,
        r.snapshot,
        r.segments,
        opts.segmentBytes ?? 64 * MiB,
        opts.preallocBytes ?? 4 * MiB,
        opts.largeWriteBytes ?? 64 * 1024,
        opts.keepSnapshots ?? 2,
        opts.readOnly ?? false,
      );
      try {
        if (r.tail && !opts.readOnly) storage.resume(r.tail.info, r.tail.writeOff, r.tail.zeroUpTo);
        storage.restoreSnapshot(warnings);
      } catch (err) {
        storage.abandon();
        throw err;
      }
      const state: PersistedState = { hardState: storage.hardState(), snapshot: r.snapshot, entries: r.log.all() };
      return { storage, state, member: r.member, warnings };
    } catch (err) {
      lock.release();
      throw err;
    }
  }

  /** Lets go of the open segment without syncing (recovery failed). The caller releases the lock. */
  private abandon(): void {
    this.closed = true;
    if (this.current) this.fs.close(this.current.fh);
    this.current = undefined;
  }

  /** Continues appending to the newest segment, first wiping a cut-off torn tail. */
  private resume(info: SegmentInfo, writeOff: number, zeroUpTo: number): void {
    const fh = this.fs.open(info.file);
    this.current = { info, fh, writeOff, allocated: this.fs.size(fh) };
    if (zeroUpTo > writeOff) {
      // So that nothing stale can ever follow new records.
      this.fs.write(fh, Buffer.alloc(zeroUpTo - writeOff), writeOff);
      this.fs.fsync(fh);
    }
  }

  /**
   * Applies the newest snapshot to the replayed log the way Raft restores one: the
   * log after it is kept only if the log agrees at its index. If not (a crash came
   * between saving a snapshot's file and its marker), or if the hard state's commit
   * is behind the snapshot, the fix is written to the log at once, so that the log
   * on disk always replays to what is in memory.
   */
  private restoreSnapshot(warnings: StorageWarning[]): void {
    const { index, term } = this.snap;
    const keep = this.log.term(index) === term;
    const fixes: LogRecord[] = [];
    if (!keep) {
      fixes.push({ type: RecordType.Snapshot, index, term });
      warnings.push({ msg: 'raft log replaced by the newest snapshot, whose marker a crash kept from the log', index, term });
    }
    const hardState = { ...this.hs, commit: Math.max(this.hs.commit, index) };
    if (hardState.commit !== this.hs.commit) fixes.push({ type: RecordType.HardState, hardState });
    if (fixes.length > 0 && !this.readOnly) this.guard(() => this.append(fixes, true));
    if (keep) this.log.compact(index);
    else this.log.reset(index, term);
    this.hs = hardState;
  }

  /** Member ID and cluster ID of the data dir. */
  get member(): MemberMeta {
    return this.identity;
  }

  /** Records a new cluster ID (a forced new cluster, a recovery): the member and its log stay. */
  setClusterId(clusterId: bigint): void {
    this.writable();
    const meta = { ...this.identity, clusterId };
    this.guard(() => writeMemberMeta(this.fs, this.dataDir, meta));
    this.identity = meta;
  }

  firstIndex(): number {
    return this.log.firstIndex();
  }
  lastIndex(): number {
    return this.log.lastIndex();
  }
  /** Term of an entry in [firstIndex() - 1, lastIndex()]; undefined outside. */
  term(index: number): number | undefined {
    return this.log.term(index);
  }
  hardState(): HardState {
    return { ...this.hs };
  }
  snapshotMeta(): SnapshotMeta {
    return this.snap;
  }

  /** Entries [lo, hi) of the retained log. */
  entries(lo: number, hi: number): Entry[] {
    this.usable();
    if (lo < this.log.firstIndex() || hi > this.log.lastIndex() + 1 || lo > hi) {
      throw new RangeError(`entries [${lo}, ${hi}) outside the retained log [${this.log.firstIndex()}, ${this.log.lastIndex()}]`);
    }
    return this.log.slice(lo, hi);
  }

  /** The newest snapshot with its data (read from its file and verified again), if any. */
  latestSnapshot(): Snapshot | undefined {
    this.usable();
    const info = listSnapshots(this.fs, this.dataDir).find((s) => s.index === this.snap.index && s.term === this.snap.term);
    if (!info) {
      if (this.snap.index === 0) return undefined;
      throw new StorageError(`snapshot at index ${this.snap.index} has vanished from ${snapDir(this.dataDir)}`);
    }
    return readSnapshotFile(this.fs, this.dataDir, info, this.member.memberId);
  }

  /**
   * Persists a Ready's snapshot, entries and hard state: one write, and one fsync
   * if `sync` (before anything that depends on them is sent). A snapshot's file is
   * made durable first, then the log records it.
   */
  save(batch: SaveBatch, opts: { sync: boolean }): void {
    this.writable();
    const entries = batch.entries ?? [];
    const snapshot = batch.snapshot;
    this.checkBatch(entries, snapshot, batch.hardState);
    const records: LogRecord[] = [];
    if (snapshot) records.push({ type: RecordType.Snapshot, index: snapshot.meta.index, term: snapshot.meta.term });
    const first = entries[0]?.index;
    if (!snapshot && first !== undefined && first <= this.log.lastIndex()) {
      records.push({ type: RecordType.Truncate, index: first - 1, term: this.log.term(first - 1)! });
    }
    for (const entry of entries) records.push({ type: RecordType.Entry, entry });
    if (batch.hardState && !sameHardState(batch.hardState, this.hs)) records.push({ type: RecordType.HardState, hardState: batch.hardState });

    this.guard(() => {
      if (snapshot) writeSnapshotFile(this.fs, this.dataDir, this.member.memberId, snapshot);
      if (records.length > 0) this.append(records, opts.sync);
      else if (opts.sync && this.current) this.fsyncSegment(this.current);
    });
    if (snapshot) {
      this.log.reset(snapshot.meta.index, snapshot.meta.term);
      this.snap = snapshot.meta;
    }
    for (const e of entries) this.log.put(e);
    if (batch.hardState) this.hs = { ...batch.hardState };
    if (snapshot) this.guard(() => this.pruneSnapshots());
  }

  /**
   * Makes everything save() wrote durable, with the fdatasync in libuv's thread
   * pool so the event loop keeps serving meanwhile (the member's driver: write
   * with `sync: false`, then await this before sending what depends on it).
   * Nothing may write or close until it settles; a failure poisons the storage.
   */
  async sync(): Promise<void> {
    this.writable();
    const cur = this.current;
    if (!cur) return;
    this.syncing = true;
    try {
      await this.fs.fsyncAsync(cur.fh);
      this.journalSync(cur);
    } catch (err) {
      throw this.syncFailed(err);
    } finally {
      this.syncing = false;
    }
  }

  /** sync() on this thread: for a small batch, where the thread pool's hand-offs cost more than the fsync overlaps. */
  syncNow(): void {
    this.writable();
    const cur = this.current;
    if (!cur) return;
    try {
      this.fsyncSegment(cur);
    } catch (err) {
      throw this.syncFailed(err);
    }
  }

  /** A failed fsync poisons the storage: what the kernel dropped is unknown. */
  private syncFailed(err: unknown): StorageError {
    this.failure = err instanceof Error ? err : new Error(String(err));
    return new StorageError(`raft storage of data dir ${this.dataDir}: fsync failed: ${this.failure.message}`);
  }

  /**
   * Saves a snapshot the member took of its own state (at an applied, hence
   * committed, index). The log is left alone; compact() may drop it afterwards.
   */
  saveSnapshot(snapshot: Snapshot): void {
    this.writable();
    const { index, term } = snapshot.meta;
    if (index <= this.snap.index) throw new StorageError(`raft storage: snapshot at ${index} is not newer than the saved one at ${this.snap.index}`);
    if (this.log.term(index) !== term) {
      throw new StorageError(`raft storage: snapshot at ${index} term ${term} does not match the log (term ${this.log.term(index) ?? 'none'})`);
    }
    this.guard(() => {
      writeSnapshotFile(this.fs, this.dataDir, this.member.memberId, snapshot);
      this.snap = snapshot.meta;
      this.pruneSnapshots();
    });
  }

  /**
   * Replaces the whole persisted state (--force-new-cluster, recovery tools): the
   * snapshot file if its metadata changed (keeping its data unless `data` is
   * given), then a new segment holding a snapshot marker, the entries and the hard
   * state, made durable; the segments before it are deleted. A crash midway leaves
   * the old log, possibly with the new snapshot file (same index and term).
   */
  rewrite(state: PersistedState, data?: Uint8Array): void {
    this.writable();
    const { snapshot, entries, hardState } = state;
    const fail = (what: string) => new StorageError(`raft storage: cannot rewrite: ${what}`);
    const sameSnap = snapshot.index === this.snap.index && snapshot.term === this.snap.term;
    if (snapshot.index < this.snap.index || (snapshot.index === this.snap.index && !sameSnap)) {
      throw fail(`snapshot ${snapshot.index} term ${snapshot.term} is older than the saved one at ${this.snap.index} term ${this.snap.term}`);
    }
    entries.forEach((e, i) => {
      if (e.index !== snapshot.index + 1 + i) throw fail(`entries must follow the snapshot contiguously (entry ${e.index} at position ${i})`);
    });
    const last = snapshot.index + entries.length;
    if (hardState.commit < snapshot.index || hardState.commit > last) throw fail(`commit ${hardState.commit} outside [${snapshot.index}, ${last}]`);

    const changed = !sameSnap || !sameConf(snapshot.conf, this.snap.conf);
    const writeFile = data !== undefined || (changed && (snapshot.index > 0 || snapshot.conf.voters.length + snapshot.conf.learners.length > 0));
    const blob = data ?? (writeFile && sameSnap ? this.latestSnapshot()?.data : undefined) ?? new Uint8Array(0);
    this.guard(() => {
      if (writeFile) writeSnapshotFile(this.fs, this.dataDir, this.member.memberId, { meta: snapshot, data: blob });
      this.append(
        [
          { type: RecordType.Snapshot, index: snapshot.index, term: snapshot.term },
          ...entries.map((entry): LogRecord => ({ type: RecordType.Entry, entry })),
          { type: RecordType.HardState, hardState },
        ],
        true,
      );
    });
    this.log.reset(snapshot.index, snapshot.term);
    for (const e of entries) this.log.put(e);
    this.hs = { ...hardState };
    this.snap = snapshot;
    this.compact(snapshot.index);
    this.guard(() => this.pruneSnapshots());
  }

  /** Forgets entries up to `index` (at most the newest snapshot's) and deletes the segments that held only those. */
  compact(index: number): void {
    this.writable();
    if (index > this.snap.index) throw new StorageError(`raft storage: cannot compact to ${index}: the newest snapshot is at ${this.snap.index}`);
    this.log.compact(index);
    let lastWithSnapshot = -1;
    this.segments.forEach((s, i) => {
      if (s.hasSnapshot) lastWithSnapshot = i;
    });
    let n = 0;
    while (n < this.segments.length - 1 && (n < lastWithSnapshot || this.segments[n].maxIndex <= index)) n++;
    if (n === 0) return;
    this.guard(() => {
      // Oldest first: a crash midway leaves a contiguous run of segments.
      for (const seg of this.segments.slice(0, n)) this.fs.unlink(seg.file);
      this.fs.fsyncDir(walDir(this.dataDir));
    });
    this.segments.splice(0, n);
  }

  /** Makes the open segment durable and releases the data dir. */
  close(): void {
    if (this.closed) return;
    if (this.syncing) throw new StorageError(`raft storage of data dir ${this.dataDir}: closed while an fsync is in flight (await sync() first)`);
    this.closed = true;
    try {
      if (this.current && !this.failure) this.fs.fsync(this.current.fh);
    } finally {
      if (this.current) this.fs.close(this.current.fh);
      this.current = undefined;
      this.lock.release();
    }
  }

  private usable(): void {
    if (this.closed) throw new StorageError(`raft storage of data dir ${this.dataDir} is closed`);
    if (this.failure) throw new StorageError(`raft storage of data dir ${this.dataDir} failed earlier and must be reopened: ${this.failure.message}`);
  }

  private writable(): void {
    this.usable();
    if (this.readOnly) throw new StorageError(`raft storage of data dir ${this.dataDir} is open read-only`);
    if (this.syncing) throw new StorageError(`raft storage of data dir ${this.dataDir}: write while an fsync is in flight (await sync() first)`);
  }

  /** Runs I/O; after a failure the in-memory state may be ahead of the disk, so the storage refuses further use. */
  private guard(io: () => void): void {
    try {
      io();
    } catch (err) {
      this.failure = err instanceof Error ? err : new Error(String(err));
      throw err;
    }
  }

  /** Raft's invariants, checked before anything is written (a broken one is a bug in the caller). */
  private checkBatch(entries: readonly Entry[], snapshot: Snapshot | undefined, hs: HardState | undefined): void {
    const fail = (what: string) => new StorageError(`raft storage: ${what}`);
    let base = this.log.baseIndex;
    let last = this.log.lastIndex();
    if (snapshot) {
      if (snapshot.meta.index <= this.snap.index) throw fail(`snapshot at ${snapshot.meta.index} is not newer than the saved one at ${this.snap.index}`);
      base = last = snapshot.meta.index;
    }
    if (entries.length > 0) {
      const first = entries[0].index;
      if (first <= base || first > last + 1) throw fail(`entries start at ${first}, outside (${base}, ${last + 1}]`);
      entries.forEach((e, i) => {
        if (e.index !== first + i) throw fail(`entries not contiguous: ${e.index} after ${first + i - 1}`);
      });
      if (!snapshot) {
        const committed = Math.min(this.hs.commit, last);
        for (let i = first; i <= committed; i++) {
          if (entries[i - first]?.term !== this.log.term(i)) throw fail(`entry ${i} is committed and would be replaced`);
        }
      }
    }
    if (hs) {
      if (hs.term < this.hs.term) throw fail(`hard state term ${hs.term} is behind ${this.hs.term}`);
      if (hs.commit < this.hs.commit) throw fail(`hard state commit ${hs.commit} is behind ${this.hs.commit}`);
    }
  }

  private append(records: LogRecord[], sync: boolean): void {
    const buf = encodeRecords(records);
    let cur = this.current;
    const full = cur !== undefined && cur.writeOff + buf.length > this.segmentBytes;
    // A snapshot marker starts a segment, so that compaction can drop every segment before it whole.
    const marker = records[0]?.type === RecordType.Snapshot;
    if (!cur || (cur.writeOff > SEGMENT_HEADER && (full || marker))) cur = this.roll();
    this.reserve(cur, cur.writeOff + buf.length);
    this.fs.write(cur.fh, buf, cur.writeOff);
    cur.writeOff += buf.length;
    if (sync) this.fsyncSegment(cur);
    for (const r of records) {
      if (r.type === RecordType.Entry) cur.info.maxIndex = Math.max(cur.info.maxIndex, r.entry.index);
      if (r.type === RecordType.Snapshot) {
        cur.info.maxIndex = Math.max(cur.info.maxIndex, r.index);
        cur.info.hasSnapshot = true;
      }
    }
  }

  private fsyncSegment(cur: OpenSegment): void {
    this.fs.fsync(cur.fh);
    this.journalSync(cur);
  }

  /** Failpoint `sync-journal:<file>`: after every fsync of the log, "<segment> <offset>" now durable is appended to <file> (the power-loss model reads it). */
  private journalSync(cur: OpenSegment): void {
    const journal = __LIFEBOAT_FAULTS__ && failpointArg('sync-journal');
    if (journal) nodeFs.appendFileSync(journal, `${path.basename(cur.info.file)} ${cur.writeOff}\n`);
  }

  /**
   * Grows the file with zeros ahead of the records (preallocation), so that most
   * fsyncs need not update the file size: measured, that makes small batches
   * faster (bench/storageLog.ts). Large writes skip it: they are bound by
   * bandwidth, and the zeros would double the bytes that reach the disk.
   */
  private reserve(cur: OpenSegment, end: number): void {
    if (end <= cur.allocated) return;
    if (this.preallocBytes === 0 || end - cur.writeOff >= this.largeWriteBytes) {
      cur.allocated = end;
      return;
    }
    const target = Math.ceil(end / this.preallocBytes) * this.preallocBytes;
    for (let off = cur.allocated; off < target; off += ZERO_CHUNK.length) {
      this.fs.write(cur.fh, ZERO_CHUNK.subarray(0, Math.min(ZERO_CHUNK.length, target - off)), off);
    }
    cur.allocated = target;
  }

  /** Seals the open segment (durably) and starts the next one. */
  private roll(): OpenSegment {
    const old = this.current;
    if (old) {
      const seal = encodeRecords([{ type: RecordType.Seal, seq: old.info.seq }]);
      this.reserve(old, old.writeOff + seal.length);
      this.fs.write(old.fh, seal, old.writeOff);
      this.fs.fsync(old.fh);
      this.fs.close(old.fh);
      this.current = undefined;
    }
    const seq = (this.segments.at(-1)?.seq ?? 0) + 1;
    const prevIndex = this.log.lastIndex();
    const header = encodeSegmentHeader({
      memberId: this.member.memberId,
      clusterId: this.member.clusterId,
      seq,
      prevIndex,
      prevTerm: this.log.lastTerm(),
      hardState: this.hs,
    });
    const dir = walDir(this.dataDir);
    const file = path.join(dir, segmentName(seq, prevIndex + 1));
    // Built under a temp name and renamed, so a segment is never seen without its header.
    const tmp = file + TEMP_SUFFIX;
    if (this.fs.exists(tmp)) this.fs.unlink(tmp);
    const fh = this.fs.create(tmp);
    const building: OpenSegment = { info: { seq, file, maxIndex: 0, hasSnapshot: false }, fh, writeOff: SEGMENT_HEADER, allocated: 0 };
    try {
      this.fs.write(fh, header, 0);
      building.allocated = SEGMENT_HEADER;
      this.reserve(building, SEGMENT_HEADER + 1);
      this.fs.fsync(fh);
    } finally {
      this.fs.close(fh);
    }
    this.fs.rename(tmp, file);
    this.fs.fsyncDir(dir);
    const cur: OpenSegment = { ...building, fh: this.fs.open(file) };
    this.segments.push(cur.info);
    this.current = cur;
    return cur;
  }

  private pruneSnapshots(): void {
    const all = listSnapshots(this.fs, this.dataDir);
    const drop = all.slice(0, Math.max(0, all.length - this.keepSnapshots));
    for (const s of drop) this.fs.unlink(s.file);
    if (drop.length > 0) this.fs.fsyncDir(snapDir(this.dataDir));
  }
}
