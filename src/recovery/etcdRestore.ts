// Recovery into a real etcd member: a new one-member etcd cluster with a new
// cluster ID (a fresh random --initial-cluster-token), built by etcd's own tools
// so the data dir is exactly what etcd writes.
//
// From an `etcdctl snapshot save` file: `snapshot restore` (etcdutl where it
// exists, 3.5+; etcdctl on 3.4).
//
// From a stopped member's data dir, every entry it holds is kept by default: a
// copy of member/snap/db alone loses what was applied after the backend's last
// commit, and `--force-new-cluster` alone drops the entries past the commit index.
// So, in a scratch copy (the source is never written): the commit index is moved
// to the last entry (one HardState record appended, its CRC continuing the chain),
// etcd runs once with --force-new-cluster on loopback ports and applies the whole
// log itself, is stopped cleanly, and its db is restored like a snapshot.
//
// Either way the db handed to `snapshot restore` is a scratch copy whose members
// bucket is emptied first: etcd 3.4's restore keeps it (3.5's etcdutl trims it),
// so the old members' records — the replay member's, under the survivor's old ID,
// among them — would stay in the new cluster's backend beside its real members,
// and come back on the next recovery or on an upgrade to an etcd that reads
// membership from the backend. The new members write their own records as they
// start. members_removed keeps the old IDs: none may ever join again, and a backend
// with removals is not mistaken for a cluster whose members all founded it (the
// cluster ID `snapshot status` derives).
import { execFile, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { InputError, RefusedError } from '../common/errors.js';
import { ephemeralLoopbackPort } from '../common/ports.js';
import { formatId as hex } from '../common/ids.js';
import { memberCommandLine } from '../common/memberCommand.js';
import { isValidMemberUrl } from '../common/urls.js';
import { clientFor } from '../client/etcdClient.js';
import { emptyBoltBuckets, hasTrailer, requireTrailer, TRAILER_SIZE, TrailerError } from '../etcdfile/index.js';
import { waitUntil } from '../ops/memberOps.js';
import { etcdBinary, etcdRestoreTool, etcdVersionOf } from '../ops/runtime.js';
import { logTail } from '../ops/startMember.js';
import { clusterIdFor, memberIdFor } from '../storage/identity.js';
import { memberDir } from '../storage/layout.js';
import { commitWalTail, walCommitIndex } from './etcdWalTail.js';
import type { RestoreOptions, RestoreResult } from './restore.js';
import { snapshotStatus } from './snapshotFormat.js';
import { NodeFileSystem } from '../storage/fileSystem.js';

const run = promisify(execFile);

export interface EtcdRestoreOptions extends RestoreOptions {
  etcdBin?: string;
  /** the source's separate WAL directory (etcd's --wal-dir), if it has one */
  walDir?: string;
  /** progress lines */
  onProgress?: (text: string) => void;
  /** warnings (an untested etcd version) */
  onWarning?: (text: string) => void;
}

export interface EtcdRestoreResult extends RestoreResult {
  runtime: 'etcd';
  /** the fresh token the new cluster was built with (its ID derives from it) */
  initialClusterToken: string;
  etcdVersion: string;
}

function checkOptions(o: EtcdRestoreOptions): void {
  if (!o.name) throw new InputError('--name is required');
  if (o.initialAdvertisePeerUrls.length === 0 || !o.initialAdvertisePeerUrls.every(isValidMemberUrl))
    throw new InputError(`--initial-advertise-peer-urls "${o.initialAdvertisePeerUrls.join(',')}" is not a valid URL list; e.g. http://10.0.0.1:2380`);
  if (fs.existsSync(o.dataDir) && fs.readdirSync(o.dataDir).length > 0)
    throw new RefusedError(`data dir ${o.dataDir} is not empty; restore into a new directory (or move ${o.dataDir} aside first)`);
}

/** The tools, checked before anything is written; bump-revision needs etcdutl (3.5 with the backport, 3.6). */
function tools(o: EtcdRestoreOptions): { etcd: string; restore: { bin: string; env: NodeJS.ProcessEnv }; version: string } {
  const etcd = etcdBinary(o.etcdBin);
  const v = etcdVersionOf(etcd);
  if (v.warning) o.onWarning?.(v.warning);
  const restore = etcdRestoreTool(etcd);
  if ((o.bumpRevision ?? 0) > 0 || o.markCompacted) {
    if (path.basename(restore.bin) !== 'etcdutl')
      throw new InputError(
        `--bump-revision/--mark-compacted need etcdutl (etcd 3.6, or 3.5 with the backport); etcd ${v.version}'s etcdctl snapshot restore lacks them: restore without them, or into a Lifeboat member`,
      );
  }
  return { etcd, restore, version: v.version };
}

/** Whether this etcd's restore can bump the revision and mark it compacted: etcdutl of 3.5.10 or later (3.4's etcdctl cannot). */
export function etcdRestoreMarksCompacted(etcdBin?: string): boolean {
  const etcd = etcdBinary(etcdBin);
  if (path.basename(etcdRestoreTool(etcd).bin) !== 'etcdutl') return false;
  const [major, minor, patch] = etcdVersionOf(etcd).version.split('.').map(Number);
  return major > 3 || (major === 3 && (minor > 5 || (minor === 5 && patch >= 10)));
}

/** The backend bucket of member records: the new cluster's are written by its members as they start. */
const MEMBERSHIP_BUCKETS = ['members'];

/** `snapshot restore` of a bbolt file into <dataDir>.part, renamed into place. */
async function restoreDb(db: string, o: EtcdRestoreOptions, t: ReturnType<typeof tools>, token: string, skipHashCheck: boolean): Promise<void> {
  const target = path.resolve(o.dataDir);
  const part = `${target}.part`;
  fs.rmSync(part, { recursive: true, force: true });
  fs.mkdirSync(path.dirname(target), { recursive: true });
  const peers = o.initialAdvertisePeerUrls.join(',');
  const args = [
    'snapshot',
    'restore',
    db,
    '--data-dir',
    part,
    '--name',
    o.name,
    '--initial-cluster',
    o.initialAdvertisePeerUrls.map((u) => `${o.name}=${u}`).join(','),
    '--initial-advertise-peer-urls',
    peers,
    '--initial-cluster-token',
    token,
    ...(skipHashCheck ? ['--skip-hash-check'] : []),
    ...((o.bumpRevision ?? 0) > 0 ? ['--bump-revision', String(o.bumpRevision), '--mark-compacted'] : []),
  ];
  try {
    await run(t.restore.bin, args, { env: { ...process.env, ...t.restore.env }, timeout: 10 * 60_000, maxBuffer: 16 << 20 });
    if (fs.existsSync(target)) fs.rmdirSync(target); // checked empty
    fs.renameSync(part, target);
    new NodeFileSystem().fsyncDir(path.dirname(target));
  } catch (e) {
    fs.rmSync(part, { recursive: true, force: true });
    const err = e as Error & { stderr?: string };
    const why = (err.stderr ?? err.message).trim().split('\n').at(-1);
    throw new Error(`${path.basename(t.restore.bin)} snapshot restore of ${db} failed: ${why}`);
  }
}

function result(o: EtcdRestoreOptions, token: string, parent: bigint, revision: number, keys: number, version: string, kept: number): EtcdRestoreResult {
  const memberId = memberIdFor(o.initialAdvertisePeerUrls, token);
  return {
    runtime: 'etcd',
    dataDir: path.resolve(o.dataDir),
    memberId: hex(memberId),
    clusterId: hex(clusterIdFor([memberId])),
    parentClusterId: hex(parent),
    revision,
    keys,
    appliedIndex: 0,
    uncommittedKept: kept,
    serverCommand: etcdStartCommand(o),
    initialClusterToken: token,
    etcdVersion: version,
    notCarriedOver: [],
  };
}

/** The `etcd …` line that starts the restored member (clients on 2379 of its peer host, etcd's convention), through the one command-line builder. */
function etcdStartCommand(o: EtcdRestoreOptions): string {
  const peers = o.initialAdvertisePeerUrls.join(',');
  const client = `http://${new URL(o.initialAdvertisePeerUrls[0]).hostname}:2379`;
  return memberCommandLine('etcd', [
    ['name', o.name],
    ['data-dir', path.resolve(o.dataDir)],
    ['listen-peer-urls', peers],
    ['initial-advertise-peer-urls', peers],
    ['listen-client-urls', client],
    ['advertise-client-urls', client],
  ]);
}

/** A fresh token: the new cluster's ID must never equal the old one, even with the same peer URLs. */
function freshToken(given?: string): string {
  return `${given && given !== 'etcd-cluster' ? given : 'lifeboat-recovered'}-${randomBytes(6).toString('hex')}`;
}

/** From an etcd snapshot file (sha256 trailer checked unless skipHashCheck). */
export async function restoreEtcdSnapshotFile(file: string, o: EtcdRestoreOptions): Promise<EtcdRestoreResult> {
  checkOptions(o);
  if (!fs.existsSync(file)) throw new InputError(`snapshot ${file} does not exist; check the path`);
  try {
    requireTrailer(file, !!o.skipHashCheck);
  } catch (err) {
    if (err instanceof TrailerError && err.kind === 'missing') throw new InputError(err.message);
    throw err;
  }
  const t = tools(o);
  const status = await snapshotStatus(file);
  const token = freshToken(o.initialClusterToken);
  // A scratch copy without the trailer (checked above) whose old membership is emptied.
  const scratch = `${path.resolve(o.dataDir)}.source.db`;
  fs.mkdirSync(path.dirname(scratch), { recursive: true });
  try {
    fs.copyFileSync(file, scratch);
    const size = fs.statSync(scratch).size;
    if (hasTrailer(size)) fs.truncateSync(scratch, size - TRAILER_SIZE);
    emptyBoltBuckets(scratch, MEMBERSHIP_BUCKETS);
    await restoreDb(scratch, o, t, token, true);
  } finally {
    fs.rmSync(scratch, { force: true });
  }
  return result(
    o,
    token,
    o.parentClusterId ?? BigInt(`0x${status.clusterId || '0'}`),
    status.revision + (o.bumpRevision ?? 0),
    status.etcd?.liveKeys ?? status.totalKeys,
    t.version,
    0,
  );
}

/** The name of the internal member that replays a survivor's log; never a member of a recovered cluster. */
export const REPLAY_MEMBER_NAME = 'lifeboat-replay';

/**
 * Runs etcd --force-new-cluster on a scratch data dir, on loopback ports, until it
 * has applied its whole log; then stops it cleanly so its db holds everything.
 */
async function replayWithEtcd(etcd: string, scratch: string, walDir: string | undefined, mustApply: number, onProgress?: (t: string) => void): Promise<void> {
  const [clientPort, peerPort] = [await ephemeralLoopbackPort(), await ephemeralLoopbackPort()];
  const client = `http://127.0.0.1:${clientPort}`;
  const peer = `http://127.0.0.1:${peerPort}`;
  const log = path.join(scratch, 'replay.log');
  const fd = fs.openSync(log, 'a');
  const args = [
    '--data-dir',
    scratch,
    ...(walDir ? ['--wal-dir', walDir] : []),
    '--force-new-cluster',
    '--name',
    REPLAY_MEMBER_NAME,
    '--listen-client-urls',
    client,
    '--advertise-client-urls',
    client,
    '--listen-peer-urls',
    peer,
    '--initial-advertise-peer-urls',
    peer,
    '--snapshot-count',
    '100000000',
  ];
  const child = spawn(etcd, args, { stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  let exited: string | undefined;
  const done = new Promise<void>((resolve) =>
    child.once('exit', (code, signal) => {
      exited = signal ? `killed by ${signal}` : `exit ${code}`;
      resolve();
    }),
  );
  try {
    onProgress?.(`replaying the log with etcd --force-new-cluster on ${client} (scratch copy)`);
    const conn = { dialTimeoutMs: 1000, commandTimeoutMs: 5000 };
    let lastApplied = -1;
    await waitUntil('etcd to apply the whole log', 5 * 60_000, async () => {
      if (exited) throw new Error(`etcd --force-new-cluster stopped (${exited}): ${logTail(log, 3)}`);
      const c = clientFor([client], conn);
      try {
        const s = await c.status();
        // Settled: the whole committed log applied (an etcd still loading reports low indexes that look settled), and the same on two looks in a row.
        const settled = s.raftAppliedIndex >= mustApply && s.raftAppliedIndex >= s.raftIndex && s.raftAppliedIndex === lastApplied;
        lastApplied = s.raftAppliedIndex;
        return settled ? true : undefined;
      } catch {
        return undefined;
      } finally {
        c.close();
      }
    });
  } finally {
    if (!exited) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await done;
      clearTimeout(timer);
    }
  }
  if (exited !== 'exit 0' && exited !== 'killed by SIGTERM') throw new Error(`etcd --force-new-cluster did not stop cleanly (${exited}): ${logTail(log, 3)}`);
}

/**
 * From a stopped etcd member's data dir (and its --wal-dir): every entry kept
 * unless discardUncommitted. The source is copied first and never written.
 */
export async function restoreEtcdDataDir(src: string, o: EtcdRestoreOptions & { parentClusterId: bigint }): Promise<EtcdRestoreResult> {
  checkOptions(o);
  if (path.resolve(src) === path.resolve(o.dataDir)) throw new InputError('the new data dir must differ from the source data dir');
  const t = tools(o);
  const scratch = `${path.resolve(o.dataDir)}.replay`;
  fs.rmSync(scratch, { recursive: true, force: true });
  fs.mkdirSync(scratch, { recursive: true });
  try {
    fs.cpSync(memberDir(src), memberDir(scratch), { recursive: true });
    const scratchWal = path.join(scratch, 'wal');
    if (o.walDir) fs.cpSync(o.walDir, scratchWal, { recursive: true });
    const walDir = o.walDir ? scratchWal : path.join(memberDir(scratch), 'wal');
    const tail = o.discardUncommitted ? { pastCommit: 0, appended: false, commit: walCommitIndex(walDir) } : commitWalTail(walDir);
    if (tail.appended) o.onProgress?.(`kept ${tail.pastCommit} entries past the commit index: the scratch copy's commit moved to its last entry`);
    await replayWithEtcd(t.etcd, scratch, o.walDir ? scratchWal : undefined, tail.commit, o.onProgress);
    const db = path.join(memberDir(scratch), 'snap', 'db');
    const status = await snapshotStatus(db);
    const token = freshToken(o.initialClusterToken);
    emptyBoltBuckets(db, MEMBERSHIP_BUCKETS);
    await restoreDb(db, o, t, token, true);
    return result(o, token, o.parentClusterId, status.revision, status.etcd?.liveKeys ?? status.totalKeys, t.version, tail.pastCommit);
  } finally {
    fs.rmSync(scratch, { recursive: true, force: true });
  }
}
