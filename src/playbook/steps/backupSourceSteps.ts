// A backup-store point as the recovery source (STORE@POINT), and the revision
// bump by writes: materialize-backup, apply-revision-bump.
//
// materialize-backup replays the point into a snapshot file exactly as `backup
// restore --at` does (materialize.ts), in a private directory of the run; the
// steps after it that take the same `source` find that snapshot through the
// record it leaves (backupRecordOf), with the store's cluster ID as the old
// cluster's and its last stored revision as the cluster's last recorded one.
// For a data dir or snapshot source it does nothing.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clientFor } from '../../client/etcdClient.js';
import { openSourceStore, parseBackupSource } from '../../backup/backupSource.js';
import { lastStoredRevision, readCatalog } from '../../backup/catalog.js';
import { readIdentityFiles } from '../../backup/identityFiles.js';
import { materialize } from '../../backup/materialize.js';
import { bumpByWrites, compactBumpedAt, BUMP_KEY } from '../../recovery/revisionBump.js';
import type { StepContext, StepDefinition } from '../stepTypes.js';

/** What materialize-backup made, for the steps after it. */
export interface BackupRecord {
  /** STORE@POINT as given */
  source: string;
  /** the materialized snapshot (removed once restored) */
  snapshot: string;
  clusterId: string;
  runtime: 'etcd' | 'lifeboat';
  revision: number;
  /** the last revision the store holds for the cluster */
  lastRevision: number;
}

const recordFile = (runDir: string) => path.join(runDir, 'backup-source.json');

/** The record of a backup source materialized by this run; undefined for a path source. Throws when the source is a backup not yet materialized. */
export function backupRecordOf(source: string, ctx: Pick<StepContext, 'runDir'>): BackupRecord | undefined {
  const src = parseBackupSource(source);
  if (!src) return undefined;
  const file = recordFile(ctx.runDir);
  const rec = fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as BackupRecord) : undefined;
  if (!rec || rec.source !== src.text) throw new Error(`source ${src.text} is a backup point: a materialize-backup step must run before this step`);
  return rec;
}

export const materializeBackup: StepDefinition = {
  type: 'materialize-backup',
  description:
    "When the source is a backup point (file:///dir@POINT, s3://bucket/prefix@POINT): replay it into a snapshot file in the run's private directory, exactly as `backup restore --at` does; a data dir or snapshot source is left as it is.",
  params: {
    source: { type: 'path', required: true, description: 'STORE@POINT, a data dir or a snapshot file', check: 'source' },
    's3-endpoint': { type: 'string', default: '', description: 'S3: the service URL of a non-AWS store' },
    's3-region': { type: 'string', default: '', description: 'S3: the region' },
    's3-path-style': { type: 'bool', default: false, description: 'S3: path-style addressing' },
    's3-ca-file': { type: 'string', default: '', description: "S3: the CA bundle of the endpoint's certificate" },
    's3-imds': { type: 'bool', default: false, description: 'S3: let the credential chain ask the EC2 instance metadata service' },
    'identity-file': { type: 'list', default: [], description: 'age identity files of an encrypted store (the keys are never recorded)' },
    'max-time-uncertainty': { type: 'duration', default: 30_000, description: 'refuse a time inside a revision window wider than this' },
    'accept-uncertain-time': { type: 'bool', default: false, description: 'restore the last revision seen before the time even when uncertain' },
    'etcd-bin': { type: 'string', default: '', description: 'the etcd binary, for a backup of an etcd cluster' },
  },
  describe: (p) =>
    parseBackupSource(String(p.source)) ? [`replay ${String(p.source)} into a snapshot file in the run's directory (read-only on the store)`] : [],
  async run(p, ctx) {
    const src = parseBackupSource(String(p.source));
    if (!src) return { backup: false };
    const file = recordFile(ctx.runDir);
    if (fs.existsSync(file)) {
      const done = JSON.parse(fs.readFileSync(file, 'utf8')) as BackupRecord;
      // A resumed run: the snapshot made before (or already restored and removed) is kept.
      if (done.source === src.text) {
        ctx.progress(`${src.text} was already materialized: revision ${done.revision} of cluster ${done.clusterId}`);
        return { backup: true, ...done };
      }
    }
    const s3 = {
      ...(p['s3-endpoint'] ? { endpoint: p['s3-endpoint'] as string } : {}),
      ...(p['s3-region'] ? { region: p['s3-region'] as string } : {}),
      ...(p['s3-path-style'] ? { pathStyle: true } : {}),
      ...(p['s3-ca-file'] ? { caFile: p['s3-ca-file'] as string } : {}),
      ...(p['s3-imds'] ? { imds: true } : {}),
    };
    const identities = readIdentityFiles(p['identity-file'] as string[]);
    // Private: the snapshot holds every key of the cluster.
    const dir = path.join(ctx.runDir, 'backup-source');
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.chmodSync(dir, 0o700);
    const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lifeboat-recover-logs-'));
    const store = await openSourceStore(src, { s3 });
    try {
      const r = await materialize({
        store,
        at: src.point,
        output: path.join(dir, 'source.db'),
        maxTimeUncertaintyMs: Number(p['max-time-uncertainty']),
        acceptUncertainTime: !!p['accept-uncertain-time'],
        identities,
        ...(p['etcd-bin'] ? { etcdBin: p['etcd-bin'] as string } : {}),
        ...(ctx.connection.credentials ? { credentials: ctx.connection.credentials } : {}),
        logDir,
        onProgress: (line) => ctx.progress(line),
        signal: ctx.signal,
      });
      const catalog = await readCatalog(store);
      const rec: BackupRecord = {
        source: src.text,
        snapshot: r.output,
        clusterId: r.clusterId,
        runtime: r.runtime,
        revision: r.revision,
        lastRevision: lastStoredRevision(catalog.clusters.find((c) => c.clusterId === r.clusterId)),
      };
      fs.writeFileSync(`${file}.tmp`, `${JSON.stringify(rec)}\n`);
      fs.renameSync(`${file}.tmp`, file);
      fs.rmSync(logDir, { recursive: true, force: true });
      ctx.event(
        'note',
        `materialized ${src.text}: revision ${r.revision} of cluster ${r.clusterId} (${r.runtime}), from ${r.full} and ${r.segments.length} segments`,
        {
          source: src.text,
          clusterId: r.clusterId,
          revision: r.revision,
          lastRevision: rec.lastRevision,
          full: r.full,
          segments: r.segments,
          skippedFulls: r.skippedFulls,
          ...(r.time
            ? { time: { at: new Date(r.time.atMs).toISOString(), seenAt: new Date(r.time.seenAtMs).toISOString(), uncertain: r.time.uncertain ?? null } }
            : {}),
        },
      );
      return { backup: true, ...rec };
    } catch (e) {
      if (fs.readdirSync(logDir).length > 0) ctx.progress(`replay member logs kept in ${logDir}`);
      else fs.rmSync(logDir, { recursive: true, force: true });
      throw e;
    } finally {
      store.close();
    }
  },
};

export const applyRevisionBump: StepDefinition = {
  type: 'apply-revision-bump',
  description: `The revision bump on a runtime without mark-compacted (etcd 3.4), decided by the restore step: writes to the one key ${BUMP_KEY} until the revision is reached (the last deletes it), then a compaction there. Nothing when no bump by writes was decided.`,
  params: {
    endpoints: { type: 'list', required: true, description: "the recovered member's client URLs" },
    'bump-to': { type: 'int', default: 0, description: 'the revision to reach (0: none)' },
    'source-revision': { type: 'int', default: 0, description: "the restored source's revision" },
  },
  describe: (p) => (Number(p['bump-to']) > 0 ? [`raise the revision to ${String(p['bump-to'])} by writes to ${BUMP_KEY}, then compact there`] : []),
  async run(p, ctx) {
    const target = Number(p['bump-to']);
    if (!(target > 0)) return { applied: false };
    const c = clientFor(p.endpoints as string[], ctx.connection);
    try {
      const now = (await c.status()).header.revision;
      if (now >= target) {
        // A resumed run past it: the writes were made, but the run may have stopped before the compaction.
        const compactedAt = await compactBumpedAt(c, target);
        ctx.progress(`revision ${now} is at or past ${target}: the bump was made; compacted at ${compactedAt}`);
        return { applied: true, revision: now, compactedAt, reused: true };
      }
      const r = await bumpByWrites(c, target, Number(p['source-revision']), (t) => ctx.progress(t), ctx.signal);
      ctx.progress(`revision bump: ${r.writes} writes from ${r.fromRevision} to ${r.revision}, compacted at ${r.compactedAt}`);
      ctx.event(
        'note',
        `revision bump: ${r.writes} writes to ${BUMP_KEY} (the last deleting it) from revision ${r.fromRevision} to ${r.revision}, then compacted at ${r.compactedAt}`,
        {
          key: BUMP_KEY,
          ...r,
        },
      );
      return { applied: true, ...r };
    } finally {
      c.close();
    }
  },
};
