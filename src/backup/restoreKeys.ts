// `lifeboat backup restore-keys`: put keys back into the LIVE cluster as they
// were at a point, without stopping anything. The backup is replayed to the
// point in a scratch member (replay.ts), the keys under the prefixes read there
// and in the live cluster, the plan decided (restoreKeysPlan.ts), and, once
// confirmed, applied key by key under guards (restoreKeysApply.ts). An applied
// plan is an audit run: who, why, the point, and the counts.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AuditLog, resolveAuditDbPath } from '../audit/index.js';
import type { ConnectionOptions, EtcdClient } from '../client/etcdClient.js';
import { prefixEnd } from '../client/keyRange.js';
import type { KeyValue } from '../client/types.js';
import { RefusedError } from '../common/errors.js';
import { readCatalog } from './catalog.js';
import type { ObjectStore } from './objectStore.js';
import { Replay, replayOptions, segmentLoader } from './replay.js';
import { planReplay } from './replayPlan.js';
import { applyPlan, type ApplyCounts } from './restoreKeysApply.js';
import { decideKeys, namespacePrefixes, planCounts, PLAN_KIND, type BackupKey, type RestoreKeysPlan } from './restoreKeysPlan.js';
import { parseRestorePoint, resolveRestorePoint } from './restorePoint.js';

export interface PlanOptions {
  store: ObjectStore;
  at: string;
  prefixes: string[];
  namespace?: string;
  live: EtcdClient;
  clusterId?: string;
  deleteNewer: boolean;
  dropLeases: boolean;
  allowOtherCluster: boolean;
  maxTimeUncertaintyMs: number;
  acceptUncertainTime: boolean;
  identities?: readonly string[];
  etcdBin?: string;
  credentials?: ConnectionOptions['credentials'];
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

const hex = (id: bigint) => id.toString(16).padStart(16, '0');

async function readPrefixes(c: EtcdClient, prefixes: readonly string[], revision?: number): Promise<{ kvs: KeyValue[]; revision: number }> {
  const out = new Map<string, KeyValue>();
  let rev = revision;
  for (const p of prefixes) {
    const key = Buffer.from(p);
    // A prefix without a trailing "/" is a single key (/registry/namespaces/NS).
    const r = await c.range(key, { rangeEnd: p.endsWith('/') ? prefixEnd(key) : undefined, ...(rev ? { revision: rev } : {}) });
    rev ??= r.header.revision;
    for (const kv of r.kvs) out.set(kv.key.toString('base64'), kv);
  }
  return { kvs: [...out.values()], revision: rev ?? 0 };
}

export async function planRestoreKeys(o: PlanOptions): Promise<RestoreKeysPlan> {
  const say = (line: string) => o.onProgress?.(line);
  const catalog = await readCatalog(o.store);
  const live = await o.live.status();
  const liveId = hex(live.header.clusterId);
  if (!o.allowOtherCluster && !catalog.clusters.some((c) => c.clusterId === liveId))
    throw new RefusedError(
      `the live cluster ${liveId} is not in the store's lineage (it holds ${catalog.clusters.map((c) => c.clusterId).join(', ') || 'nothing'}); check --endpoints and the store, or pass --allow-other-cluster`,
    );
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-restore-keys-'));
  try {
    const resolved = await resolveRestorePoint(catalog, parseRestorePoint(o.at, Date.now()), {
      clusterId: o.clusterId ?? (catalog.clusters.some((c) => c.clusterId === liveId) ? liveId : undefined),
      maxTimeUncertaintyMs: o.maxTimeUncertaintyMs,
      acceptUncertainTime: o.acceptUncertainTime,
      loadSegment: segmentLoader(o, work),
    });
    say(`${o.at} is revision ${resolved.revision} of cluster ${resolved.cluster.clusterId}`);
    const replay = await Replay.run(
      replayOptions(o, { plan: planReplay(catalog, resolved.cluster, resolved.revision), logDir: work, workDir: work, onProgress: say }),
    );
    try {
      let prefixes = o.prefixes;
      let backupKvs: KeyValue[];
      let liveKvs: KeyValue[];
      let liveRevision: number;
      if (o.namespace) {
        // The namespace's prefixes are found in both keyspaces' /registry/ keys.
        const b = await readPrefixes(replay.client, ['/registry/']);
        const l = await readPrefixes(o.live, ['/registry/']);
        prefixes = namespacePrefixes(
          o.namespace,
          [...b.kvs, ...l.kvs].map((kv) => kv.key),
        );
        backupKvs = (await readPrefixes(replay.client, prefixes)).kvs;
        const lr = await readPrefixes(o.live, prefixes, l.revision);
        liveKvs = lr.kvs;
        liveRevision = lr.revision;
      } else {
        backupKvs = (await readPrefixes(replay.client, prefixes)).kvs;
        const lr = await readPrefixes(o.live, prefixes);
        liveKvs = lr.kvs;
        liveRevision = lr.revision;
      }
      const ttls = new Map<bigint, number>();
      const backup: BackupKey[] = [];
      for (const kv of backupKvs) {
        if (kv.lease !== 0n && !o.dropLeases && !ttls.has(kv.lease)) ttls.set(kv.lease, (await replay.client.leaseTimeToLive(kv.lease)).grantedTtl);
        backup.push({ kv, ...(ttls.has(kv.lease) ? { leaseTtl: ttls.get(kv.lease) } : {}) });
      }
      return {
        format: 1,
        kind: PLAN_KIND,
        store: o.store.url,
        point: o.at,
        clusterId: resolved.cluster.clusterId,
        revision: resolved.revision,
        liveClusterId: liveId,
        liveRevision,
        prefixes,
        deleteNewer: o.deleteNewer,
        dropLeases: o.dropLeases,
        keys: decideKeys(backup, liveKvs, o),
      };
    } finally {
      await replay.close();
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

export interface ApplyOptions {
  plan: RestoreKeysPlan;
  live: EtcdClient;
  reason: string;
  auditDb?: string;
  onProgress?: (line: string) => void;
}

export interface ApplyResult extends ApplyCounts {
  runId: string;
  auditDb: string;
}

/** Applies a plan as an audit run; refused when the live cluster is not the one the plan was made against. */
export async function applyRestoreKeys(o: ApplyOptions): Promise<ApplyResult> {
  const liveId = hex((await o.live.status()).header.clusterId);
  if (liveId !== o.plan.liveClusterId)
    throw new RefusedError(
      `the plan was made against cluster ${o.plan.liveClusterId}, --endpoints reach cluster ${liveId}; make a new plan against this cluster`,
    );
  const auditDb = resolveAuditDbPath(o.auditDb);
  const audit = AuditLog.open(auditDb);
  const counts = planCounts(o.plan.keys);
  const runId = audit.startRun({
    playbook: 'restore-keys',
    reason: o.reason,
    variables: { store: o.plan.store, at: o.plan.point, revision: o.plan.revision, prefixes: o.plan.prefixes.join(','), ...counts },
  }).id;
  audit.updateRun(runId, { clusterIdBefore: liveId });
  const step = audit.startStep(runId, {
    ordinal: 1,
    stepId: 'apply',
    name: `Put ${counts.restore + counts.overwrite} keys back as they were at revision ${o.plan.revision}${counts.delete ? ` and delete ${counts.delete} newer` : ''}`,
    type: 'restore-keys',
    inputs: { prefixes: o.plan.prefixes, revision: o.plan.revision, liveRevision: o.plan.liveRevision, ...counts },
  });
  try {
    const r = await applyPlan(o.live, o.plan, o.onProgress);
    audit.finishStep(step, { status: 'succeeded', outputs: r });
    audit.finishRun(runId, { outcome: 'succeeded' });
    return { ...r, runId, auditDb };
  } catch (e) {
    audit.finishStep(step, { status: 'failed', error: e as Error });
    audit.finishRun(runId, { outcome: 'failed', error: (e as Error).message });
    throw e;
  } finally {
    audit.close();
  }
}
