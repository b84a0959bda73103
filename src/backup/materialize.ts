// `backup restore --at POINT --output FILE`: the cluster as it was at a point,
// as a snapshot file. The point is resolved (restorePoint.ts), the newest intact
// full at or before it and the segments after it are replayed by the replay
// rules (replay.ts), and the replay's snapshot is saved (a Lifeboat source is
// replayed in-process and keeps its cluster ID and members): at exactly the
// revision asked, with the leases the cluster had (granted with their recorded
// IDs and TTLs), in the source's format, so `snapshot restore`, `drill` and
// (for an etcd source) `etcdctl snapshot restore` take it. A damaged full is
// passed over for the next older one, and the output says so. With dropLeases,
// the keys are detached from their leases in the file written (dropLeases.ts).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ConnectionOptions } from '../client/etcdClient.js';
import { formatDuration } from '../common/durations.js';
import { syncDir, tempPathFor } from '../common/durableFile.js';
import { snapshotStatus } from '../recovery/snapshotFormat.js';
import { snapshotRevision } from './snapshotRevision.js';
import { dropLeases, type LeasesDropped } from './dropLeases.js';
import { readCatalog } from './catalog.js';
import type { ObjectStore } from './objectStore.js';
import { Replay, ReplayError, replayOptions, segmentLoader, type HashCheck } from './replay.js';
import { planReplay, type ReplayPlan } from './replayPlan.js';
import { parseRestorePoint, resolveRestorePoint, type TimeMapping } from './restorePoint.js';

export interface MaterializeOptions {
  store: ObjectStore;
  /** POINT as the operator wrote it */
  at: string;
  output: string;
  clusterId?: string;
  maxTimeUncertaintyMs: number;
  acceptUncertainTime: boolean;
  /** detach the keys from their leases in the output, and remove the leases */
  dropLeases?: boolean;
  identities?: readonly string[];
  etcdBin?: string;
  credentials?: ConnectionOptions['credentials'];
  logDir: string;
  onProgress?: (line: string) => void;
  signal?: AbortSignal;
}

export interface MaterializeResult {
  clusterId: string;
  runtime: 'etcd' | 'lifeboat';
  revision: number;
  time?: TimeMapping;
  full: string;
  /** fulls passed over as damaged, with why */
  skippedFulls: Array<{ object: string; problem: string }>;
  segments: string[];
  output: string;
  size: number;
  hashChecks: HashCheck[];
  /** with dropLeases: what was detached */
  leasesDropped?: LeasesDropped;
}

const plural = (n: number, w: string) => `${n} ${w}${n === 1 ? '' : 's'}`;

/** What a plan will use, before it starts: objects, revisions, sizes. */
export function describePlan(p: ReplayPlan): string[] {
  const seg = p.segments;
  const bytes = p.full.storedSize + seg.reduce((n, s) => n + s.storedSize, 0);
  return [
    `full ${p.full.object}: revision ${p.full.revision}, ${p.full.storedSize} bytes`,
    seg.length > 0
      ? `${plural(seg.length, 'segment')}: revisions ${seg[0].fromRevision}-${seg[seg.length - 1].toRevision}, ${seg.reduce((n, s) => n + s.storedSize, 0)} bytes`
      : 'no segment: the full is at the revision',
    `to revision ${p.target}: ${bytes} bytes to fetch`,
  ];
}

export async function materialize(o: MaterializeOptions): Promise<MaterializeResult> {
  const say = (line: string) => o.onProgress?.(line);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-restore-'));
  try {
    const catalog = await readCatalog(o.store);
    const point = parseRestorePoint(o.at, Date.now());
    const resolved = await resolveRestorePoint(catalog, point, {
      ...(o.clusterId ? { clusterId: o.clusterId } : {}),
      maxTimeUncertaintyMs: o.maxTimeUncertaintyMs,
      acceptUncertainTime: o.acceptUncertainTime,
      loadSegment: segmentLoader(o, work),
    });
    const t = resolved.time;
    if (t) {
      const sure = t.uncertain
        ? `uncertain by ${formatDuration(t.uncertain.widthMs)}: revision ${t.uncertain.revision} may have happened before it (its window is ${new Date(t.uncertain.windowStartMs).toISOString()} to ${new Date(t.uncertain.windowEndMs).toISOString()})`
        : 'exact: no later revision can have happened before it';
      say(
        `${point.text} (${new Date(t.atMs).toISOString()}) is revision ${t.revision} of cluster ${resolved.cluster.clusterId}, seen at ${new Date(t.seenAtMs).toISOString()}; ${sure}`,
      );
    } else say(`${point.text} is revision ${resolved.revision} of cluster ${resolved.cluster.clusterId}`);

    const skipped: MaterializeResult['skippedFulls'] = [];
    for (;;) {
      const plan = planReplay(catalog, resolved.cluster, resolved.revision, new Set(skipped.map((s) => s.object)));
      for (const line of describePlan(plan)) say(`will use ${line}`);
      let replay: Replay | undefined;
      try {
        replay = await Replay.run(replayOptions(o, { plan, logDir: o.logDir, workDir: work, onProgress: say, inProcess: true }));
      } catch (e) {
        // A damaged full: the next older one may still reach the point.
        if (
          e instanceof ReplayError &&
          e.object === plan.full.object &&
          resolved.cluster.fulls.some((f) => f.revision < plan.full.revision && !skipped.some((s) => s.object === f.object))
        ) {
          skipped.push({ object: plan.full.object, problem: e.message });
          say(`${plan.full.object} is damaged (${e.message}); falling back to an older full`);
          continue;
        }
        throw e;
      }
      // Staged beside the output and renamed over it only when whole (leases dropped too): a
      // run killed midway leaves the operator's FILE as it was.
      const staged = tempPathFor(o.output);
      try {
        const saved = await replay.saveSnapshot(staged);
        const st = snapshotRevision(await snapshotStatus(saved.path));
        if (st !== plan.target) throw new ReplayError(`the snapshot of the replay is at revision ${st}, not ${plan.target}; nothing was written`);
        let leasesDropped: LeasesDropped | undefined;
        if (o.dropLeases) {
          leasesDropped = await dropLeases(saved.path);
          say(`dropped the leases: ${leasesDropped.leases} leases removed, ${leasesDropped.revisions} stored revisions of keys detached from theirs`);
        }
        const size = fs.statSync(saved.path).size;
        fs.renameSync(saved.path, o.output);
        await syncDir(path.dirname(path.resolve(o.output)));
        return {
          clusterId: plan.clusterId,
          runtime: plan.full.runtime,
          revision: plan.target,
          ...(t ? { time: t } : {}),
          full: plan.full.object,
          skippedFulls: skipped,
          segments: plan.segments.map((s) => s.object),
          output: o.output,
          size,
          hashChecks: replay.hashChecks,
          ...(leasesDropped ? { leasesDropped } : {}),
        };
      } finally {
        fs.rmSync(staged, { force: true });
        await replay.close();
      }
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}
