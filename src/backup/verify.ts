// `lifeboat backup verify`: prove a backup restores. Replays the chain to a
// revision (the newest full at or before it, then its segments) by the replay
// rules (replay.ts), compares HashKV with every hash point the agent recorded
// from the live cluster up to it, and records the whole as a drill in the audit
// log (a run of kind drill whose result names the backup), so `audit report
// --drills` shows proven backups next to drills. The store is only read.
import fs from 'node:fs';
import path from 'node:path';
import { AuditLog, DRILL_PLAYBOOK, DRILL_RESULT_EVENT, resolveAuditDbPath, type DrillCheck, type DrillPhase, type DrillSummary } from '../audit/index.js';
import type { ConnectionOptions } from '../client/etcdClient.js';
import { readCatalog } from './catalog.js';
import { StoreUnavailable, type ObjectStore } from './objectStore.js';
import { Replay, type HashCheck, type ReplayStats } from './replay.js';
import { chooseCluster, planReplay, ReplayError, type ReplayPlan } from './replayPlan.js';

export interface VerifyOptions {
  store: ObjectStore;
  /** the revision to prove (default: the last one stored) */
  at?: number;
  /** 16 hex digits; needed when the store holds more than one cluster */
  clusterId?: string;
  identities?: readonly string[];
  etcdBin?: string;
  credentials?: ConnectionOptions['credentials'];
  reason: string;
  auditDb?: string;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface VerifyResult {
  passed: boolean;
  runId: string;
  auditDb: string;
  store: string;
  clusterId: string | null;
  runtime: 'etcd' | 'lifeboat' | null;
  revision: number | null;
  full: string | null;
  segments: string[];
  keys: number | null;
  hashChecks: HashCheck[];
  stats: ReplayStats | null;
  /** the object that failed, when one did */
  failedObject: string | null;
  failures: string[];
}

const seconds = (ms: number) => Math.round(ms) / 1000;

export async function verifyBackup(o: VerifyOptions): Promise<VerifyResult> {
  const say = (line: string) => o.onProgress?.(line);
  const auditPath = resolveAuditDbPath(o.auditDb);
  const audit = AuditLog.open(auditPath);
  for (const id of o.identities ?? []) audit.addSecret(id);
  const runId = audit.startRun({
    playbook: DRILL_PLAYBOOK,
    reason: o.reason,
    variables: { store: o.store.url, ...(o.at !== undefined ? { at: o.at } : {}), ...(o.clusterId ? { cluster: o.clusterId } : {}) },
  }).id;
  const logDir = path.join(path.dirname(auditPath), 'runs', runId);
  fs.mkdirSync(logDir, { recursive: true });
  say(`backup verify ${runId}: ${o.store.url}, member logs in ${logDir}`);

  const checks: DrillCheck[] = [];
  const failures: string[] = [];
  const phases: DrillPhase[] = [];
  const check = (name: string, ok: boolean, detail: string) => {
    checks.push({ name, ok, detail });
    if (!ok) failures.push(detail);
    say(`${ok ? 'ok  ' : 'FAIL'} ${name}: ${detail}`);
  };
  let ordinal = 0;
  const step = async <T>(stepId: string, name: string, inputs: Record<string, unknown>, fn: () => Promise<T>, outputs: (t: T) => unknown): Promise<T> => {
    const ref = audit.startStep(runId, { ordinal: ++ordinal, stepId, name, type: `backup-verify-${stepId}`, inputs });
    try {
      const r = await fn();
      audit.finishStep(ref, { status: 'succeeded', outputs: outputs(r) });
      return r;
    } catch (e) {
      audit.finishStep(ref, { status: 'failed', error: e as Error });
      throw e;
    }
  };

  let plan: ReplayPlan | undefined;
  let replay: Replay | undefined;
  let keys: number | null = null;
  let failedObject: string | null = null;
  let interrupted = false;
  let storeError: StoreUnavailable | undefined;
  try {
    plan = await step(
      'plan',
      'Read the store and choose the full and segments',
      { store: o.store.url, at: o.at ?? null },
      async () => {
        const catalog = await readCatalog(o.store);
        return planReplay(catalog, chooseCluster(catalog, o.clusterId), o.at);
      },
      (p) => ({ clusterId: p.clusterId, full: p.full.object, segments: p.segments.map((s) => s.object), target: p.target, hashPoints: p.hashPoints.length }),
    );
    const p = plan;
    audit.updateRun(runId, { clusterIdBefore: p.clusterId });
    say(
      `cluster ${p.clusterId} (${p.full.runtime}): ${p.full.object} (revision ${p.full.revision}), ${p.segments.length} segment${p.segments.length === 1 ? '' : 's'} to revision ${p.target}, ${p.hashPoints.length} hash point${p.hashPoints.length === 1 ? '' : 's'}`,
    );
    const r = Replay.prepare({
      store: o.store,
      plan: p,
      logDir,
      ...(o.identities ? { identities: o.identities } : {}),
      ...(o.etcdBin ? { etcdBin: o.etcdBin } : {}),
      ...(o.credentials ? { credentials: o.credentials } : {}),
      onProgress: say,
      ...(o.signal ? { signal: o.signal } : {}),
      inProcess: true,
    });
    replay = r;
    await step(
      'fetch',
      'Download and decode every object (sizes, sha256, segment format)',
      { objects: 1 + p.segments.length },
      () => r.fetchAll(),
      () => ({
        storedBytes: r.stats.storedBytes,
      }),
    );
    phases.push({ phase: 'snapshot', label: 'fetch from the store', seconds: seconds(r.stats.downloadMs) });
    check('objects', true, `${1 + p.segments.length} objects read, sizes and sha256 as their manifests say (${r.stats.storedBytes} bytes)`);
    await step(
      'restore',
      r.inProcess ? `Open ${p.full.object} as a kv store in this process` : `Restore ${p.full.object} into a scratch ${p.full.runtime} member`,
      { full: p.full.object },
      () => r.restoreFull(),
      () => (r.inProcess ? { inProcess: true } : { endpoint: r.endpoint }),
    );
    phases.push({ phase: 'restore', label: 'restore the full', seconds: seconds(r.stats.restoreMs) });
    await step(
      'replay',
      `Replay revisions ${p.base + 1}-${p.target}, one Txn each, comparing HashKV at the recorded points`,
      { from: p.base + 1, to: p.target },
      () => r.replaySegments(),
      () => ({ ...r.stats, hashChecks: r.hashChecks }),
    );
    phases.push({ phase: 'replay', label: `replay ${r.stats.revisions} revisions`, seconds: seconds(r.stats.replayMs) });
    check('replay', true, `${r.stats.revisions} revisions (${r.stats.events} events) replayed, each at its recorded revision; now at revision ${p.target}`);
    const compared = r.hashChecks.filter((h) => h.equal === true).length;
    const skipped = r.hashChecks.filter((h) => h.equal === null).length;
    check(
      'hash',
      compared > 0,
      compared > 0
        ? `HashKV equal to the cluster's at ${compared} recorded point${compared === 1 ? '' : 's'} (last at revision ${r.hashChecks.filter((h) => h.equal).at(-1)?.revision})${skipped ? `; ${skipped} not comparable (compacted past)` : ''}`
        : `no hash point recorded up to revision ${p.target} could be compared: the replay is unproven`,
    );
    keys = await r.keyCount();
  } catch (e) {
    if (o.signal?.aborted) {
      interrupted = true;
      failures.push('interrupted');
    } else {
      if (e instanceof StoreUnavailable) storeError = e;
      const name = e instanceof ReplayError ? (plan ? 'replay' : 'plan') : 'verify';
      check(name, false, (e as Error).message);
      if (e instanceof ReplayError) failedObject = e.object ?? null;
    }
  } finally {
    await replay?.close();
  }

  const passed = failures.length === 0 && checks.every((c) => c.ok);
  const total = seconds(phases.reduce((a, ph) => a + ph.seconds * 1000, 0));
  const summary: DrillSummary = {
    passed,
    runtime: plan?.full.runtime ?? 'lifeboat',
    members: 1,
    snapshotRevision: plan?.target ?? null,
    keys,
    comparison: replay?.hashChecks.some((h) => h.equal !== null) ? 'hashkv' : null,
    phases,
    writableSeconds: passed ? total : null,
    totalSeconds: passed ? total : null,
    checks,
    failures,
    ...(plan
      ? { backup: { store: o.store.url, clusterId: plan.clusterId, revision: plan.target, objects: [plan.full.object, ...plan.segments.map((s) => s.object)] } }
      : {}),
  };
  const message = passed ? `backup verified to revision ${plan?.target}` : `backup verify failed: ${failures.join('; ')}`;
  audit.event(runId, { kind: DRILL_RESULT_EVENT, message, data: summary });
  audit.finishRun(runId, { outcome: interrupted ? 'interrupted' : passed ? 'succeeded' : 'failed', ...(passed ? {} : { error: failures.join('; ') }) });
  audit.close();
  // Recorded as a failed verify; the command says it as the store's error (exit 3 when the store refused us).
  if (storeError) throw storeError;
  return {
    passed,
    runId,
    auditDb: auditPath,
    store: o.store.url,
    clusterId: plan?.clusterId ?? null,
    runtime: plan?.full.runtime ?? null,
    revision: plan?.target ?? null,
    full: plan?.full.object ?? null,
    segments: plan?.segments.map((s) => s.object) ?? [],
    keys,
    hashChecks: replay?.hashChecks ?? [],
    stats: replay?.stats ?? null,
    failedObject,
    failures,
  };
}
