// `recover plan`: read-only comparison of every survivor the operator has (data
// dirs, `datadir inspect -w json` files from other hosts, snapshots), the
// source that loses the least, exactly what is kept and what may be lost, and
// the command that applies the plan. Sources of different clusters are never
// compared with each other: the operator names the cluster to recover. A backup
// point (STORE@POINT, resolved by the caller from the store's catalog) is compared
// with the survivors of its cluster by revision: it is recommended only when it
// holds more, or when the operator prefers it (--prefer-backup); what each choice
// loses is said either way. An older snapshot or backup gets the revision bump
// (revisionBump.ts), planned here.
import fs from 'node:fs';
import path from 'node:path';
import { InputError, RefusedError } from '../common/errors.js';
import { formatId, parseHexId } from '../common/ids.js';
import { DataDirLockedError } from '../storage/errors.js';
import { inspectDataDir, type DataDirReport } from './inspect.js';
import { snapshotStatus, type SnapshotStatus } from './snapshotFormat.js';
import { fencedDataDirProblem } from './fenceRecord.js';
import { etcdRestoreMarksCompacted } from './etcdRestore.js';
import { planRevisionBump } from './revisionBump.js';

export type SourceKind = 'data-dir' | 'inspect' | 'snapshot' | 'backup';

/** A backup point as the store's catalog describes it, nothing replayed (src/backup/backupSource.ts resolves it). */
export interface BackupPoint {
  /** STORE@POINT */
  source: string;
  clusterId: string;
  runtime: 'etcd' | 'lifeboat';
  revision: number;
  /** the last revision the store holds for the cluster */
  lastRevision: number;
  /** when the agent saw the revision (ISO) */
  seenAt?: string;
  /** when the agent saw the last stored revision (ISO) */
  lastSeenAt?: string;
}

export interface PlanSource {
  kind: SourceKind;
  path: string;
  /** Data dir or inspect file. */
  report?: DataDirReport;
  snapshot?: SnapshotStatus;
  /** A backup point (path is STORE@POINT). */
  backup?: BackupPoint;
  /** Why this source cannot be used (damaged, locked, unreadable). */
  error?: string;
  /** Refused by a safety check: a data dir a running member holds, or a fenced one. */
  refused?: boolean;
  /** The path given is not there (or not a source at all): bad input. */
  badInput?: boolean;
  /**
   * Seconds since the snapshot was taken, when the plan was made: a snapshot file's
   * modification time; a data dir's newest Raft snapshot file. null: a data dir
   * with no Raft snapshot yet, or an inspect file that does not say.
   */
  snapshotAgeSeconds?: number | null;
  /** When that snapshot was taken (ISO time), if known. */
  snapshotTakenAt?: string;
}

/** The sources of one cluster (by the cluster ID inspect reports for either runtime). */
export interface PlanCluster {
  /**
   * Hex. null: unknown — an etcd snapshot file whose membership changed since
   * bootstrap (etcd keeps no cluster ID in its backend, see snapshotFormat.ts), or
   * a file that records none. Such a source is a group of its own: never merged
   * into a cluster's group, never compared with another source.
   */
  clusterId: string | null;
  /** Indexes into sources. */
  sources: number[];
  /** The group's most recent source (index into sources): the one it would be recovered from. */
  best: number;
  /** Keys that source holds. */
  keys: number;
  /** The cluster this one was recovered from, when its data records it. */
  recoveredFrom?: string;
}

/** What the sources hold, by cluster: all a plan can say when they span clusters and none is named. */
export interface PlanOverview {
  sources: PlanSource[];
  /** The usable sources grouped by cluster; more than one group: different (or unknown) clusters. */
  clusters: PlanCluster[];
  /** One line per cluster the operator could choose: what that choice loses. */
  lostByChoice: string[];
  warnings: string[];
}

/** The sources span clusters and the operator named none: refused (exit 3), with what each holds. */
export class MixedClustersError extends RefusedError {
  constructor(
    message: string,
    readonly overview: PlanOverview,
  ) {
    super(message);
    this.name = 'MixedClustersError';
  }
}

export interface RecoveryPlan {
  sources: PlanSource[];
  clusters: PlanCluster[];
  /** The cluster recovered (hex; null: a lone source of unknown cluster); only its sources were compared. */
  clusterId: string | null;
  /** Index into sources. */
  recommended: number;
  why: string;
  keeps: string[];
  loses: string[];
  warnings: string[];
  discardUncommitted: boolean;
  /** Runs the plan (placeholders in <angle brackets> for what the operator must choose). */
  command: string;
  /** Backup points against the survivors: which holds more, what each choice loses. */
  compared: string[];
  /** The revision bump the recovery will make (or why none). */
  revisionBump?: string;
  /** A survivor's revision above the recommended snapshot's or backup's: the recovery's `last-revision`. */
  lastRevision?: number;
  /** A backup was given and a survivor holds more: not recommended; the one line saying how to choose it anyway. */
  backupSetAside?: string;
}

export interface PlanInput {
  dataDirs: string[];
  /** etcd's --wal-dir for the etcd data dirs: one for the only data dir, or one per data dir in order. */
  walDirs?: string[];
  inspectFiles: string[];
  snapshots: string[];
  /** Backup points, already resolved against their stores. */
  backups?: BackupPoint[];
  /** Recommend a backup point even when a survivor holds more. */
  preferBackup?: boolean;
  discardUncommitted: boolean;
  /** The cluster to recover when the sources span clusters (hex, as the plan prints it). */
  clusterId?: string;
}

function withAge(s: PlanSource, takenAt: string | undefined, now: number): PlanSource {
  if (!takenAt) return { ...s, snapshotAgeSeconds: null };
  return { ...s, snapshotTakenAt: takenAt, snapshotAgeSeconds: Math.max(0, Math.round((now - Date.parse(takenAt)) / 1000)) };
}

/** The two largest units: "3d 4h", "1h 0m", "12m 5s", "40s". */
export function formatAge(seconds: number): string {
  const units: Array<[string, number]> = [
    ['d', 86400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ];
  const found = units.findIndex(([, n]) => seconds >= n);
  const i = found < 0 ? units.length - 1 : found;
  const [u1, n1] = units[i];
  const first = `${Math.floor(seconds / n1)}${u1}`;
  if (i === units.length - 1) return first;
  const [u2, n2] = units[i + 1];
  return `${first} ${Math.floor((seconds % n1) / n2)}${u2}`;
}

function ageText(s: PlanSource): string {
  if (s.snapshotAgeSeconds === null || s.snapshotAgeSeconds === undefined) return s.kind === 'snapshot' ? 'unknown' : 'no Raft snapshot yet';
  return `${formatAge(s.snapshotAgeSeconds)} (taken ${s.snapshotTakenAt})`;
}

/** How a source's error ends the plan when no source is usable: refused (exit 3), bad input such as a missing path (exit 2), or neither. */
function errorClass(e: unknown): Pick<PlanSource, 'refused' | 'badInput'> {
  if (e instanceof DataDirLockedError || e instanceof RefusedError) return { refused: true };
  if (e instanceof InputError || (e as NodeJS.ErrnoException).code === 'ENOENT') return { badInput: true };
  return {};
}

async function load(input: PlanInput): Promise<PlanSource[]> {
  const out: PlanSource[] = [];
  const now = Date.now();
  const walDirs = input.walDirs ?? [];
  if (walDirs.length > 0 && walDirs.length !== input.dataDirs.length) {
    throw new InputError(
      `give one --wal-dir per --from-data-dir, in the same order (${walDirs.length} --wal-dir for ${input.dataDirs.length} data dirs); use "" for a data dir whose WAL is in member/wal`,
    );
  }
  for (const [i, dir] of input.dataDirs.entries()) {
    try {
      const walDir = walDirs[i] || undefined;
      const report = await inspectDataDir(dir, { walDir });
      out.push(withAge({ kind: 'data-dir', path: path.resolve(dir), report }, report.snapshotTakenAt, now));
    } catch (e) {
      out.push({ kind: 'data-dir', path: path.resolve(dir), error: (e as Error).message, ...errorClass(e) });
    }
  }
  for (const file of input.inspectFiles) {
    try {
      let report: DataDirReport;
      try {
        report = JSON.parse(fs.readFileSync(file, 'utf8')) as DataDirReport;
      } catch (err) {
        // Never the file's bytes in the message: it may be binary.
        if (err instanceof SyntaxError) throw new Error('not JSON: not the output of `lifeboat datadir inspect -w json`');
        throw err;
      }
      if (typeof report.lastIndex !== 'number' || typeof report.clusterId !== 'string') throw new Error('not the output of `lifeboat datadir inspect -w json`');
      report.runtime ??= 'lifeboat';
      out.push(withAge({ kind: 'inspect', path: path.resolve(file), report }, report.snapshotTakenAt, now));
    } catch (e) {
      out.push({ kind: 'inspect', path: path.resolve(file), error: `${file}: ${(e as Error).message.split('\n')[0]}`, ...errorClass(e) });
    }
  }
  for (const file of input.snapshots) {
    try {
      const snapshot = await snapshotStatus(file);
      out.push(withAge({ kind: 'snapshot', path: path.resolve(file), snapshot }, fs.statSync(file).mtime.toISOString(), now));
    } catch (e) {
      out.push({ kind: 'snapshot', path: path.resolve(file), error: (e as Error).message, ...errorClass(e) });
    }
  }
  for (const b of input.backups ?? [])
    out.push({
      kind: 'backup',
      path: b.source,
      backup: b,
      snapshotTakenAt: b.seenAt,
      snapshotAgeSeconds: b.seenAt ? Math.max(0, Math.round((now - Date.parse(b.seenAt)) / 1000)) : null,
    });
  return out;
}

/** Raft's "at least as up to date": higher last term, then higher last index. */
function newer(a: DataDirReport, b: DataDirReport): boolean {
  return a.lastTerm > b.lastTerm || (a.lastTerm === b.lastTerm && a.lastIndex > b.lastIndex);
}

type Indexed = { s: PlanSource; i: number };

/** The KV revision a source holds. */
function revisionOf(s: PlanSource): number {
  return s.report?.kvRevision ?? s.snapshot?.revision ?? s.backup?.revision ?? 0;
}

/**
 * The most recent of one cluster's sources: the newest log, else the snapshot with
 * the highest revision; a backup point only when it holds a higher revision than
 * that (or is preferred, or is all there is).
 */
function mostRecent(candidates: Indexed[], preferBackup = false): Indexed {
  const backups = candidates.filter(({ s }) => s.backup);
  const others = candidates.filter(({ s }) => !s.backup);
  const bestBackup = backups.length > 0 ? backups.reduce((a, b) => (revisionOf(b.s) > revisionOf(a.s) ? b : a)) : undefined;
  const logs = others.filter(({ s }) => s.report);
  const bestOther =
    logs.length > 0
      ? logs.reduce((a, b) => (newer(b.s.report!, a.s.report!) ? b : a))
      : others.length > 0
        ? others.reduce((a, b) => (b.s.snapshot!.revision > a.s.snapshot!.revision ? b : a))
        : undefined;
  if (!bestOther) return bestBackup!;
  if (bestBackup && (preferBackup || revisionOf(bestBackup.s) > revisionOf(bestOther.s))) return bestBackup;
  return bestOther;
}

/** The source's cluster ID as inspect reports it (etcd data dirs: their WAL's; etcd snapshots: derived), normalized; null: unknown. */
function clusterOf(s: PlanSource): string | null {
  const id = parseHexId(s.report?.clusterId ?? s.snapshot?.clusterId ?? s.backup?.clusterId ?? '');
  return id === undefined || id === 0n ? null : formatId(id);
}

/** Live keys (an etcd snapshot's totalKeys counts every stored revision). */
function keysOf(s: PlanSource): number {
  return s.report?.keyCount ?? s.snapshot?.etcd?.liveKeys ?? s.snapshot?.totalKeys ?? 0;
}

/** The usable sources grouped by cluster, in the order given; each source of unknown cluster alone. */
function groupByCluster(sources: PlanSource[], preferBackup = false): PlanCluster[] {
  const groups: PlanCluster[] = [];
  const byId = new Map<string, PlanCluster>();
  sources.forEach((s, i) => {
    if (s.error) return;
    const id = clusterOf(s);
    let g = id === null ? undefined : byId.get(id);
    if (!g) {
      g = { clusterId: id, sources: [], best: i, keys: 0 };
      groups.push(g);
      if (id !== null) byId.set(id, g);
    }
    g.sources.push(i);
  });
  for (const g of groups) {
    g.best = mostRecent(
      g.sources.map((i) => ({ s: sources[i], i })),
      preferBackup,
    ).i;
    const best = sources[g.best];
    g.keys = keysOf(best);
    const parent = parseHexId(best.report?.parentClusterId ?? best.snapshot?.parentClusterId ?? '');
    if (parent !== undefined && parent !== 0n) g.recoveredFrom = formatId(parent);
  }
  return groups;
}

/** Why a source's cluster is unknown. */
function unknownWhy(s: PlanSource): string {
  return s.snapshot?.format === 'etcd' ? "etcd keeps no cluster ID in a snapshot and this one's membership changed since bootstrap" : 'the file records none';
}

/** What recovering another group than `g` loses of g, in a few words. */
function heldBy(g: PlanCluster, sources: PlanSource[]): string {
  const best = sources[g.best];
  const more = g.sources.length > 1 ? ` (and ${g.sources.length - 1} more of its sources)` : '';
  if (g.clusterId === null) return `the ${g.keys} keys in ${best.path}, of unknown cluster`;
  return `cluster ${g.clusterId}'s ${g.keys} keys held by ${best.path}${more}`;
}

/** "1a2b (/x/m1, /x/m2), 3c4d (/y/m1)": the clusters and their sources, for one-line messages. */
function clusterList(groups: PlanCluster[], sources: PlanSource[]): string {
  return groups
    .filter((g) => g.clusterId !== null)
    .map((g) => `${g.clusterId} (${g.sources.map((i) => sources[i].path).join(', ')})`)
    .join(', ');
}

/** The group to recover: the one named by --cluster-id, else the only known cluster; refused when that is ambiguous. */
function chooseCluster(input: PlanInput, sources: PlanSource[], groups: PlanCluster[], warnings: string[]): PlanCluster {
  const known = groups.filter((g) => g.clusterId !== null);
  if (input.clusterId !== undefined) {
    const id = parseHexId(input.clusterId);
    const named = id === undefined ? undefined : known.find((g) => g.clusterId === formatId(id));
    if (!named) {
      const what = id === undefined || id === 0n ? 'is not a cluster ID (hex, as the plan prints it)' : 'is not the cluster of any source';
      throw new InputError(`--cluster-id ${input.clusterId} ${what}; the sources' clusters: ${clusterList(groups, sources) || 'none known'}`);
    }
    return named;
  }
  if (known.length === 1) return known[0];
  const overview = (): PlanOverview => ({
    sources,
    clusters: groups,
    lostByChoice: known.map(
      (g) =>
        `choosing cluster ${g.clusterId} loses ${groups
          .filter((o) => o !== g)
          .map((o) => heldBy(o, sources))
          .join('; ')}`,
    ),
    warnings,
  });
  if (known.length > 1)
    throw new MixedClustersError(
      `the sources are from ${known.length} different clusters, ${clusterList(groups, sources)}: a plan recovers one cluster; pass --cluster-id ID naming the one to recover`,
      overview(),
    );
  if (groups.length > 1)
    throw new MixedClustersError(
      `cannot tell whether ${groups.map((g) => sources[g.best].path).join(', ')} are of one cluster (${unknownWhy(sources[groups[0].best])}): plan with the one you mean alone`,
      overview(),
    );
  return groups[0];
}

export async function planRecovery(input: PlanInput): Promise<RecoveryPlan> {
  if (input.dataDirs.length + input.inspectFiles.length + input.snapshots.length + (input.backups?.length ?? 0) === 0) {
    throw new InputError('give at least one source: --from-data-dir DIR, --from-inspect FILE.json, --from-snapshot FILE or --from-backup STORE@POINT');
  }
  const sources = await load(input);
  if (sources.every((s) => s.error)) {
    const message = `no usable source: ${sources.map((s) => s.error).join('; ')}`;
    // A running member's (or a fenced) data dir is a refusal (exit 3), as everywhere else; paths that are not there, bad input (exit 2).
    throw sources.some((s) => s.refused) ? new RefusedError(message) : sources.every((s) => s.badInput) ? new InputError(message) : new Error(message);
  }
  // A survivor named but not there is a typo until shown otherwise: planning without it could recommend a worse one.
  const missing = sources.filter((s) => s.error !== undefined && !fs.existsSync(s.path));
  if (missing.length > 0)
    throw new InputError(`${missing.map((s) => s.error).join('; ')} (the plan compares every source you name: fix the path or leave it out)`);
  const warnings: string[] = [];
  for (const s of sources) if (s.error) warnings.push(`${s.path} cannot be used: ${s.error}`);
  const clusters = groupByCluster(sources, input.preferBackup);
  const chosen = chooseCluster(input, sources, clusters, warnings);
  // Only the chosen cluster's sources are compared: another cluster's log or revision says nothing about this one's.
  const usable = chosen.sources.map((i) => ({ s: sources[i], i }));
  const logs = usable.filter(({ s }) => s.report);
  const snaps = usable.filter(({ s }) => s.snapshot);

  const best = mostRecent(usable, input.preferBackup);
  let why: string;
  if (best.s.backup) {
    const b = best.s.backup;
    why =
      input.preferBackup && usable.some(({ s }) => !s.backup && revisionOf(s) > b.revision)
        ? `the backup point, as --prefer-backup asks (revision ${b.revision}), though a survivor holds more (see Compared)`
        : `the backup point holds revision ${b.revision} of cluster ${b.clusterId}${usable.length > 1 ? ', more than any other source' : ''}`;
  } else if (best.s.report) {
    const r = best.s.report;
    why =
      logs.length > 1
        ? `its log is the most recent (last term ${r.lastTerm}, last index ${r.lastIndex}) of ${logs.length} survivors`
        : `the only survivor's log (last term ${r.lastTerm}, last index ${r.lastIndex})`;
    const newerSnap = snaps.find(
      ({ s }) => s.snapshot!.revision > r.kvRevision + 0 && s.snapshot!.clusterId === r.clusterId && s.snapshot!.appliedIndex > r.lastIndex,
    );
    if (newerSnap)
      warnings.push(
        `snapshot ${newerSnap.s.path} is ahead of every survivor's log (applied index ${newerSnap.s.snapshot!.appliedIndex}); consider recovering from it`,
      );
  } else {
    why = `the snapshot with the highest revision (${best.s.snapshot!.revision})`;
  }
  if (chosen.clusterId !== null && clusters.length > 1) why += `, of cluster ${chosen.clusterId}${input.clusterId !== undefined ? ' (--cluster-id)' : ''}`;
  for (const g of clusters)
    if (g.clusterId === null && g !== chosen)
      warnings.push(`${sources[g.best].path} is set aside: its cluster is unknown (${unknownWhy(sources[g.best])}); to recover from it, plan with it alone`);

  const keeps: string[] = [];
  const loses: string[] = [];
  if (best.s.report) {
    const r = best.s.report;
    keeps.push(`every key in the survivor's store: ${r.keyCount} keys at revision ${r.kvRevision} (applied index ${r.appliedIndex})`);
    const committedPending = r.commitIndex - r.appliedIndex;
    if (committedPending > 0)
      keeps.push(`${committedPending} committed entries not yet applied (${r.appliedIndex + 1}..${r.commitIndex}), applied when the member starts`);
    if (r.uncommitted.count > 0) {
      const range = `${r.uncommitted.from}..${r.uncommitted.to}`;
      if (input.discardUncommitted)
        loses.push(
          `${r.uncommitted.count} entries past the commit index (${range}), dropped by --discard-uncommitted: the old leader may have acknowledged them`,
        );
      else
        keeps.push(
          `${r.uncommitted.count} entries past the commit index (${range}): the old leader may have acknowledged them, so they are applied (--discard-uncommitted drops them)`,
        );
    }
    if (r.uncommitted.confChanges > 0)
      keeps.push(`(${r.uncommitted.confChanges} of them membership changes, which become no-ops: the new cluster starts with this member alone)`);
    for (const other of logs) {
      if (other.i === best.i) continue;
      const o = other.s.report!;
      if (newer(r, o)) loses.push(`nothing from ${other.s.path}: its log (term ${o.lastTerm}, index ${o.lastIndex}) is behind the recommended one`);
    }
    // An acknowledged write is on a quorum of the old voters: unless enough of them
    // were examined, it may be on survivors the plan has not seen.
    const voters = Math.max(r.voters.length, 1);
    const quorum = Math.floor(voters / 2) + 1;
    const examined = new Set(logs.filter(({ s }) => s.report!.clusterId === r.clusterId).map(({ s }) => s.report!.memberId));
    if (examined.size <= voters - quorum) {
      warnings.push(
        `only ${examined.size} of the old cluster's ${voters} voters examined: writes acknowledged after this survivor's last log write (index ${r.lastIndex}${r.lastWrite ? ` at ${r.lastWrite}` : ''}) may be missing; look for a more recent survivor first (every data dir you have: --from-data-dir, or --from-inspect from other hosts)`,
      );
    }
    const v2 = r.etcd?.v2;
    if (v2 && v2.walKeyRequests + (v2.snapshotKeys ?? 0) > 0)
      loses.push(
        `the survivor's etcd v2-API data (${v2.snapshotKeys ?? 0} v2 keys in its snapshot file, ${v2.walKeyRequests} v2 key requests in its WAL): a v3 restore does not carry the v2 store`,
      );
    for (const d of r.damage) warnings.push(`${best.s.path}: ${d}`);
    // A fenced Lifeboat data dir still reads (its superseded marker): say whose fence it is and how to undo it.
    const fenced = r.runtime === 'lifeboat' ? fencedDataDirProblem(best.s.path) : undefined;
    for (const m of r.markers) warnings.push(m === 'superseded' && fenced ? fenced : `${best.s.path} is marked ${m}`);
    if (best.s.kind === 'inspect')
      warnings.push(`the recommended survivor is on another host: copy its data dir here (lifeboat datadir pack / unpack) and plan again with --from-data-dir`);
  } else if (best.s.backup) {
    const b = best.s.backup;
    keeps.push(
      `cluster ${b.clusterId}'s keys and leases at revision ${b.revision}${b.seenAt ? ` (seen by the agent at ${b.seenAt})` : ''}, replayed from the store`,
    );
    loses.push(
      b.lastRevision > b.revision
        ? `every write after revision ${b.revision}: the store holds up to ${b.lastRevision}${b.lastSeenAt ? ` (${b.lastSeenAt})` : ''}, ${b.lastRevision - b.revision} revisions more`
        : `every write after revision ${b.revision}, the last the store holds`,
    );
  } else {
    const s = best.s.snapshot!;
    keeps.push(`the snapshot's ${s.totalKeys} keys at revision ${s.revision} (applied index ${s.appliedIndex})`);
    loses.push('every write after the snapshot was taken');
  }
  const compared = compareBackups(usable, best);
  let backupSetAside: string | undefined;
  const olderBackup = usable.find(({ s }) => s.backup && revisionOf(s) < revisionOf(best.s));
  if (!best.s.backup && olderBackup) {
    backupSetAside = `the backup ${olderBackup.s.path} (revision ${revisionOf(olderBackup.s)}) is older than ${best.s.path} (revision ${revisionOf(best.s)}): recovering from it would lose ${revisionOf(best.s) - revisionOf(olderBackup.s)} revisions; recover from ${best.s.path} (leave out --from-backup), or choose the backup with --prefer-backup`;
    warnings.push(backupSetAside);
  }
  const bump = bumpOf(best.s, usable);
  // Another cluster's data is not recovered by this plan: said in Lost, never silently.
  for (const g of clusters) {
    if (g === chosen) continue;
    loses.push(
      g.clusterId === null
        ? `${heldBy(g, sources)}: set aside, not recovered by this plan (plan with it alone to recover from it)`
        : `${heldBy(g, sources)}: another cluster, not recovered by this plan (plan it with --cluster-id ${g.clusterId})`,
    );
  }

  const sourceArg = best.s.kind === 'inspect' ? '<the copied data dir>' : best.s.path;
  const command = [
    'lifeboat playbook run recover-from-quorum-loss',
    `--set source=${sourceArg}`,
    '--set data-dir=<new data dir>',
    input.discardUncommitted ? '--set discard-uncommitted=true' : '',
    bump.lastRevision !== undefined ? `--set last-revision=${bump.lastRevision}` : '',
    '--set members=<name=peerURL,clientURL,...>',
  ]
    .filter(Boolean)
    .join(' ');
  return {
    sources,
    clusters,
    clusterId: chosen.clusterId,
    recommended: best.i,
    why,
    keeps,
    loses,
    warnings,
    discardUncommitted: input.discardUncommitted,
    command,
    compared,
    ...(bump.line ? { revisionBump: bump.line } : {}),
    ...(bump.lastRevision !== undefined ? { lastRevision: bump.lastRevision } : {}),
    ...(backupSetAside ? { backupSetAside } : {}),
  };
}

const seconds = (from?: string, to?: string): string => {
  if (!from || !to) return '';
  const s = Math.round((Date.parse(to) - Date.parse(from)) / 1000);
  return s > 0 ? `, about ${formatAge(s)} of writes` : '';
};

/** Each backup point against each other source of the cluster: which holds more, and what each choice loses. */
function compareBackups(usable: Indexed[], best: Indexed): string[] {
  const out: string[] = [];
  for (const { s: b } of usable.filter(({ s }) => s.backup)) {
    for (const { s: o } of usable.filter(({ s }) => !s.backup)) {
      const bp = b.backup!;
      const rb = bp.revision;
      const ro = revisionOf(o);
      const oTime = o.report?.lastWrite ?? o.snapshotTakenAt;
      const what = `${o.kind} ${o.path}`;
      if (ro > rb)
        out.push(
          `${what} holds more (revision ${ro}) than the backup ${b.path} (revision ${rb}): choosing the backup loses revisions ${rb + 1}..${ro} (${ro - rb} revisions${seconds(bp.seenAt, oTime)}); choosing ${o.path} loses nothing the backup holds`,
        );
      else if (rb > ro)
        out.push(
          `the backup ${b.path} holds more (revision ${rb}) than ${what} (revision ${ro}): choosing ${o.path} loses revisions ${ro + 1}..${rb} (${rb - ro} revisions${seconds(oTime, bp.seenAt)}); choosing the backup loses nothing ${o.path} holds`,
        );
      else out.push(`the backup ${b.path} and ${what} hold the same revision (${rb}): either choice loses nothing the other holds`);
    }
  }
  if (out.length > 0) out.push(`recommended: ${best.s.path}`);
  return out;
}

/**
 * The bump the recovery makes from the recommended source (a snapshot or a backup
 * point), from the cluster's last recorded revision: the store's, and any survivor's
 * of the same cluster (the recovery's `last-revision`).
 */
function bumpOf(best: PlanSource, usable: Indexed[]): { line?: string; lastRevision?: number } {
  if (best.report) return {};
  const survivors = usable.filter(({ s }) => s.report).map(({ s }) => s.report!.kvRevision);
  const survivor = Math.max(0, ...survivors);
  const stored = best.backup?.lastRevision ?? 0;
  const last = Math.max(survivor, stored);
  const sourceRevision = revisionOf(best);
  const runtime = best.backup?.runtime ?? (best.snapshot?.format === 'etcd' ? 'etcd' : 'lifeboat');
  let markCompacted = runtime === 'lifeboat';
  if (!markCompacted) {
    try {
      markCompacted = etcdRestoreMarksCompacted();
    } catch {
      markCompacted = false;
    }
  }
  const lastRevision = survivor > sourceRevision ? survivor : undefined;
  try {
    const plan = planRevisionBump({
      sourceRevision,
      lastRevision: last,
      lastFrom: stored >= survivor ? 'in the backup store' : 'a survivor',
      markCompacted,
    });
    return { line: plan.line, ...(lastRevision !== undefined ? { lastRevision } : {}) };
  } catch (e) {
    return { line: (e as Error).message, ...(lastRevision !== undefined ? { lastRevision } : {}) };
  }
}

/** A source's lines in the text form; `mark` is '*' for the recommended one. */
function sourceLines(s: PlanSource, mark: string): string[] {
  if (s.error) return [`${mark} ${s.kind} ${s.path}: unusable (${s.error})`];
  if (s.report) {
    const r = s.report;
    const u = r.uncommitted;
    const kinds = Object.entries(u.kinds ?? {})
      .map(([k, n]) => `${n} ${k}`)
      .join(', ');
    return [
      `${mark} ${s.kind} ${s.path}${r.runtime === 'etcd' ? ' (etcd)' : ''}`,
      `    cluster ${r.clusterId} member ${r.memberId}; voters ${r.voters.length}, learners ${r.learners.length}`,
      `    last term ${r.lastTerm}, last index ${r.lastIndex}, commit ${r.commitIndex}, applied ${r.appliedIndex}`,
      `    kv revision ${r.kvRevision}, ${r.keyCount} keys, hash ${r.hash}; last write ${r.lastWrite ?? 'unknown'}`,
      `    past commit: ${u.count === 0 ? 'none' : `${u.count} entries (${u.from}..${u.to})${kinds ? `: ${kinds}` : ''}`}`,
      `    snapshot age ${ageText(s)}`,
    ];
  }
  if (s.backup) {
    const b = s.backup;
    return [
      `${mark} backup ${s.path} (${b.runtime})`,
      `    cluster ${b.clusterId}; revision ${b.revision}${b.seenAt ? ` (seen ${b.seenAt})` : ''}; the store holds up to ${b.lastRevision}`,
    ];
  }
  const t = s.snapshot!;
  return [
    `${mark} snapshot ${s.path}`,
    `    cluster ${t.clusterId === '0' ? 'unknown' : t.clusterId}; revision ${t.revision}, ${t.totalKeys} keys, applied index ${t.appliedIndex}`,
    `    snapshot age ${ageText(s)}`,
  ];
}

function groupName(g: PlanCluster): string {
  return g.clusterId === null ? 'unknown cluster' : `cluster ${g.clusterId}${g.recoveredFrom ? ` (recovered from ${g.recoveredFrom})` : ''}`;
}

/**
 * "Sources:", grouped by cluster when they span more than one (unusable sources
 * last), each group headed by its cluster and whether this plan recovers it.
 */
function sourcesText(sources: PlanSource[], clusters: PlanCluster[], chosen: PlanCluster | undefined, recommended: number | undefined): string[] {
  const mark = (i: number) => (i === recommended ? '*' : ' ');
  if (clusters.length <= 1) return ['Sources:', ...sources.flatMap((s, i) => sourceLines(s, mark(i)))];
  const lines = ['Sources, by cluster:'];
  for (const g of clusters) {
    const state = chosen === undefined ? '' : g === chosen ? ', recovered by this plan' : ', not recovered by this plan';
    lines.push(
      `${groupName(g)} (${g.sources.length} source${g.sources.length > 1 ? 's' : ''}${state}):`,
      ...g.sources.flatMap((i) => sourceLines(sources[i], mark(i))),
    );
  }
  const unusable = sources.flatMap((s, i) => (s.error ? sourceLines(s, mark(i)) : []));
  if (unusable.length > 0) lines.push('unusable:', ...unusable);
  return lines;
}

/** The first line when the sources span clusters: which they are, and which one this plan recovers. */
function clustersHeadline(clusters: PlanCluster[], sources: PlanSource[], chosen: PlanCluster | undefined): string {
  const known = clusters.filter((g) => g.clusterId !== null);
  const unknown = clusters.length - known.length;
  const parts = [
    ...known.map((g) => `${g.clusterId} (${g.sources.length} source${g.sources.length > 1 ? 's' : ''}, ${g.keys} keys)`),
    ...(unknown > 0 ? [`${unknown} source${unknown > 1 ? 's' : ''} of unknown cluster`] : []),
  ];
  const head =
    known.length > 1
      ? `These sources are from ${known.length} different clusters: ${parts.join(', ')}.`
      : `These sources may be from different clusters: ${parts.join(', ')}.`;
  if (!chosen)
    return known.length > 1
      ? `${head} A plan recovers one cluster: none is recommended until you name it (--cluster-id ID).`
      : `${head} None is recommended: plan with the one you mean alone.`;
  const what = chosen.clusterId === null ? sources[chosen.best].path : `cluster ${chosen.clusterId}`;
  return `${head} This plan recovers ${what} only, from its own sources; the others are not recovered (see Lost).`;
}

export function formatPlan(p: RecoveryPlan): string {
  const chosen = p.clusters.find((g) => g.sources.includes(p.recommended));
  const lines: string[] = [];
  if (p.clusters.length > 1) lines.push(clustersHeadline(p.clusters, p.sources, chosen), '');
  lines.push(...sourcesText(p.sources, p.clusters, chosen, p.recommended));
  lines.push('', `Recommended: ${p.sources[p.recommended].path}`, `  because ${p.why}`, 'Kept:', ...p.keeps.map((k) => `  - ${k}`));
  lines.push('Lost:', ...(p.loses.length ? p.loses.map((l) => `  - ${l}`) : ['  - nothing the sources hold']));
  if (p.compared.length) lines.push('Compared:', ...p.compared.map((c) => `  - ${c}`));
  if (p.revisionBump) lines.push(`Revision bump: ${p.revisionBump.replace(/^revision: /, '')}`);
  if (p.warnings.length) lines.push('Warnings:', ...p.warnings.map((w) => `  ! ${w}`));
  lines.push('', 'Apply it with:', `  ${p.command}`);
  return lines.join('\n');
}

/** The text form of a refused plan: the clusters first, their sources, and what each choice loses. */
export function formatOverview(o: PlanOverview): string {
  const lines = [clustersHeadline(o.clusters, o.sources, undefined), '', ...sourcesText(o.sources, o.clusters, undefined, undefined)];
  if (o.lostByChoice.length) lines.push('', 'Lost, by choice:', ...o.lostByChoice.map((l) => `  - ${l}`));
  if (o.warnings.length) lines.push('Warnings:', ...o.warnings.map((w) => `  ! ${w}`));
  return lines.join('\n');
}
