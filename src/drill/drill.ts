// `lifeboat drill`: prove a backup restores, and measure how long recovery takes.
// Take a snapshot of the live cluster (or use a given file), restore it into a
// scratch cluster of the same runtime on loopback ports (one member, or more
// re-added as learners and promoted as recovery does), verify it against the
// source at the snapshot's revision (dataCheck.ts), check it takes a write and its
// members are healthy, time each phase, record it all as a `drill` run in the
// audit log, and tear the scratch cluster down.
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
import type { StepRef } from '../audit/types.js';
import { clientFor, type ConnectionOptions } from '../client/etcdClient.js';
import { isAuthRefusal } from '../client/errors.js';
import { saveSnapshot } from '../client/snapshotSave.js';
import { resolveTarget } from '../client/target.js';
import { InputError } from '../common/errors.js';
import type { RuntimeName } from '../common/memberCommand.js';
import { checkCluster, statusOf } from '../ops/memberOps.js';
import { etcdBinary, runtimeOfVersion, type RuntimeChoice } from '../ops/runtime.js';
import { restoreEtcdSnapshotFile } from '../recovery/etcdRestore.js';
import { restoreSnapshot } from '../recovery/restore.js';
import { snapshotKind, snapshotStatus } from '../recovery/snapshotFormat.js';
import { checkData, readSourceAt, type DataCheck, type SourceAtRevision } from './dataCheck.js';
import { checkPrometheusPath, previousLastSuccess, prometheusText, writePrometheusFile } from './prometheusFile.js';
import { ScratchCluster } from './scratchCluster.js';
import { monotonicMs } from '../common/clock.js';

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

export interface SourceState {
  endpoint: string;
  version: string;
  clusterId: string;
  memberIds: string[];
  /** `id:learner` or `id:voter`, sorted: what must not change */
  membership: string[];
  alarms: string[];
  revision: number;
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

/** What to give when a cluster refuses the drill's credentials (the drill snapshots, hashes and adds members: root's role). */
const AUTH_HINTS = {
  'the source cluster': 'give --user and the password of a user of the source with the root role, e.g. --user root',
  'the restored cluster':
    "it keeps the snapshot's users, roles and passwords as they were when it was saved: give --user and the password of one of them with the root role, e.g. --user root",
} as const;

/**
 * An auth refusal said as what it is: which cluster refused, which user (never the
 * password), and what to give; any other error as it is.
 */
function explainAuth(e: unknown, cluster: keyof typeof AUTH_HINTS, conn: ConnectionOptions): unknown {
  if (!isAuthRefusal(e)) return e;
  const user = conn.credentials?.user;
  const refused = user ? `rejected user ${user}` : 'the drill gave no user';
  return new Error(`${cluster} has auth enabled and ${refused} (${e.serverMessage}); ${AUTH_HINTS[cluster]}`);
}

async function sourceState(endpoints: string[], conn: ConnectionOptions, preferred?: string): Promise<SourceState> {
  let last: unknown;
  for (const ep of preferred ? [preferred, ...endpoints.filter((e) => e !== preferred)] : endpoints) {
    try {
      const status = await statusOf(ep, conn);
      const c = clientFor([ep], conn);
      try {
        const members = (await c.memberList()).members;
        const alarms = (await c.alarmList()).alarms;
        return {
          endpoint: ep,
          version: status.version,
          clusterId: status.header.clusterId.toString(16),
          memberIds: members.map((m) => m.id.toString(16)),
          membership: members.map((m) => `${m.id.toString(16)}:${m.isLearner ? 'learner' : 'voter'}`).sort(),
          alarms: alarms.map((a) => `${a.memberId.toString(16)}:${a.alarm}`).sort(),
          revision: status.header.revision,
        };
      } finally {
        c.close();
      }
    } catch (e) {
      // Every member has the same users: a refusal is the answer, not one member's trouble.
      if (isAuthRefusal(e)) throw explainAuth(e, 'the source cluster', conn);
      last = e;
    }
  }
  throw new Error(`no member of the source answered at ${endpoints.join(', ')}: ${(last as Error | undefined)?.message ?? 'no endpoints'}`);
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
  const run = audit.startRun({
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
  const runId = run.id;
  const logDir = path.join(path.dirname(auditPath), 'runs', runId);
  fs.mkdirSync(logDir, { recursive: true });
  const madeDir = o.scratchDir === undefined || !fs.existsSync(o.scratchDir);
  const dir = o.scratchDir === undefined ? fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-drill-')) : path.resolve(o.scratchDir);
  fs.mkdirSync(dir, { recursive: true });
  say(`drill ${runId}: scratch dir ${dir}, member logs in ${logDir}`);

  const phases: DrillPhase[] = [];
  const checks: DrillCheck[] = [];
  const failures: string[] = [];
  const warnings: string[] = [];
  const check = (name: string, ok: boolean, detail: string) => {
    checks.push({ name, ok, detail });
    if (!ok) failures.push(`${name}: ${detail}`);
    say(`${ok ? 'ok  ' : 'FAIL'} ${name}: ${detail}`);
  };
  let ordinal = 0;
  /** One phase as one audit step: started, then ended with its outputs or its error. */
  const step = async <T>(stepId: string, name: string, inputs: Record<string, unknown>, fn: (ref: StepRef) => Promise<T>, outputs?: (t: T) => unknown) => {
    const ref = audit.startStep(runId, { ordinal: ++ordinal, stepId, name, type: `drill-${stepId.replace(/:.*$/, '')}`, inputs });
    const t0 = monotonicMs();
    try {
      const r = await fn(ref);
      audit.finishStep(ref, { status: 'succeeded', outputs: outputs ? outputs(r) : {} });
      return { value: r, ms: monotonicMs() - t0 };
    } catch (e) {
      audit.finishStep(ref, { status: 'failed', error: e as Error });
      throw e;
    }
  };

  let before: SourceState | null = null;
  let after: SourceState | null = null;
  let snapshot: DrillResult['snapshot'] = null;
  let data: DataCheck | null = null;
  let runtime: RuntimeName = o.runtime === 'auto' ? 'lifeboat' : o.runtime;
  let scratch: ScratchCluster | undefined;
  let scratchClusterId: string | null = null;
  let interrupted = false;
  // The scratch cluster is private (loopback, no TLS), but it keeps the snapshot's
  // auth: it is logged in to as the source is, with the operator's credentials.
  const scratchConn: ConnectionOptions = { dialTimeoutMs: 2000, commandTimeoutMs: 10_000, ...(o.conn.credentials ? { credentials: o.conn.credentials } : {}) };
  const restoredAuth = (e: unknown) => explainAuth(e, 'the restored cluster', scratchConn);

  try {
    // --- the source, as it is before the drill
    before = (
      await step(
        'source',
        'Read the source cluster (status, members, alarms)',
        { endpoints: o.endpoints },
        () => sourceState(o.endpoints, o.conn),
        (s) => s,
      )
    ).value;
    const source = before;
    audit.updateRun(runId, { clusterIdBefore: source.clusterId, memberIdsBefore: source.memberIds });
    const sourceRuntime = runtimeOfVersion(before.version);
    say(
      `source: ${sourceRuntime} ${before.version} at ${before.endpoint}, cluster ${before.clusterId}, ${before.memberIds.length} members, revision ${before.revision}`,
    );

    // --- the snapshot: taken now, or the given file
    let file: string;
    if (o.fromSnapshot) {
      file = path.resolve(o.fromSnapshot);
    } else {
      file = path.join(dir, 'snapshot.db');
      const src = before;
      const saved = await step(
        'snapshot',
        `Take a snapshot of ${src.endpoint}`,
        { endpoint: src.endpoint },
        () =>
          saveSnapshot(resolveTarget({ ...o.conn, endpoints: [src.endpoint] }), file).catch((e: unknown) => {
            throw explainAuth(e, 'the source cluster', o.conn);
          }),
        (s) => ({ size: s.size, sha256: s.sha256, revision: s.revision, keys: s.keyCount }),
      );
      phases.push({ phase: 'snapshot', label: 'snapshot', seconds: seconds(saved.ms) });
      say(`snapshot: ${saved.value.size} bytes from ${src.endpoint} in ${seconds(saved.ms)}s`);
    }
    const status = await step(
      'verify-snapshot',
      'Verify the snapshot (sha256) and read its revision',
      { file },
      () => snapshotStatus(file),
      (s) => ({ format: s.format, revision: s.revision, keys: s.etcd?.liveKeys ?? s.totalKeys, sha256: s.sha256 }),
    ).catch((e: Error) => {
      check('snapshot', false, e.message);
      throw new CheckFailed();
    });
    const st = status.value;
    if (st.format === 'etcd' && st.etcd?.trailer === 'mismatch') {
      check('snapshot', false, `${file}: its sha256 trailer (${st.etcd.storedSha256 ?? '?'}) does not match its contents (${st.sha256}); save a new one`);
      throw new CheckFailed();
    }
    // Restore keeps the snapshot's auth: without a user, the scratch cluster would refuse every read.
    if (st.authEnabled && !scratchConn.credentials)
      throw new Error(`${file} has auth enabled, and so will the restored cluster: ${AUTH_HINTS['the restored cluster']}`);
    const keys = st.etcd?.liveKeys ?? st.totalKeys;
    snapshot = { file, given: !!o.fromSnapshot, format: st.format, revision: st.revision, keys, size: fs.statSync(file).size, sha256: st.sha256 };
    check(
      'snapshot',
      true,
      `${st.format} snapshot${st.format === 'etcd' && st.etcd?.trailer === 'absent' ? ' (no sha256 trailer)' : ', sha256 verified'}: revision ${st.revision}, ${keys} keys`,
    );
    runtime = st.format === 'lifeboat' ? 'lifeboat' : o.runtime === 'lifeboat' ? 'lifeboat' : 'etcd';
    if (runtime === 'etcd') etcdBinary(o.etcdBin);
    if (!o.fromSnapshot && runtime !== sourceRuntime) warnings.push(`the source runs ${sourceRuntime}, the scratch cluster ${runtime}`);

    // --- the source at the snapshot's revision, while it still has it
    const sourceAt: SourceAtRevision = (
      await step(
        'source-at-revision',
        `Read the source's key count and HashKV at revision ${st.revision}`,
        { endpoint: before.endpoint, revision: st.revision },
        () => readSourceAt(source.endpoint, o.conn, st.revision),
        (s) => s,
      )
    ).value;

    // --- restore
    scratch = await ScratchCluster.plan({
      runtime,
      dir,
      logDir,
      size: o.members,
      ...(o.portsFrom !== undefined ? { portsFrom: o.portsFrom } : {}),
      ...(o.etcdBin ? { etcdBin: o.etcdBin } : {}),
      conn: scratchConn,
      ...(o.signal ? { signal: o.signal } : {}),
    });
    const sc = scratch;
    const first = sc.first;
    const restored = await step(
      'restore',
      `Restore the snapshot into ${first.dataDir} (${runtime})`,
      { file, dataDir: first.dataDir, runtime, peerUrl: first.peerUrl },
      async (): Promise<{ clusterId: string; memberId: string; token?: string; revision: number; keys: number }> => {
        const opts = { dataDir: first.dataDir, name: first.name, initialAdvertisePeerUrls: [first.peerUrl] };
        if (runtime === 'etcd') {
          const r = await restoreEtcdSnapshotFile(file, { ...opts, ...(o.etcdBin ? { etcdBin: o.etcdBin } : {}), onWarning: (w) => warnings.push(w) });
          return { clusterId: r.clusterId, memberId: r.memberId, token: r.initialClusterToken, revision: r.revision, keys: r.keys };
        }
        const r = await restoreSnapshot(file, opts);
        return { clusterId: r.clusterId, memberId: r.memberId, revision: r.revision, keys: r.keys };
      },
      (r) => r,
    );
    phases.push({ phase: 'restore', label: 'restore', seconds: seconds(restored.ms) });
    scratchClusterId = restored.value.clusterId;
    first.id = restored.value.memberId;
    say(`restore: ${restored.value.keys} keys at revision ${restored.value.revision} into ${first.dataDir} in ${seconds(restored.ms)}s`);

    // --- start, and the first write
    const started = await step(
      'start',
      `Start ${first.name} and wait for a leader`,
      { clientUrl: first.clientUrl, peerUrl: first.peerUrl },
      async () => {
        await sc.start(first, 'new', `${first.name}=${first.peerUrl}`, restored.value.token);
        return sc.waitLeader().catch((e: unknown) => {
          throw restoredAuth(e);
        });
      },
      (leader) => ({ leader, pid: first.pid }),
    );
    const wrote = await step(
      'first-write',
      'Write to the scratch cluster and read it back',
      { endpoints: sc.endpoints() },
      async () => {
        const c = clientFor(sc.endpoints(), scratchConn);
        try {
          const key = `lifeboat-drill/${runId}`;
          const value = `written by lifeboat drill ${runId}`;
          const put = await c.put(key, value);
          const got = await c.range(key);
          if (got.kvs[0]?.value.toString() !== value) throw new Error(`wrote ${key} but read back ${got.kvs[0] ? 'another value' : 'nothing'}`);
          return { key, revision: put.header.revision };
        } catch (e) {
          throw restoredAuth(e);
        } finally {
          c.close();
        }
      },
      (w) => w,
    ).catch((e: Error) => {
      check('write', false, `the scratch cluster did not accept a write: ${e.message}`);
      throw new CheckFailed();
    });
    phases.push({ phase: 'first-write', label: 'start to first write', seconds: seconds(started.ms + wrote.ms) });
    check('write', true, `the scratch cluster accepted a write (${wrote.value.key} at revision ${wrote.value.revision})`);

    // --- the other members, one at a time, as recovery re-adds them
    for (const m of sc.members.slice(1)) {
      const added = await step(
        `member:${m.name}`,
        `Add ${m.name} as a learner, start it, wait until caught up, promote it`,
        { name: m.name, peerUrl: m.peerUrl, clientUrl: m.clientUrl, stabilizationMs: o.stabilizationMs },
        () =>
          sc.addMember(m, o.stabilizationMs).catch((e: unknown) => {
            throw restoredAuth(e);
          }),
        (r) => ({ ...r, pid: m.pid }),
      );
      phases.push({ phase: `member:${m.name}`, label: `${m.name} caught up`, seconds: seconds(added.ms) });
      say(`${m.name}: learner ${added.value.id} caught up and promoted in ${seconds(added.ms)}s`);
    }

    // --- the data, against the source at the snapshot's revision
    await step(
      'verify-data',
      `Compare the key count and KV hash at revision ${st.revision} with the source`,
      { revision: st.revision },
      async () => {
        data = await checkData({
          sourceEndpoint: source.endpoint,
          sourceConn: o.conn,
          scratchEndpoints: sc.endpoints(),
          scratchConn,
          source: sourceAt,
          snapshotKeys: keys,
          sampleSize: o.sampleSize,
        });
        const d = data;
        check(
          'keys',
          d.keys.ok,
          d.keys.ok
            ? `${d.keys.scratch} keys at revision ${d.revision}, as the ${d.keys.against === 'source' ? 'source' : 'snapshot file (the source no longer has that revision)'}`
            : (d.differences.find((x) => x.startsWith('key count')) ?? 'key counts differ'),
        );
        const others = d.differences.filter((x) => !x.startsWith('key count'));
        if (d.method === 'hashkv')
          check(
            'hash',
            others.length === 0,
            others.length === 0
              ? `HashKV at revision ${d.revision} equal on both sides (${(d.hash.scratch ?? 0).toString(16)}, compact revision ${d.hash.scratchCompact})`
              : others.join('; '),
          );
        else {
          const n = d.sample ?? { compared: 0, skipped: 0 };
          const skipped = n.skipped > 0 ? ` (${n.skipped} changed on the source since, skipped)` : '';
          check(
            'sample',
            others.length === 0,
            others.length === 0 ? `${n.compared} sampled keys equal at revision ${d.revision}${skipped}` : others.join('; '),
          );
        }
        if (d.differences.length > 0) throw new Error(d.differences.join('; '));
        return d;
      },
      (d) => ({ method: d.method, why: d.why, keys: d.keys, hash: d.hash, sample: d.sample ?? null }),
    ).catch((e: Error) => {
      if (data === null) check('data', false, `could not compare with the source: ${e.message}`);
    });

    // --- the members' health
    await step(
      'check-members',
      'Every member answers, one leader, equal hashes',
      { endpoints: sc.endpoints() },
      async () => {
        const r = await checkCluster(sc.endpoints(), scratchConn, 30_000, o.signal);
        if (r.voters !== o.members || r.learners !== 0) throw new Error(`${r.voters} voters and ${r.learners} learners, expected ${o.members} voters`);
        check('members', true, `${r.voters} voter${r.voters === 1 ? '' : 's'} healthy, leader ${r.leader}, HashKV equal at revision ${r.revision}`);
        return r;
      },
      (r) => r,
    ).catch((e: Error) => {
      if (!checks.some((c) => c.name === 'members')) check('members', false, e.message);
    });
  } catch (e) {
    if (o.signal?.aborted) {
      interrupted = true;
      failures.push('interrupted');
    } else if (!(e instanceof CheckFailed)) failures.push((e as Error).message);
    if (!(e instanceof CheckFailed)) say(`FAIL ${(e as Error).message}`);
  }

  // --- the scratch cluster: down, unless kept
  const members =
    scratch?.members.map((m) => ({ name: m.name, id: m.id ?? null, clientUrl: m.clientUrl, peerUrl: m.peerUrl, pid: m.started ? (m.pid ?? null) : null })) ??
    [];
  const keep = o.keep && !interrupted && scratch !== undefined && scratch.endpoints().length > 0;
  if (!keep) {
    const sc = scratch;
    await step('teardown', 'Stop the scratch members and remove the scratch dir', { dir }, async () => {
      const problems = sc ? await sc.stop() : [];
      if (madeDir) fs.rmSync(dir, { recursive: true, force: true });
      else for (const f of fs.readdirSync(dir)) fs.rmSync(path.join(dir, f), { recursive: true, force: true });
      if (problems.length > 0) throw new Error(problems.join('; '));
      return {};
    }).catch((e: Error) => warnings.push(`teardown: ${e.message}`));
    for (const m of members) m.pid = null;
  }

  // --- the source, after: only reads were sent, so nothing of its own may have changed
  const notes: string[] = [];
  try {
    after = await sourceState(o.endpoints, o.conn, before?.endpoint);
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
  const phaseSum = (ps: DrillPhase[]) => seconds(ps.reduce((a, p) => a + p.seconds * 1000, 0));
  const writable = phases.some((p) => p.phase === 'first-write') ? phaseSum(phases.filter((p) => !p.phase.startsWith('member:'))) : null;
  const allMembers = phases.filter((p) => p.phase.startsWith('member:')).length === o.members - 1;
  const summary: DrillSummary = {
    passed,
    runtime,
    members: o.members,
    snapshotRevision: snapshot?.revision ?? null,
    keys: snapshot?.keys ?? null,
    comparison: (data as DataCheck | null)?.method ?? null,
    phases,
    writableSeconds: writable,
    totalSeconds: writable !== null && allMembers ? phaseSum(phases) : null,
    checks,
    failures,
  };
  const message = passed
    ? `drill passed: writable after ${summary.writableSeconds}s, every member caught up after ${summary.totalSeconds}s`
    : `drill failed: ${failures.join('; ')}`;
  audit.event(runId, { kind: DRILL_RESULT_EVENT, message, data: summary });
  const outcome = interrupted ? 'interrupted' : passed ? 'succeeded' : 'failed';
  const head = audit.finishRun(runId, {
    outcome,
    ...(passed ? {} : { error: failures.join('; ') || 'a check failed' }),
    ...(after ? { clusterIdAfter: after.clusterId, memberIdsAfter: after.memberIds } : {}),
  });
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
    scratch: { dir, logDir, clusterId: scratchClusterId, members, kept: keep },
    data,
    warnings,
    prometheusFile,
  };
}

/** A check already recorded its failure: stop the drill without another message. */
class CheckFailed extends Error {
  constructor() {
    super('a check failed');
  }
}
