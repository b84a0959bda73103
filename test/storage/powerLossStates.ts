// The states a power loss can leave of one member's data dir, for the power-loss
// models (powerLossModel.ts: one member; clusterPowerLossModel.ts: three). A cut
// is a copy of the data dir taken while the member is frozen (SIGSTOP): the page
// cache at that moment. The log's durable part is known from the member's own
// record of its fsyncs (failpoint `sync-journal`). A state keeps the log's synced
// prefix plus a prefix of the unsynced tail, maybe a torn record or a zero-filled
// or garbage tail; kv.db is at this cut's state or an earlier one (SQLite loses
// its unsynced WAL frames from the end). All choices come from a seeded source,
// so a state replays from its seed.
//
// Also here: starting a member on a data dir, and waiting for it to serve.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { KvStore } from '../../src/kv/kvStore.js';
import { NodeFileSystem } from '../../src/storage/fileSystem.js';
import { parseSegmentName, parseSnapshotName, walDir } from '../../src/storage/layout.js';
import { RecordType } from '../../src/storage/logRecord.js';
import { readMemberMeta } from '../../src/storage/memberMeta.js';
import { SEGMENT_HEADER, scanSegment } from '../../src/storage/segment.js';
import { binFor } from '../support/lifeboatCluster.js';

export type Category = 'kv above commit' | 'kv above last index' | 'torn record' | 'zero-filled tail' | 'garbage tail' | 'older kv.db';
export const CATEGORIES: Category[] = ['kv above commit', 'kv above last index', 'torn record', 'zero-filled tail', 'garbage tail', 'older kv.db'];

/** The workload's keys and values. */
export const key = (i: number) => `pl/${String(i).padStart(6, '0')}`;
export const value = (i: number) => `v${i}`;

/** One member's data dir at one frozen moment. */
export interface MemberCut {
  /** Holds the copy's `member/` directory. */
  dir: string;
  /** How a case names it, e.g. `cut-3` or `cut-3/m2`. */
  label: string;
  /** The newest segment and the offset the member's fsyncs made durable in it. */
  segment: string;
  synced: number;
  /** kv.db's applied index at the cut. */
  applied: number;
  snapIndex: number;
}

/** Reads a copy of the member's kv.db (opening the original would write its -shm). */
function withKvCopy<T>(memberDir: string, scratch: string, read: (kv: KvStore) => T): T {
  fs.rmSync(scratch, { recursive: true, force: true });
  fs.mkdirSync(scratch, { recursive: true });
  for (const f of ['kv.db', 'kv.db-wal']) if (fs.existsSync(path.join(memberDir, f))) fs.copyFileSync(path.join(memberDir, f), path.join(scratch, f));
  const kv = KvStore.open(path.join(scratch, 'kv.db'), { readonly: true });
  try {
    return read(kv);
  } finally {
    kv.close();
  }
}

function kvAppliedOf(memberDir: string, scratch: string): number {
  return withKvCopy(memberDir, scratch, (kv) => kv.appliedIndex());
}

/** The keys in [from, to) that a cut's kv.db holds (as committed: a member holds its latest applies uncommitted for up to MEMBER_KV_OPTIONS.commitDelayMs). */
export function kvKeysOf(cut: MemberCut, scratch: string, from: string, to: string): Set<string> {
  return withKvCopy(path.join(cut.dir, 'member'), scratch, (kv) => {
    const r = kv.range({ key: Buffer.from(from), rangeEnd: Buffer.from(to), keysOnly: true });
    return new Set(r.kvs.map((x) => x.key.toString()));
  });
}

function newestSegment(dataDir: string): string {
  const names = fs.readdirSync(walDir(dataDir)).filter((n) => parseSegmentName(n));
  names.sort();
  const newest = names.at(-1);
  if (newest === undefined) throw new Error(`no log segment in ${walDir(dataDir)}`);
  return newest;
}

/**
 * Copies a frozen member's data dir (`liveDataDir`) to `dir` and reads what the
 * model needs of it: its newest segment, the offset its sync journal says is
 * durable there, kv.db's applied index (read from a copy in `scratch`).
 */
export function recordCut(liveDataDir: string, journal: string, dir: string, label: string, scratch: string): MemberCut {
  fs.cpSync(path.join(liveDataDir, 'member'), path.join(dir, 'member'), { recursive: true });
  const segment = newestSegment(dir);
  const lines = fs.existsSync(journal) ? fs.readFileSync(journal, 'utf8').trim().split('\n') : [];
  const last = lines.at(-1)?.split(' ');
  const synced = last && last[0] === segment ? Number(last[1]) : SEGMENT_HEADER;
  const snaps = fs.readdirSync(path.join(dir, 'member', 'snap')).map((n) => parseSnapshotName(n)?.index ?? 0);
  return { dir, label, segment, synced, applied: kvAppliedOf(path.join(dir, 'member'), scratch), snapIndex: Math.max(0, ...snaps) };
}

export function memberIdOf(dataDir: string): bigint {
  const meta = readMemberMeta(new NodeFileSystem(), dataDir);
  if (!meta) throw new Error(`no member meta in ${dataDir}`);
  return meta.memberId;
}

/** A state to restart one member from: which kv.db, where the log ends and how. */
export interface MemberState {
  cut: MemberCut;
  kvFrom: MemberCut;
  /** Records from this offset on are gone. */
  cutAt: number;
  tail: 'none' | 'torn' | 'zeros' | 'garbage';
  categories: Category[];
}

/** The log of a cut's newest segment, as much as the model needs: each record's offset and the log's last index and commit after it. */
interface LogShape {
  records: { offset: number; last: number; commit: number }[];
  end: number;
  headerCommit: number;
  prevIndex: number;
}

const shapes = new WeakMap<MemberCut, LogShape>();

function shapeOf(cut: MemberCut, memberId: bigint): LogShape {
  const known = shapes.get(cut);
  if (known) return known;
  const file = path.join(walDir(cut.dir), cut.segment);
  const buf = fs.readFileSync(file);
  const scan = scanSegment(buf, { dataDir: cut.dir, file, memberId, seq: parseSegmentName(cut.segment)?.seq ?? 0 });
  const header = buf.subarray(0, SEGMENT_HEADER);
  const prevIndex = Number(header.readBigUInt64LE(32));
  const headerCommit = Number(header.readBigUInt64LE(64));
  let last = prevIndex;
  let commit = headerCommit;
  const records = scan.records.map((r) => {
    if (r.record.type === RecordType.Entry) last = r.record.entry.index;
    else if (r.record.type === RecordType.Truncate || r.record.type === RecordType.Snapshot) last = r.record.index;
    else if (r.record.type === RecordType.HardState) commit = r.record.hardState.commit;
    return { offset: r.offset, last, commit };
  });
  const shape = { records, end: scan.end.offset, prevIndex, headerCommit };
  shapes.set(cut, shape);
  return shape;
}

/** The log's last entry index and commit, keeping only the records before `at`. */
function logAt(shape: LogShape, at: number): { last: number; commit: number } {
  let out = { last: shape.prevIndex, commit: shape.headerCommit };
  for (const r of shape.records) {
    if (r.offset >= at) break;
    out = r;
  }
  return { last: out.last, commit: out.commit };
}

/** The last index of the cut's log as far as it is durable (its synced prefix), and as far as it was written. */
export function durableLastIndex(cut: MemberCut, memberId: bigint): { durable: number; written: number } {
  const shape = shapeOf(cut, memberId);
  return { durable: logAt(shape, cut.synced).last, written: logAt(shape, shape.end).last };
}

/**
 * Chooses a power-loss state of `cut` (one of `cuts`, the same member's) that
 * shows `category`, or any state when it is undefined; undefined when this draw
 * gives none. `leaderStandIn`: for "kv above last index", the log may also lose
 * synced records below kv.db's applied index (a single member standing in for a
 * leader whose followers made them durable first); without it the synced prefix
 * always stays.
 */
export function chooseState(
  cuts: readonly MemberCut[],
  cut: MemberCut,
  category: Category | undefined,
  rnd: () => number,
  memberId: bigint,
  opts: { leaderStandIn: boolean },
): MemberState | undefined {
  const shape = shapeOf(cut, memberId);
  // kv.db: this cut's state, or (older kv.db) an earlier one still covering the log's snapshot.
  const older = cuts.filter((k) => k !== cut && k.applied >= cut.snapIndex && k.applied <= cut.applied);
  const kvFrom =
    category === 'older kv.db'
      ? older[Math.floor(rnd() * older.length)]
      : category === 'kv above last index' || category === 'kv above commit'
        ? cut
        : rnd() < 0.5
          ? cut
          : (older[Math.floor(rnd() * older.length)] ?? cut);
  if (!kvFrom) return undefined;
  // Where the log may end: at a record boundary at or after the synced offset (or, for the leader's
  // stand-in, anywhere below the kv's applied index), or at the end of the records.
  const bounds = [...shape.records.map((r) => r.offset), shape.end];
  let candidates = bounds.filter((b) => b >= cut.synced);
  if (category === 'kv above last index')
    candidates = (opts.leaderStandIn ? bounds.filter((b) => b > SEGMENT_HEADER) : candidates).filter((b) => logAt(shape, b).last < kvFrom.applied);
  if (category === 'kv above commit') candidates = candidates.filter((b) => logAt(shape, b).commit < kvFrom.applied);
  if (candidates.length === 0) return undefined;
  const cutAt = candidates[Math.floor(rnd() * candidates.length)];
  const tail: MemberState['tail'] =
    category === 'torn record'
      ? 'torn'
      : category === 'zero-filled tail'
        ? 'zeros'
        : category === 'garbage tail'
          ? 'garbage'
          : (['none', 'zeros', 'torn'] as const)[Math.floor(rnd() * 3)];
  if (tail === 'torn' && cutAt >= shape.end) return undefined;
  const log = logAt(shape, cutAt);
  const categories: Category[] = [];
  if (kvFrom.applied > log.commit) categories.push('kv above commit');
  if (kvFrom.applied > log.last) categories.push('kv above last index');
  if (tail === 'torn') categories.push('torn record');
  if (tail === 'zeros') categories.push('zero-filled tail');
  if (tail === 'garbage') categories.push('garbage tail');
  if (kvFrom !== cut) categories.push('older kv.db');
  if (category !== undefined && !categories.includes(category)) return undefined;
  return { cut, kvFrom, cutAt, tail, categories };
}

/** Builds the state's data dir in `dir`. */
export function materialize(s: MemberState, dir: string, rnd: () => number): void {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.cpSync(path.join(s.cut.dir, 'member'), path.join(dir, 'member'), { recursive: true });
  for (const f of ['kv.db', 'kv.db-wal', 'kv.db-shm']) fs.rmSync(path.join(dir, 'member', f), { force: true });
  for (const f of ['kv.db', 'kv.db-wal']) {
    const src = path.join(s.kvFrom.dir, 'member', f);
    if (fs.existsSync(src)) fs.copyFileSync(src, path.join(dir, 'member', f));
  }
  const file = path.join(walDir(dir), s.cut.segment);
  const buf = fs.readFileSync(file);
  const end = Math.max(s.cutAt, buf.length);
  const gone = buf.length - s.cutAt;
  if (gone > 0) buf.fill(0, s.cutAt);
  if (s.tail === 'torn') {
    // A prefix of the next record's bytes reached the disk.
    const orig = fs.readFileSync(path.join(walDir(s.cut.dir), s.cut.segment));
    const len = orig.readUInt32LE(s.cutAt + 4) + 9;
    const keep = 1 + Math.floor(rnd() * Math.max(1, len - 1));
    orig.copy(buf, s.cutAt, s.cutAt, s.cutAt + Math.min(keep, len - 1));
  } else if (s.tail === 'zeros') {
    // The file grew (its size reached the disk) but the data blocks did not: zeros.
    fs.writeFileSync(file, Buffer.concat([buf, Buffer.alloc(4096 * (1 + Math.floor(rnd() * 16)))]));
    return;
  } else if (s.tail === 'garbage') {
    const n = Math.min(end - s.cutAt, 16 + Math.floor(rnd() * 4096));
    for (let i = 0; i < n; i++) buf[s.cutAt + i] = 1 + Math.floor(rnd() * 255);
  }
  fs.writeFileSync(file, buf);
}

/** E.g. `cut-3 (kv.db from cut-1, applied 412), log cut at byte 9120 of … (synced 8800), tail torn`. */
export function describeState(s: MemberState): string {
  return `${s.cut.label} (kv.db from ${s.kvFrom.label}, applied ${s.kvFrom.applied}), log cut at byte ${s.cutAt} of ${s.cut.segment} (synced ${s.cut.synced}), tail ${s.tail}`;
}

export interface MemberSpawn {
  name: string;
  dataDir: string;
  listenPeerUrl: string;
  advertisePeerUrl: string;
  clientUrl: string;
  /** More `lifeboat server` flags. */
  extra: string[];
  /** LIFEBOAT_FAULT: failpoints, comma-separated ('' for none). */
  fault: string;
  /** Where its stderr (the log) goes. */
  logFile: string;
  heartbeatMs: number;
  electionMs: number;
}

export function spawnMember(m: MemberSpawn): ChildProcess {
  const env: NodeJS.ProcessEnv = { ...process.env, LIFEBOAT_FAULT: m.fault };
  const args = [
    binFor(env),
    'server',
    '--name',
    m.name,
    '--data-dir',
    m.dataDir,
    '--listen-peer-urls',
    m.listenPeerUrl,
    '--initial-advertise-peer-urls',
    m.advertisePeerUrl,
  ];
  args.push('--listen-client-urls', m.clientUrl, '--advertise-client-urls', m.clientUrl);
  args.push('--heartbeat-interval', String(m.heartbeatMs), '--election-timeout', String(m.electionMs), ...m.extra);
  const p = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
  p.stderr.pipe(fs.createWriteStream(m.logFile));
  return p;
}

/** Resolves once `p` knows a leader (bounded); rejects if it exits first. */
export async function waitServing(p: ChildProcess, clientUrl: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (p.exitCode !== null || p.signalCode !== null) throw new Error(`the member on ${clientUrl} exited (${p.exitCode ?? p.signalCode})`);
    if (Date.now() > deadline) throw new Error(`the member on ${clientUrl} knew no leader within ${timeoutMs / 1000} s`);
    // A new client each time: one that tried before the member listened waits out grpc's reconnect backoff.
    const c = new EtcdClient({ endpoints: clientUrl, commandTimeoutMs: 1_000 });
    try {
      if ((await c.status()).leader !== 0n) return;
    } catch {
      // not listening yet
    } finally {
      c.close();
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The last `n` lines of a member's log, joined on one line (more after a crash: node's stack trace). */
export function logTail(logFile: string, n = 2): string {
  if (!fs.existsSync(logFile)) return '';
  const lines = fs.readFileSync(logFile, 'utf8').trim().split('\n');
  return lines.slice(lines.at(-1)?.startsWith('Node.js v') ? -12 : -n).join(' | ');
}
