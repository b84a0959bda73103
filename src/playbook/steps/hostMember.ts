// What the steps for a member configured on its host share, whether a kubeadm
// static pod manifest or Debian's /etc/default/etcd configures it: the refusal
// while other members answer, the file rewrite that keeps the original, the
// restore's source and data dirs, and the rejoin (run here, or printed for
// another host) that waits until the member answers.
import fs from 'node:fs';
import path from 'node:path';
import { manifestDiff, writeManifestAtomic } from '../../kube/controlPlane.js';
import { waitUntil } from '../../ops/memberOps.js';
import { runtimeOfDataDir } from '../../ops/runtime.js';
import { answers, probeOldMembers, type OldMember } from '../../recovery/fence.js';
import { SafetyCheckError, type StepContext } from '../stepTypes.js';
import { timeoutParam } from './memberCommon.js';

export const str = (v: unknown) => (typeof v === 'string' ? v : '');
/** A member's config (manifests dir or env file) present here is a local member; otherwise it is remote and its steps are printed. */
export const onThisHost = (config: string) => config !== '' && fs.existsSync(config);

/** The restored data dir's default: beside the old one, which stays (fenced). */
export const restoredDataDir = (hostDataDir: string) => `${hostDataDir}-restored`;

/**
 * Refuses, naming them, while other members still answer (assume-dead
 * overrides, recorded). `who` names them, `stop` says how to stop one, `nothing`
 * what was left undone.
 */
export async function refuseWhileOthersAnswer(
  others: OldMember[],
  assumeDead: string[],
  ctx: StepContext,
  words: { who: string; stop: string; nothing: string },
): Promise<void> {
  const r = await probeOldMembers(others, assumeDead);
  for (const a of r.assumedDead)
    ctx.event('override', `assume-dead ${a.member.name}: it answered at ${a.url} but the operator declared it dead`, { url: a.url });
  if (r.alive.length > 0)
    throw new SafetyCheckError(
      `${words.who} still run: ${r.alive.map((a) => `${a.member.name} answers at ${a.url}`).join('; ')}; stop them (${words.stop}), or if they are truly gone pass assume-dead=${r.alive.map((a) => a.member.name).join(',')}; ${words.nothing}`,
      'assume-dead',
    );
}

/**
 * Writes a member's rewritten config file, the original kept first at `original`
 * (once: a resumed run keeps the first); the change is recorded as an `event`
 * with `message` and shown. Returns the diff.
 */
export function writeKeepingOriginal(
  ctx: StepContext,
  event: string,
  message: string,
  f: { file: string; shownAs: string; original: string; before: string; after: string },
): string[] {
  if (!fs.existsSync(f.original)) writeManifestAtomic(f.original, f.before);
  const diff = manifestDiff(f.shownAs, f.before, f.after);
  if (f.after !== f.before) writeManifestAtomic(f.file, f.after);
  ctx.event(event, `${message} (the original kept as ${f.original})`, { file: f.file, original: f.original, diff });
  for (const line of diff) ctx.progress(line);
  return diff;
}

/**
 * The restore's source (the member's own data dir when none is given), the new
 * data dir, and the old data dir to fence: restored from elsewhere (a
 * snapshot), the member's own old data dir is fenced with the source.
 */
export function restoreDirs(hostDataDir: string, p: Record<string, unknown>): { dataDir: string; source: string; oldDataDirs: string[] } {
  const given = str(p.source);
  return {
    dataDir: str(p['data-dir']) || restoredDataDir(hostDataDir),
    source: given || hostDataDir,
    oldDataDirs: given && path.resolve(given) !== path.resolve(hostDataDir) && runtimeOfDataDir(hostDataDir) ? [hostDataDir] : [],
  };
}

/** The parameters of a rejoin step that name the member and the cluster it joins. */
export const joinParams = {
  name: { type: 'string' as const, required: true, description: 'its member name' },
  'peer-url': { type: 'url' as const, required: true, description: 'its peer URL' },
  'client-url': { type: 'url' as const, required: true, description: 'its client URL' },
  'initial-cluster': { type: 'string' as const, required: true, description: 'as add-learner gave it' },
  'superseded-by': { type: 'string' as const, required: true, description: 'the new cluster ID (its old data dir is fenced with it)' },
  timeout: timeoutParam(120_000),
};

/** A rejoin's preflight: a member on this host must have a config that reads. */
export function joinPreflight(p: Record<string, unknown>, config: string, read: (config: string) => unknown): string | undefined {
  if (!onThisHost(config)) return undefined;
  try {
    read(config);
    return undefined;
  } catch (e) {
    return `member ${str(p.name)}: ${(e as Error).message}`;
  }
}

/**
 * Rejoins a member: on this host (its config here) by `joinHere`; on another
 * host by printing `remoteSteps` for its operator. Then waits until it answers.
 */
export async function joinMember(
  p: Record<string, unknown>,
  ctx: StepContext,
  config: string,
  joinHere: () => Promise<void>,
  remoteSteps: () => string[],
): Promise<{ joined: true }> {
  const clientUrl = String(p['client-url']);
  if (!onThisHost(config)) {
    for (const s of remoteSteps()) {
      ctx.progress(`on ${String(p.name)}: ${s}`);
      ctx.event('note', `on ${String(p.name)}'s host: ${s}`);
    }
  } else await joinHere();
  await waitUntil(
    `${String(p.name)} to answer at ${clientUrl}`,
    Number(p.timeout),
    async () => ((await answers(clientUrl, 500)) ? true : undefined),
    250,
    ctx.signal,
  );
  return { joined: true };
}
