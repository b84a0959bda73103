// The power-loss model. A real member runs a workload; at cut points it is frozen
// (SIGSTOP) and its data dir copied: that is the page cache at the cut. The log's
// durable part is known from the member's own record of its fsyncs (failpoint
// `sync-journal`). From each cut, states a power loss can leave are generated and
// a member is started on each: the log keeps its synced prefix plus any prefix of
// the unsynced tail, maybe a torn record or a zero-filled or garbage tail; kv.db
// is at its state of this cut or of an earlier one (SQLite loses its unsynced WAL
// frames from the end). Every restart must start, serve every write acknowledged
// before the cut, and take a new write. Seeded: a case replays from (seed, case).
//
// One state is not a single member's but a leader's in a 3-member cluster: kv.db
// ahead of the log's last entry (the leader applies what its followers made
// durable before its own fsync returned). The single member stands in for it.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { EtcdClient } from '../../src/client/etcdClient.js';
import { KvStore } from '../../src/kv/kvStore.js';
import { NodeFileSystem } from '../../src/storage/fileSystem.js';
import { parseSegmentName, parseSnapshotName, walDir } from '../../src/storage/layout.js';
import { RecordType } from '../../src/storage/logRecord.js';
import { readMemberMeta } from '../../src/storage/memberMeta.js';
import { SEGMENT_HEADER, scanSegment, type ScannedRecord } from '../../src/storage/segment.js';
import { BIN } from '../support/lifeboatCluster.js';
import { freePorts } from '../support/ports.js';
import { seeded } from './fixtures.js';

export type Category = 'kv above commit' | 'kv above last index' | 'torn record' | 'zero-filled tail' | 'garbage tail' | 'older kv.db';
export const CATEGORIES: Category[] = ['kv above commit', 'kv above last index', 'torn record', 'zero-filled tail', 'garbage tail', 'older kv.db'];

/** One frozen moment of the running member. */
export interface Cut {
  dir: string;
  /** Keys whose put was acknowledged before the freeze. */
  acked: number;
  /** The newest segment and the offset the member's fsyncs made durable in it. */
  segment: string;
  synced: number;
  /** kv.db's applied index at the cut. */
  applied: number;
  snapIndex: number;
}

export interface CaptureResult {
  root: string;
  cuts: Cut[];
  member: { name: string; advertisePeerUrl: string; memberHex: string };
}

const key = (i: number) => `pl/${String(i).padStart(6, '0')}`;
const value = (i: number) => `v${i}`;

function kvAppliedOf(memberDir: string, scratch: string): number {
  fs.rmSync(scratch, { recursive: true, force: true });
  fs.mkdirSync(scratch, { recursive: true });
  for (const f of ['kv.db', 'kv.db-wal']) if (fs.existsSync(path.join(memberDir, f))) fs.copyFileSync(path.join(memberDir, f), path.join(scratch, f));
  const kv = KvStore.open(path.join(scratch, 'kv.db'), { readonly: true });
  try {
    return kv.appliedIndex();
  } finally {
    kv.close();
  }
}

function newestSegment(dataDir: string): string {
  const names = fs.readdirSync(walDir(dataDir)).filter((n) => parseSegmentName(n));
  names.sort();
  return names.at(-1)!;
}

/**
 * Runs a member through `keys` puts (8 clients) and freezes it every `every`
 * acknowledgements; `planted` plants a bug (failpoint ack-before-fsync).
 */
export async function capture(root: string, opts: { keys: number; every: number; snapshotCount: number; planted?: boolean }): Promise<CaptureResult> {
  fs.mkdirSync(root, { recursive: true });
  const [peer, client] = await freePorts(2, path.basename(root));
  const dataDir = path.join(root, 'live');
  const journal = path.join(root, 'sync-journal');
  const peerUrl = `http://127.0.0.1:${peer}`;
  const clientUrl = `http://127.0.0.1:${client}`;
  const faults = [`sync-journal:${journal}`, ...(opts.planted ? ['ack-before-fsync'] : [])];
  const proc = spawnMember(
    dataDir,
    peerUrl,
    peerUrl,
    clientUrl,
    ['--initial-cluster', `m1=${peerUrl}`, '--snapshot-count', String(opts.snapshotCount)],
    faults.join(','),
    path.join(root, 'live.log'),
  );
  const cuts: Cut[] = [];
  try {
    await waitServing(proc, clientUrl);
    const c = new EtcdClient({ endpoints: clientUrl, commandTimeoutMs: 10_000 });
    let next = 0;
    let acked = 0;
    const ackedSet = new Set<number>();
    const freeze = () => {
      // Only keys acknowledged before the stop count as promised.
      const promised = [...ackedSet];
      proc.kill('SIGSTOP');
      try {
        const dir = path.join(root, `cut-${cuts.length}`);
        fs.cpSync(path.join(dataDir, 'member'), path.join(dir, 'member'), { recursive: true });
        const segment = newestSegment(dir);
        const lines = fs.existsSync(journal) ? fs.readFileSync(journal, 'utf8').trim().split('\n') : [];
        const last = lines.at(-1)?.split(' ');
        const synced = last && last[0] === segment ? Number(last[1]) : SEGMENT_HEADER;
        fs.writeFileSync(path.join(dir, 'acked.json'), JSON.stringify(promised));
        const snaps = fs.readdirSync(path.join(dir, 'member', 'snap')).map((n) => parseSnapshotName(n)?.index ?? 0);
        cuts.push({
          dir,
          acked: promised.length,
          segment,
          synced,
          applied: kvAppliedOf(path.join(dir, 'member'), path.join(root, 'scratch')),
          snapIndex: Math.max(0, ...snaps),
        });
      } finally {
        proc.kill('SIGCONT');
      }
    };
    const worker = async () => {
      while (next < opts.keys) {
        const i = next++;
        await c.put(key(i), value(i));
        ackedSet.add(i);
        if (++acked % opts.every === 0) freeze();
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    c.close();
  } finally {
    proc.kill('SIGKILL');
  }
  const meta = readMemberMeta(new NodeFileSystem(), dataDir)!;
  return { root, cuts, member: { name: 'm1', advertisePeerUrl: peerUrl, memberHex: meta.memberId.toString(16) } };
}

function spawnMember(
  dataDir: string,
  listenPeer: string,
  advertisePeer: string,
  clientUrl: string,
  extra: string[],
  fault: string,
  logFile: string,
): ChildProcess {
  const env: NodeJS.ProcessEnv = { ...process.env, LIFEBOAT_FAULT: fault };
  const args = [BIN, 'server', '--name', 'm1', '--data-dir', dataDir, '--listen-peer-urls', listenPeer, '--initial-advertise-peer-urls', advertisePeer];
  args.push('--listen-client-urls', clientUrl, '--advertise-client-urls', clientUrl, '--heartbeat-interval', '20', '--election-timeout', '100', ...extra);
  const p = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
  const log = fs.createWriteStream(logFile);
  p.stderr.pipe(log);
  return p;
}

async function waitServing(p: ChildProcess, clientUrl: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (p.exitCode !== null || p.signalCode !== null) throw new Error(`the member exited (${p.exitCode ?? p.signalCode})`);
    if (Date.now() > deadline) throw new Error('the member did not elect itself leader within 20 s');
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

/** A state to restart from: which cut, which kv.db, where the log ends and how. */
export interface Case {
  n: number;
  cut: Cut;
  kvFrom: Cut;
  /** Records from this offset on are gone. */
  cutAt: number;
  tail: 'none' | 'torn' | 'zeros' | 'garbage';
  categories: Category[];
}

interface LogShape {
  records: ScannedRecord[];
  end: number;
}

function shapeOf(file: string, dataDir: string, memberId: bigint): LogShape {
  const buf = fs.readFileSync(file);
  const scan = scanSegment(buf, { dataDir, file, memberId, seq: parseSegmentName(path.basename(file))!.seq });
  return { records: scan.records, end: scan.end.offset };
}

/** The log's last entry index and commit, keeping only the records before `at`. */
function logAt(shape: LogShape, at: number, headerCommit: number, prevIndex: number): { last: number; commit: number } {
  let last = prevIndex;
  let commit = headerCommit;
  for (const r of shape.records) {
    if (r.offset >= at) break;
    if (r.record.type === RecordType.Entry) last = r.record.entry.index;
    else if (r.record.type === RecordType.Truncate || r.record.type === RecordType.Snapshot) last = r.record.index;
    else if (r.record.type === RecordType.HardState) commit = r.record.hardState.commit;
  }
  return { last, commit };
}

/** Generates `count` cases for `category`, seeded. */
export function generate(cap: CaptureResult, category: Category, count: number, seed: number, first: number): Case[] {
  const out: Case[] = [];
  const memberId = BigInt('0x' + cap.member.memberHex);
  for (let attempt = 0; out.length < count && attempt < count * 50; attempt++) {
    const rnd = seeded(seed * 1_000_003 + first + attempt);
    const cut = cap.cuts[Math.floor(rnd() * cap.cuts.length)];
    const file = path.join(walDir(cut.dir), cut.segment);
    const shape = shapeOf(file, cut.dir, memberId);
    const header = fs.readFileSync(file).subarray(0, SEGMENT_HEADER);
    const prevIndex = Number(header.readBigUInt64LE(32));
    const headerCommit = Number(header.readBigUInt64LE(64));
    // kv.db: this cut's state, or (older kv.db) an earlier one still covering the log's snapshot.
    const older = cap.cuts.filter((k) => k !== cut && k.applied >= cut.snapIndex && k.applied <= cut.applied);
    const kvFrom =
      category === 'older kv.db'
        ? older[Math.floor(rnd() * older.length)]
        : category === 'kv above last index' || category === 'kv above commit'
          ? cut
          : rnd() < 0.5
            ? cut
            : (older[Math.floor(rnd() * older.length)] ?? cut);
    if (!kvFrom) continue;
    // Where the log may end: at a record boundary at or after the synced offset (or anywhere below the
    // kv's applied index for the leader's state), or at the end of the records.
    const bounds = [...shape.records.map((r) => r.offset), shape.end];
    let candidates = bounds.filter((b) => b >= cut.synced);
    if (category === 'kv above last index')
      candidates = bounds.filter((b) => logAt(shape, b, headerCommit, prevIndex).last < kvFrom.applied && b > SEGMENT_HEADER);
    if (category === 'kv above commit') candidates = candidates.filter((b) => logAt(shape, b, headerCommit, prevIndex).commit < kvFrom.applied);
    if (candidates.length === 0) continue;
    const cutAt = candidates[Math.floor(rnd() * candidates.length)];
    const tail: Case['tail'] =
      category === 'torn record'
        ? 'torn'
        : category === 'zero-filled tail'
          ? 'zeros'
          : category === 'garbage tail'
            ? 'garbage'
            : (['none', 'zeros', 'torn'] as const)[Math.floor(rnd() * 3)];
    if (tail === 'torn' && cutAt >= shape.end) continue;
    const log = logAt(shape, cutAt, headerCommit, prevIndex);
    const categories: Category[] = [];
    if (kvFrom.applied > log.commit) categories.push('kv above commit');
    if (kvFrom.applied > log.last) categories.push('kv above last index');
    if (tail === 'torn') categories.push('torn record');
    if (tail === 'zeros') categories.push('zero-filled tail');
    if (tail === 'garbage') categories.push('garbage tail');
    if (kvFrom !== cut) categories.push('older kv.db');
    if (!categories.includes(category)) continue;
    out.push({ n: first + out.length, cut, kvFrom, cutAt, tail, categories });
  }
  return out;
}

/** Builds the case's data dir in `dir`. */
function materialize(c: Case, dir: string, rnd: () => number): void {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.cpSync(path.join(c.cut.dir, 'member'), path.join(dir, 'member'), { recursive: true });
  for (const f of ['kv.db', 'kv.db-wal', 'kv.db-shm']) fs.rmSync(path.join(dir, 'member', f), { force: true });
  for (const f of ['kv.db', 'kv.db-wal']) {
    const src = path.join(c.kvFrom.dir, 'member', f);
    if (fs.existsSync(src)) fs.copyFileSync(src, path.join(dir, 'member', f));
  }
  const file = path.join(walDir(dir), c.cut.segment);
  const buf = fs.readFileSync(file);
  const end = Math.max(c.cutAt, buf.length);
  const gone = buf.length - c.cutAt;
  if (gone > 0) buf.fill(0, c.cutAt);
  if (c.tail === 'torn') {
    // A prefix of the next record's bytes reached the disk.
    const orig = fs.readFileSync(path.join(walDir(c.cut.dir), c.cut.segment));
    const len = orig.readUInt32LE(c.cutAt + 4) + 9;
    const keep = 1 + Math.floor(rnd() * Math.max(1, len - 1));
    orig.copy(buf, c.cutAt, c.cutAt, c.cutAt + Math.min(keep, len - 1));
  } else if (c.tail === 'zeros') {
    // The file grew (its size reached the disk) but the data blocks did not: zeros.
    fs.writeFileSync(file, Buffer.concat([buf, Buffer.alloc(4096 * (1 + Math.floor(rnd() * 16)))]));
    return;
  } else if (c.tail === 'garbage') {
    const n = Math.min(end - c.cutAt, 16 + Math.floor(rnd() * 4096));
    for (let i = 0; i < n; i++) buf[c.cutAt + i] = 1 + Math.floor(rnd() * 255);
  }
  fs.writeFileSync(file, buf);
}

export interface CaseResult {
  c: Case;
  error?: string;
}

/** Restarts a member on the case's state and checks it. */
export async function runCase(cap: CaptureResult, c: Case, dir: string, ports: [number, number], seed: number): Promise<CaseResult> {
  materialize(c, dir, seeded(seed * 7919 + c.n));
  const clientUrl = `http://127.0.0.1:${ports[1]}`;
  const logFile = `${dir}.log`;
  const p = spawnMember(dir, `http://127.0.0.1:${ports[0]}`, cap.member.advertisePeerUrl, clientUrl, [], '', logFile);
  const exited = new Promise<void>((r) => p.on('exit', () => r()));
  try {
    await waitServing(p, clientUrl);
    const client = new EtcdClient({ endpoints: clientUrl, commandTimeoutMs: 10_000 });
    try {
      const r = await client.range('pl/', { rangeEnd: 'pl0' });
      const got = new Map(r.kvs.map((kv) => [kv.key.toString(), kv.value.toString()]));
      const acked = JSON.parse(fs.readFileSync(path.join(c.cut.dir, 'acked.json'), 'utf8')) as number[];
      const lost = acked.filter((i) => got.get(key(i)) !== value(i));
      if (lost.length > 0) return { c, error: `${lost.length} acknowledged writes lost, e.g. ${key(lost[0])}` };
      await client.put('pl/after-restart', 'x');
    } finally {
      client.close();
    }
    return { c };
  } catch (e) {
    const tail = fs.existsSync(logFile) ? fs.readFileSync(logFile, 'utf8').trim().split('\n').slice(-2).join(' | ') : '';
    return { c, error: `${(e as Error).message}; log: ${tail}` };
  } finally {
    p.kill('SIGKILL');
    await exited;
  }
}

export function describeCase(c: Case): string {
  return `case ${c.n}: ${path.basename(c.cut.dir)} (kv.db from ${path.basename(c.kvFrom.dir)}, applied ${c.kvFrom.applied}), log cut at byte ${c.cutAt} of ${c.cut.segment} (synced ${c.cut.synced}), tail ${c.tail} [${c.categories.join(', ')}]`;
}
