// `lifeboat migrate`: a consistent copy at one source revision, then the source's
// changes from the next revision on, then — at the end of a `--once` run, or when
// the operator finishes a live one — everything up to the source's revision of
// that moment applied and both sides verified equal at exactly that revision.
// Progress is recorded (progressFile.ts) so a killed run goes on where it stopped.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { lifeboatStateDir } from '../common/stateDir.js';
import type { EtcdClient } from '../client/etcdClient.js';
import { InputError, RefusedError } from '../common/errors.js';
import { dieNow, failpointArg } from '../common/failpoint.js';
import { copyAuth, type AuthCopyResult } from './authCopy.js';
import { CompactedError, copyAtRevision } from './copy.js';
import { writeOps } from './destWriter.js';
import { follow } from './follow.js';
import { KeyMapping } from './keyMapping.js';
import { lockProgress, readProgress, recordExists, writeProgress, type MigrationProgress } from './progressFile.js';
import { verifyAt, type VerifyResult } from './verify.js';

export interface MigrateOptions {
  src: EtcdClient;
  dst: EtcdClient;
  sourcePrefix: Buffer;
  destPrefix: Buffer;
  /** copy, catch up to the source's current revision, verify, stop */
  once: boolean;
  /** the progress record (default: progressPath(...)) */
  progressFile: string;
  /** forget the record, empty what it copied, and copy everything again */
  restart: boolean;
  /** copy the source's users, roles and grants (authCopy.ts) before the keys */
  copyAuth: boolean;
  /** live mode: aborted when the operator asks to finish (drain, verify, stop) */
  finish: AbortSignal;
  /** aborted to stop at once, progress kept */
  abort: AbortSignal;
  log(line: string): void;
  onCopyProgress: (done: number, total: number) => void;
}

export interface MigrateResult {
  source: { endpoint: string; cluster: bigint };
  dest: { endpoint: string; cluster: bigint };
  progressFile: string;
  resumed: boolean;
  copy: { revision: number; keys: number; restarts: number };
  applied: { fromRevision: number; toRevision: number; revisions: number; events: number };
  /** keys written at the finish because the watch had not delivered them yet */
  repaired: number;
  verified: VerifyResult;
  /** with copyAuth: the users and roles copied */
  auth?: AuthCopyResult;
}

/** The default record for a migration: one per (source, destination, prefixes), in the XDG state dir. */
export function progressPath(
  from: readonly string[],
  to: readonly string[],
  sourcePrefix: string,
  destPrefix: string,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const id = createHash('sha256')
    .update(JSON.stringify([[...from].sort(), [...to].sort(), sourcePrefix, destPrefix]))
    .digest('hex')
    .slice(0, 16);
  return path.join(lifeboatStateDir(env), 'migrations', `${id}.json`);
}

export async function migrate(o: MigrateOptions): Promise<MigrateResult> {
  const mapping = new KeyMapping(o.sourcePrefix, o.destPrefix);
  const [srcHead, dstHead] = await Promise.all([
    naming('source', '--from', o.src.range(mapping.source.key, { rangeEnd: mapping.source.rangeEnd, countOnly: true })),
    naming('destination', '--to', o.dst.range(mapping.dest.key, { rangeEnd: mapping.dest.rangeEnd, countOnly: true })),
  ]);
  const source = { endpoint: await o.src.activeEndpoint(), cluster: srcHead.header.clusterId };
  const dest = { endpoint: await o.dst.activeEndpoint(), cluster: dstHead.header.clusterId };
  const sp = JSON.stringify(o.sourcePrefix.toString());
  const dp = JSON.stringify(o.destPrefix.toString());
  if (source.cluster === dest.cluster && mapping.overlaps()) {
    throw new InputError(
      `--from and --to are one cluster (${hex(source.cluster)}) and prefix ${dp} overlaps ${sp}: the migration would copy its own writes; choose a --dest-prefix outside ${sp}`,
    );
  }

  const lock = lockProgress(o.progressFile, []);
  try {
    let progress: MigrationProgress | undefined;
    let destKeys = dstHead.count;
    if (o.restart) {
      // Only a range this migration wrote (its record exists, even damaged) is emptied.
      if (recordExists(o.progressFile) && destKeys > 0) {
        o.log(`--restart: deleting the ${destKeys} keys under ${dp} that the earlier run copied`);
        await o.dst.deleteRange(mapping.dest.key, { rangeEnd: mapping.dest.rangeEnd });
        destKeys = 0;
      }
    } else progress = readProgress(o.progressFile);
    const resumed = progress !== undefined;
    if (progress) checkSame(progress, o.progressFile, source.cluster, dest.cluster, o.sourcePrefix, o.destPrefix);
    else if (destKeys > 0) {
      throw new RefusedError(
        `the destination already holds ${dstHead.count} keys under ${dp}; migrate copies into an empty prefix: choose another --dest-prefix or delete them (lifeboat del ${dp} --prefix)`,
      );
    }
    const auth = o.copyAuth ? await copyAuth(o.src, o.dst) : undefined;
    if (auth) for (const line of authSummary(auth)) o.log(line);
    progress ??= newProgress(o, source.cluster, dest.cluster, srcHead.header.revision);
    const p = progress;
    // The failpoint migrate-copy:N (common/failpoint.ts): die once N copy batches are recorded.
    const killAfter = /^\d+$/.exec(failpointArg('migrate-copy') ?? '')?.[0];
    let batches = 0;
    const save = () => {
      writeProgress(o.progressFile, p);
      if (killAfter !== undefined && p.phase === 'copy' && ++batches > Number(killAfter)) dieNow();
    };
    save();
    if (resumed)
      o.log(
        `resuming the migration recorded in ${o.progressFile} (${p.phase === 'copy' ? `copy at revision ${p.copyRevision}, ${p.copiedKeys} keys done` : `applied through revision ${p.appliedRevision}`})`,
      );

    const copy = { revision: p.copyRevision, keys: 0, restarts: 0 };
    const applied = { fromRevision: 0, toRevision: 0, revisions: 0, events: 0 };
    // A compaction on the source past our position loses the changes in between:
    // start over from a fresh copy (the destination range is emptied first).
    for (;;) {
      try {
        if (p.phase === 'copy') {
          o.log(`copying ${sp} at revision ${p.copyRevision} from ${source.endpoint} to ${dp} at ${dest.endpoint}`);
          await copyAtRevision({ src: o.src, dst: o.dst, mapping, progress: p, save, onProgress: o.onCopyProgress, signal: o.abort });
          Object.assign(p, { phase: 'follow', appliedRevision: p.copyRevision });
          save();
          copy.revision = p.copyRevision;
          copy.keys = p.copiedKeys;
          o.log(`copied ${p.copiedKeys} keys at revision ${p.copyRevision}`);
        }
        applied.fromRevision = applied.toRevision = p.appliedRevision;
        const onApplied = (rev: number, events: number) => {
          applied.toRevision = rev;
          applied.revisions++;
          applied.events += events;
        };
        if (!o.once) {
          o.log(`following changes from revision ${p.appliedRevision + 1}; interrupt (Ctrl-C) to finish: apply up to the current revision, verify, stop`);
          await follow({
            src: o.src,
            dst: o.dst,
            mapping,
            progress: p,
            save,
            stopAt: () => (o.finish.aborted ? p.appliedRevision : undefined),
            onApplied,
            signal: o.abort,
          });
          o.abort.throwIfAborted();
          o.log(`finishing at revision ${p.appliedRevision}: catching up with the source, then verifying`);
        }
        const { verified, repaired } = await finish(o, mapping, p, save, onApplied);
        return { source, dest, progressFile: o.progressFile, resumed, copy, applied, repaired, verified, ...(auth ? { auth } : {}) };
      } catch (err) {
        if (!(err instanceof CompactedError) || o.abort.aborted) throw err;
        const head = await o.src.range(mapping.source.key, { rangeEnd: mapping.source.rangeEnd, countOnly: true });
        o.log(`${err.message} on the source: copying again at revision ${head.header.revision} (the destination range is emptied first)`);
        await o.dst.deleteRange(mapping.dest.key, { rangeEnd: mapping.dest.rangeEnd });
        Object.assign(p, newProgress(o, source.cluster, dest.cluster, head.header.revision));
        save();
        copy.restarts++;
      }
    }
  } finally {
    lock.release();
  }
}

/**
 * Apply everything up to the source's current revision, then compare both sides
 * there. A watch that started behind may not have delivered it all yet (etcd 3.4
 * answers a progress request with its current revision before it has sent the
 * history), so what still differs is written from the source at that revision and
 * compared again: the destination then equals the source at exactly `target`.
 */
async function finish(
  o: MigrateOptions,
  mapping: KeyMapping,
  p: MigrationProgress,
  save: () => void,
  onApplied: (rev: number, events: number) => void,
): Promise<{ verified: VerifyResult; repaired: number }> {
  const target = (await o.src.range(mapping.source.key, { rangeEnd: mapping.source.rangeEnd, countOnly: true })).header.revision;
  await follow({ src: o.src, dst: o.dst, mapping, progress: p, save, stopAt: () => target, onApplied, signal: o.abort });
  let verified = await verifyAt(o.src, o.dst, mapping, target, { repairs: true });
  const repaired = verified.differenceCount;
  if (!verified.equal) {
    o.log(`at revision ${target}, ${repaired} keys differ (the watch had not delivered them yet): writing them from the source at that revision`);
    await writeOps(o.dst, verified.repairs!);
    verified = await verifyAt(o.src, o.dst, mapping, target);
    if (!verified.equal) {
      throw new Error(
        `verification failed at revision ${target}: ${verified.differenceCount} keys differ (${verified.differences.join('; ')}); is something else writing to the destination? the progress is kept, run the same command again`,
      );
    }
  }
  delete verified.repairs;
  // Equal at `target`: every change up to it is in (any still in flight changes nothing).
  p.appliedRevision = Math.max(p.appliedRevision, target);
  p.verifiedRevision = target;
  save();
  return { verified, repaired };
}

function newProgress(o: MigrateOptions, src: bigint, dst: bigint, revision: number): MigrationProgress {
  return {
    sourcePrefix: o.sourcePrefix.toString('base64'),
    destPrefix: o.destPrefix.toString('base64'),
    sourceCluster: hex(src),
    destCluster: hex(dst),
    phase: 'copy',
    copyRevision: revision,
    copiedKeys: 0,
    appliedRevision: 0,
    verifiedRevision: 0,
    updatedAt: new Date().toISOString(),
  };
}

function checkSame(p: MigrationProgress, file: string, src: bigint, dst: bigint, sp: Buffer, dp: Buffer): void {
  const differs = (what: string, recorded: string, now: string) =>
    new RefusedError(
      `migration progress ${file} records ${what} ${recorded}, but this run has ${now}; pass --restart to start over, or --progress-file for another migration`,
    );
  if (p.sourceCluster !== hex(src)) throw differs('source cluster', p.sourceCluster, hex(src));
  if (p.destCluster !== hex(dst)) throw differs('destination cluster', p.destCluster, hex(dst));
  if (p.sourcePrefix !== sp.toString('base64') || p.destPrefix !== dp.toString('base64')) {
    throw differs(
      'prefixes',
      `${Buffer.from(p.sourcePrefix, 'base64').toString()} → ${Buffer.from(p.destPrefix, 'base64').toString()}`,
      `${sp.toString()} → ${dp.toString()}`,
    );
  }
}

/** What copyAuth did and what it leaves to the operator, one line each (none when the source has no users or roles). */
export function authSummary(a: AuthCopyResult): string[] {
  const lines: string[] = [];
  const same = a.sameRoles + a.sameUsers;
  if (a.roles.length + a.users.length + same === 0) return lines;
  lines.push(
    `copied ${a.roles.length} roles and ${a.users.length} users with their permissions and role grants${same ? ` (${a.sameRoles} roles and ${a.sameUsers} users already there, identical)` : ''}`,
  );
  if (a.users.length > 0)
    lines.push(
      `passwords are not copied (etcd never returns them): users have a random password nobody knows on the destination, so they log in only by client-certificate CN until you set one: etcdctl user passwd NAME (${a.users.join(', ')})`,
    );
  if (a.sourceAuthEnabled && !a.destAuthEnabled)
    lines.push(
      "auth is enabled on the source, not on the destination: migrate does not enable it (root's password is not known there: that would lock you out); set root's password, then etcdctl auth enable",
    );
  return lines;
}

const hex = (id: bigint) => id.toString(16);

/** A first request's failure, saying which side and which flag to check. */
async function naming<T>(side: string, flag: string, p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    if (err instanceof Error) err.message = `${side}: ${err.message.replace(/check --endpoints$/, `check ${flag}`)}`;
    throw err;
  }
}
