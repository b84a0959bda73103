// `lifeboat drill`: prove a backup restores, and measure how long recovery takes.
// Take a snapshot of the live cluster (or use a given file), restore it into a
// scratch cluster of the same runtime on loopback ports (one member, or more
// re-added as learners and promoted as recovery does), verify it against the
// source at the snapshot's revision (dataCheck.ts), check it takes a write and its
// members are healthy, time each phase, and tear the scratch cluster down.
//
// Each phase is a step (steps.ts), recorded by the playbook engine's RunRecorder
// as a playbook run's steps are, in a run of kind `drill` (audit/drillRuns.ts)
// that ends with a `drill-result` event: the RTO breakdown and the checks.
// Unlike a playbook, a drill goes on past a failed data or member check (each is
// a result) and always tears down what it started.
//
// The source cluster only ever sees reads: Status, MemberList, Alarm GET, the
// snapshot stream, Range (counts and sampled keys) and HashKV. Nothing here
// writes to it or changes its membership.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AuditLog } from '../audit/journal.js';
import { resolveAuditDbPath } from '../audit/location.js';
import { DRILL_PLAYBOOK, DRILL_RESULT_EVENT, type DrillCheck, type DrillPhase, type DrillSummary } from '../audit/drillRuns.js';
import type { ConnectionOptions } from '../client/etcdClient.js';
import { InputError } from '../common/errors.js';
import { etcdBinary, runtimeOfVersion, type RuntimeChoice } from '../ops/runtime.js';
import { RunRecorder, StepFailedError } from '../playbook/runRecorder.js';
import type { StepUi } from '../playbook/runView.js';
import { snapshotKind } from '../recovery/snapshotFormat.js';
import type { DataCheck } from './dataCheck.js';
import { checkPrometheusPath, previousLastSuccess, prometheusText, writePrometheusFile } from './prometheusFile.js';
import { ScratchCluster } from './scratchCluster.js';
import { sourceState, type SourceState } from './sourceState.js';
import { CheckFailed, drillSteps, snapshotKeys, type DrillState, type DrillStep } from './steps.js';

export type { SourceState } from './sourceState.js';

export const MAX_DRILL_MEMBERS = 5;

export interface DrillOptions {
  endpoints: string[];
  conn: ConnectionOptions;
  /** restore this file instead of taking a snapshot */
  fromSnapshot?: string;
  /** scratch cluster size (default 1) */
  members: number;
  runtime: RuntimeChoice;
  etcdBin?: string;
  /** leave the scratch cluster running */
  keep: boolean;
  /** where the scratch data dirs and snapshot go (default: a new temp dir) */
  scratchDir?: string;
  /** scratch members listen from this loopback port up (default: ports the OS picks) */
  portsFrom?: number;
  /** how long a learner must stay caught up before it is promoted (recovery's default: 5s) */
  stabilizationMs: number;
  /** keys compared one by one when HashKV cannot be (default 1000) */
  sampleSize: number;
  reason: string;
  auditDb?: string;
  /** write the result for node_exporter's textfile collector here */
  prometheus?: string;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface DrillResult extends DrillSummary {
  runId: string;
  auditDb: string;
  auditHead: string;
  outcome: 'succeeded' | 'failed' | 'interrupted';
  source: { before: SourceState | null; after: SourceState | null; unchanged: boolean | null; notes: string[] };
  /** the snapshot file restored, or the one given (also when it failed its check) */
  snapshotFile: string | null;
  snapshot: { file: string; given: boolean; format: 'lifeboat' | 'etcd'; revision: number; keys: number; size: number; sha256: string } | null;
  scratch: {
    dir: string;
    logDir: string;
    clusterId: string | null;
    members: Array<{ name: string; id: string | null; clientUrl: string; peerUrl: string; pid: number | null }>;
    kept: boolean;
  };
  data: DataCheck | null;
  warnings: string[];
  prometheusFile: string | null;
}

/** Bad flags and files: one line each, exit 2, before anything is started or recorded. */
export function checkDrillOptions(o: DrillOptions): void {
  if (o.endpoints.length === 0) throw new InputError('--endpoints is empty: give the client URLs of the cluster to drill, e.g. 10.0.0.1:2379');
  if (!Number.isInteger(o.members) || o.members < 1 || o.members > MAX_DRILL_MEMBERS)
    throw new InputError(`--members ${o.members}: give a whole number from 1 to ${MAX_DRILL_MEMBERS} (the scratch cluster's size)`);
  if (!Number.isInteger(o.sampleSize) || o.sampleSize < 1) throw new InputError(`--sample ${o.sampleSize}: give a whole number of keys, at least 1`);
  if (o.portsFrom !== undefined && (!Number.isInteger(o.portsFrom) || o.portsFrom < 1024 || o.portsFrom > 65000))
    throw new InputError(`--ports-from ${o.portsFrom}: give a port from 1024 to 65000`);
  if (o.fromSnapshot !== undefined) {
    const f = o.fromSnapshot;
    if (!fs.existsSync(f)) throw new InputError(`snapshot ${f} does not exist; check the path given to --from-snapshot`);
    if (fs.statSync(f).isDirectory())
      throw new InputError(`--from-snapshot ${f} is a directory; give a snapshot file (from 'lifeboat snapshot save' or 'etcdctl snapshot save')`);
    const kind = snapshotKind(f);
    if (kind.format === 'unknown')
      throw new InputError(
        `${f} is not a snapshot lifeboat can read (${kind.detail}); give a file saved by 'lifeboat snapshot save' or 'etcdctl snapshot save'`,
      );
    // A truncated copy has no trailer either: it is not refused here as a raw member/snap/db but fails
    // the verify-snapshot step, which says so and is recorded (a nightly drill on a cut-off backup fails).
    if (kind.format === 'etcd' && !kind.hasTrailer && kind.truncated === undefined)
      throw new InputError(
        `${f} is an etcd database without a sha256 trailer (a raw member/snap/db?); a drill restores snapshots: give one saved by 'etcdctl snapshot save' or 'lifeboat snapshot save'`,
      );
    if (kind.format === 'lifeboat' && o.runtime === 'etcd')
      throw new InputError(`--runtime etcd: ${f} is a Lifeboat snapshot, which only a Lifeboat member can restore; leave out --runtime`);
  }
  if (o.scratchDir !== undefined && fs.existsSync(o.scratchDir) && (!fs.statSync(o.scratchDir).isDirectory() || fs.readdirSync(o.scratchDir).length > 0))
    throw new InputError(`--scratch-dir ${o.scratchDir} is not an empty directory; give a new or empty one (the drill removes what it makes there)`);
  if (o.prometheus !== undefined) checkPrometheusPath(o.prometheus);
  if (o.runtime === 'etcd') etcdBinary(o.etcdBin);
}

/** What an earlier step found (it succeeded, so it did). */
function known<T>(v: T | null, what: string): T {
  if (v === null) throw new Error(`${what} was not read`);
  return v;
}

function seconds(ms: number): number {
  return Math.round(ms) / 1000;
}

/** Runs the drill; a check that fails is a result (passed false), bad input an InputError thrown before anything starts. */
export async function runDrill(o: DrillOptions): Promise<DrillResult> {
  checkDrillOptions(o);
  const say = (line: string) => o.onProgress?.(line);
  const auditPath = resolveAuditDbPath(o.auditDb);
  const audit = AuditLog.open(auditPath);
  const rec = new RunRecorder({ audit, connection: o.conn, yes: false, interactive: false, signal: o.signal ?? new AbortController().signal });
  const runId = rec.startRun({
    playbook: DRILL_PLAYBOOK,
    reason: o.reason,
    variables: {
      endpoints: o.endpoints.join(','),
      members: o.members,
      runtime: o.runtime,
      ...(o.fromSnapshot ? { 'from-snapshot': path.resolve(o.fromSnapshot) } : {}),
      keep: o.keep,
      stabilization: `${o.stabilizationMs}ms`,
    },
  });
  const logDir = rec.runDir;
  const madeDir = o.scratchDir === undefined || !fs.existsSync(o.scratchDir);
  const dir = o.scratchDir === undefined ? fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-drill-')) : path.resolve(o.scratchDir);
  fs.mkdirSync(dir, { recursive: true });
  say(`drill ${runId}: scratch dir ${dir}, member logs in ${logDir}`);

  const phases: DrillPhase[] = [];
  const checks: DrillCheck[] = [];
  const failures: string[] = [];
  const warnings: string[] = [];
  const conn = rec.connection;
  const d: DrillState = {
    runId,
    conn,
    // The scratch cluster is private (loopback, no TLS), but it keeps the snapshot's
    // auth: it is logged in to as the source is, with the operator's credentials.
    scratchConn: { dialTimeoutMs: 2000, commandTimeoutMs: 10_000, ...(conn.credentials ? { credentials: conn.credentials } : {}) },
    ...(o.etcdBin ? { etcdBin: o.etcdBin } : {}),
    sampleSize: o.sampleSize,
    given: !!o.fromSnapshot,
    dir,
    madeDir,
    warnings,
    checks,
    check(name, ok, detail) {
      checks.push({ name, ok, detail });
      if (!ok) failures.push(`${name}: ${detail}`);
      say(`${ok ? 'ok  ' : 'FAIL'} ${name}: ${detail}`);
    },
    before: null,
    status: null,
    sourceAt: null,
    runtime: o.runtime === 'auto' ? 'lifeboat' : o.runtime,
    scratch: undefined,
    restored: null,
    data: null,
  };
  const S = drillSteps(d);
  const ui: StepUi = {
    setTitle: () => undefined,
    progress: say,
    event: (kind, message) => (kind === 'warning' ? say(`warning: ${message}`) : undefined),
    ask: () => Promise.reject(new Error('a drill asks nothing')),
    reuseRecorded: () => undefined,
  };
  let ordinal = 0;
  /** One phase as one step of the run: its outputs and how long it took. */
  const step = (def: DrillStep, params: Record<string, unknown>, stepId = def.type.replace(/^drill-/, '')) =>
    rec.step({ ordinal: ++ordinal, stepId, title: def.title(params), type: def.type, inputs: params, run: (ctx) => def.run(params, ctx) }, ui);
  const phase = (name: string, label: string, ms: number) => phases.push({ phase: name, label, seconds: seconds(ms) });
  /** What a step threw (a StepFailedError carries it). */
  const cause = (e: unknown): Error => (e instanceof StepFailedError ? e.error : (e as Error));

  let snapshot: DrillResult['snapshot'] = null;
  let interrupted = false;
  try {
    // --- the source, as it is before the drill
    await step(S.source, { endpoints: o.endpoints });
    const before = known(d.before, 'the source');
    const sourceRuntime = runtimeOfVersion(before.version);
    say(
      `source: ${sourceRuntime} ${before.version} at ${before.endpoint}, cluster ${before.clusterId}, ${before.memberIds.length} members, revision ${before.revision}`,
    );

    // --- the snapshot: taken now, or the given file
    const file = o.fromSnapshot ? path.resolve(o.fromSnapshot) : path.join(dir, 'snapshot.db');
    if (!o.fromSnapshot) {
      const saved = await step(S.snapshot, { endpoint: before.endpoint, file });
      phase('snapshot', 'snapshot', saved.ms);
      say(`snapshot: ${String(saved.outputs.size)} bytes from ${before.endpoint} in ${seconds(saved.ms)}s`);
    }
    await step(S.verifySnapshot, { file });
    const st = known(d.status, "the snapshot's status");
    snapshot = { file, given: d.given, format: st.format, revision: st.revision, keys: snapshotKeys(st), size: fs.statSync(file).size, sha256: st.sha256 };
    d.runtime = st.format === 'lifeboat' ? 'lifeboat' : o.runtime === 'lifeboat' ? 'lifeboat' : 'etcd';
    if (d.runtime === 'etcd') etcdBinary(o.etcdBin);
    if (!o.fromSnapshot && d.runtime !== sourceRuntime) warnings.push(`the source runs ${sourceRuntime}, the scratch cluster ${d.runtime}`);

    // --- the source at the snapshot's revision, while it still has it
    await step(S.sourceAtRevision, { endpoint: before.endpoint, revision: st.revision });

    // --- restore
    const sc = await ScratchCluster.plan({
      runtime: d.runtime,
      dir,
      logDir,
      size: o.members,
      ...(o.portsFrom !== undefined ? { portsFrom: o.portsFrom } : {}),
      ...(o.etcdBin ? { etcdBin: o.etcdBin } : {}),
      conn: d.scratchConn,
      ...(o.signal ? { signal: o.signal } : {}),
    });
    d.scratch = sc;
    const first = sc.first;
    const restored = await step(S.restore, { file, dataDir: first.dataDir, runtime: d.runtime, peerUrl: first.peerUrl });
    phase('restore', 'restore', restored.ms);
    say(`restore: ${String(restored.outputs.keys)} keys at revision ${String(restored.outputs.revision)} into ${first.dataDir} in ${seconds(restored.ms)}s`);

    // --- start, and the first write
    const started = await step(S.start, { clientUrl: first.clientUrl, peerUrl: first.peerUrl });
    const wrote = await step(S.firstWrite, { endpoints: sc.endpoints() });
    phase('first-write', 'start to first write', started.ms + wrote.ms);

    // --- the other members, one at a time, as recovery re-adds them
    for (const m of sc.members.slice(1)) {
      const added = await step(S.member, { name: m.name, peerUrl: m.peerUrl, clientUrl: m.clientUrl, stabilizationMs: o.stabilizationMs }, `member:${m.name}`);
      phase(`member:${m.name}`, `${m.name} caught up`, added.ms);
      say(`${m.name}: learner ${String(added.outputs.id)} caught up and promoted in ${seconds(added.ms)}s`);
    }

    // --- the data against the source, and the members' health: each a result, recorded as a check
    await step(S.verifyData, { revision: st.revision }).catch(() => undefined);
    await step(S.checkMembers, { endpoints: sc.endpoints(), voters: o.members }).catch(() => undefined);
  } catch (err) {
    const e = cause(err);
    if (o.signal?.aborted) {
      interrupted = true;
      failures.push('interrupted');
    } else if (!(e instanceof CheckFailed)) failures.push(e.message);
    if (!(e instanceof CheckFailed)) say(`FAIL ${e.message}`);
  }

  // --- the scratch cluster: down, unless kept
  const scratch = d.scratch;
  const members =
    scratch?.members.map((m) => ({ name: m.name, id: m.id ?? null, clientUrl: m.clientUrl, peerUrl: m.peerUrl, pid: m.started ? (m.pid ?? null) : null })) ??
    [];
  const keep = o.keep && !interrupted && scratch !== undefined && scratch.endpoints().length > 0;
  if (!keep) {
    await step(S.teardown, { dir }).catch((e: unknown) => warnings.push(`teardown: ${cause(e).message}`));
    for (const m of members) m.pid = null;
  }

  // --- the source, after: only reads were sent, so nothing of its own may have changed
  const before = d.before;
  let after: SourceState | null = null;
  const notes: string[] = [];
  try {
    after = await sourceState(o.endpoints, conn, before?.endpoint);
  } catch (e) {
    notes.push(`could not read the source after the drill: ${(e as Error).message}`);
  }
  let unchanged: boolean | null = null;
  if (before && after) {
    unchanged = before.membership.join() === after.membership.join() && before.alarms.join() === after.alarms.join() && before.clusterId === after.clusterId;
    if (!unchanged)
      notes.push(`the source's membership or alarms changed during the drill (not by it): ${before.membership.join(',')} → ${after.membership.join(',')}`);
    if (after.revision !== before.revision) notes.push(`the source's revision moved from ${before.revision} to ${after.revision} (its own clients' writes)`);
    for (const n of notes) warnings.push(n);
  }

  const passed = failures.length === 0 && checks.length > 0 && checks.every((c) => c.ok);
  const summary = summarize(passed, d, o.members, snapshot, phases, failures);
  const message = passed
    ? `drill passed: writable after ${summary.writableSeconds}s, every member caught up after ${summary.totalSeconds}s`
    : `drill failed: ${failures.join('; ')}`;
  rec.event({ kind: DRILL_RESULT_EVENT, message, data: { ...summary } });
  const outcome = interrupted ? 'interrupted' : passed ? 'succeeded' : 'failed';
  const head = rec.finishRun(
    outcome,
    passed ? undefined : failures.join('; ') || 'a check failed',
    after ? { clusterIdAfter: after.clusterId, memberIdsAfter: after.memberIds } : {},
  );
  audit.close();

  let prometheusFile: string | null = null;
  if (o.prometheus) {
    try {
      writePrometheusFile(o.prometheus, prometheusText(summary, new Date(), previousLastSuccess(o.prometheus)));
      prometheusFile = path.resolve(o.prometheus);
    } catch (e) {
      warnings.push((e as Error).message);
    }
  }

  return {
    ...summary,
    runId,
    auditDb: auditPath,
    auditHead: head,
    outcome,
    source: { before, after, unchanged, notes },
    snapshotFile: snapshot?.file ?? (o.fromSnapshot ? path.resolve(o.fromSnapshot) : null),
    snapshot,
    scratch: { dir, logDir, clusterId: d.restored?.clusterId ?? null, members, kept: keep },
    data: d.data,
    warnings,
    prometheusFile,
  };
}

/** The drill's result as its `drill-result` event keeps it: the verdict, the RTO per phase and in all, the checks. */
function summarize(passed: boolean, d: DrillState, size: number, snapshot: DrillResult['snapshot'], phases: DrillPhase[], failures: string[]): DrillSummary {
  const phaseSum = (ps: DrillPhase[]) => seconds(ps.reduce((a, p) => a + p.seconds * 1000, 0));
  const writable = phases.some((p) => p.phase === 'first-write') ? phaseSum(phases.filter((p) => !p.phase.startsWith('member:'))) : null;
  const allMembers = phases.filter((p) => p.phase.startsWith('member:')).length === size - 1;
  return {
    passed,
    runtime: d.runtime,
    members: size,
    snapshotRevision: snapshot?.revision ?? null,
    keys: snapshot?.keys ?? null,
    comparison: d.data?.method ?? null,
    phases,
    writableSeconds: writable,
    totalSeconds: writable !== null && allMembers ? phaseSum(phases) : null,
    checks: d.checks,
    failures,
  };
}
