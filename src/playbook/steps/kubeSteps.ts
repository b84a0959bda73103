// Steps for a kubeadm control plane, where etcd is a static pod the kubelet
// runs from /etc/kubernetes/manifests/etcd.yaml: read the node's member from
// that file, stop the control plane by moving its manifests to a directory of
// their own, rewrite etcd.yaml for the restored data dir, move them back, and
// rejoin the other control-plane nodes one at a time. Every move and every
// rewrite is recorded in the audit log; nothing is deleted.
import fs from 'node:fs';
import path from 'node:path';
import { parseIdText, formatId } from '../../common/ids.js';
import { rewriteEtcdManifest, type EtcdManifest } from '../../kube/etcdManifest.js';
import {
  API_SERVER_MANIFEST,
  DEFAULT_MANIFESTS_DIR,
  ETCD_MANIFEST,
  KUBE_COMPONENT_MANIFESTS,
  imageVersionProblem,
  manifestDiff,
  moveManifests,
  peerCertProblem,
  readNodeEtcdManifest,
  stashDirFor,
  writeManifestAtomic,
  type Move,
} from '../../kube/controlPlane.js';
import { apiServerOf, readyz } from '../../kube/apiServer.js';
import { memberList, waitUntil } from '../../ops/memberOps.js';
import { etcdBinary, etcdVersionOf, memberPid, runtimeOfDataDir } from '../../ops/runtime.js';
import { parseBackupSource } from '../../backup/backupSource.js';
import { clientFor } from '../../client/etcdClient.js';
import { etcdDbFile } from '../../etcdfile/etcdDataDir.js';
import { scanEtcdDb } from '../../etcdfile/index.js';
import { etcdRestoreMarksCompacted } from '../../recovery/etcdRestore.js';
import { answers, type OldMember } from '../../recovery/fence.js';
import { planRevisionBump, BUMP_MARGIN } from '../../recovery/revisionBump.js';
import { fenceDataDir } from '../../recovery/fenceDataDir.js';
import { SafetyCheckError, type StepContext, type StepDefinition } from '../stepTypes.js';
import { timeoutParam } from './memberCommon.js';
import {
  joinMember,
  joinParams,
  joinPreflight,
  onThisHost,
  refuseWhileOthersAnswer,
  restoreDirs,
  restoredDataDir,
  str,
  writeKeepingOriginal,
} from './hostMember.js';

const manifestsDirParam = { type: 'path' as const, required: true, description: "the node's static pod manifests dir (kubeadm: /etc/kubernetes/manifests)" };

/** What the recovery reads of a member's configuration, from a static pod manifest or Debian's /etc/default/etcd. */
export type MemberConfig = Pick<EtcdManifest, 'name' | 'flags' | 'hostDataDir' | 'advertiseClientUrls' | 'initialAdvertisePeerUrls'>;

export const rejoinedDataDir = (hostDataDir: string) => `${hostDataDir}-rejoined`;

/** A snapshot file or a backup point: a source that may be older than the cluster was (a data dir is the newest there is). */
export function olderSource(source: string): boolean {
  return !!parseBackupSource(source) || (fs.existsSync(source) && fs.statSync(source).isFile());
}

/** The revision of an etcd db file (a data dir's or a snapshot), read without etcd; undefined when it cannot be read. */
function etcdRevisionOf(file: string): number | undefined {
  try {
    return scanEtcdDb(file).currentRevision;
  } catch {
    return undefined;
  }
}

/**
 * The cluster's last recorded revision beside an older source (a snapshot or a
 * backup point), for the revision bump rule: `last-revision` when given, else
 * the revision of the member's own old data dir (from the member itself while
 * it still runs, else read from its db). 0 for a data-dir source, or when
 * nothing is known (a backup point's store still gives its own).
 */
export async function lastRevisionBeside(m: MemberConfig, source: string, given: number, ctx: StepContext): Promise<number> {
  if (given > 0 || !olderSource(source)) return given > 0 ? given : 0;
  // A running member first: its db on disk may lag its last batch of writes.
  const c = clientFor(m.advertiseClientUrls, { ...ctx.connection, dialTimeoutMs: 2000, commandTimeoutMs: 5000 });
  try {
    return (await c.status()).header.revision;
  } catch {
    return (fs.existsSync(etcdDbFile(m.hostDataDir)) ? etcdRevisionOf(etcdDbFile(m.hostDataDir)) : undefined) ?? 0;
  } finally {
    c.close();
  }
}

/**
 * The dry run's word on the revision: for an older source, what the bump rule
 * will do (the cluster's revisions would otherwise go back), read without etcd.
 */
export function revisionBumpPreview(m: MemberConfig, p: Record<string, unknown>, before: string): string[] {
  const source = str(p.source);
  if (!source || !olderSource(source)) return [];
  const given = Number(p['last-revision'] ?? 0);
  const last = given > 0 ? given : (etcdRevisionOf(etcdDbFile(m.hostDataDir)) ?? 0);
  const from = given > 0 ? 'last-revision' : `${m.hostDataDir}, this member's old data dir`;
  if (parseBackupSource(source))
    return [
      `revision: the backup point is replayed first; older than the cluster's last recorded revision (the store's${last > 0 ? `, or ${last} in ${from}` : ''}), resource versions would go back: the revision is raised to that + ${BUMP_MARGIN} and everything before compacted, ${before}`,
    ];
  const sourceRevision = etcdRevisionOf(source);
  if (sourceRevision === undefined) return [];
  try {
    const plan = planRevisionBump({
      sourceRevision,
      lastRevision: last,
      lastFrom: from,
      markCompacted: marksCompacted(str(p['etcd-bin'])),
      maxWrites: Number(p['max-bump-writes'] ?? 0) || undefined,
    });
    return [plan.method === 'none' ? plan.line : `${plan.line}; ${before}`];
  } catch (e) {
    return [`revision: ${(e as Error).message}`];
  }
}

function marksCompacted(etcdBin: string): boolean {
  try {
    return etcdRestoreMarksCompacted(etcdBin || undefined);
  } catch {
    return false; // no etcd to ask: the preflight says so
  }
}

/** The parameters of the read steps for the revision bump rule. */
export const lastRevisionParams = {
  'last-revision': {
    type: 'int' as const,
    default: 0,
    description: "the cluster's last recorded revision (0: the member's old data dir's, when the source is a snapshot or a backup point)",
  },
  'max-bump-writes': { type: 'int' as const, default: 0, description: 'the largest revision bump by writes (0: the default), for the dry run' },
};

/** The member's own peer URL and the others' in --initial-cluster. */
function initialCluster(m: MemberConfig): Array<{ name: string; peerUrl: string }> {
  return (m.flags.get('initial-cluster') ?? '')
    .split(',')
    .filter(Boolean)
    .map((e) => ({ name: e.slice(0, e.indexOf('=')), peerUrl: e.slice(e.indexOf('=') + 1) }));
}

function recordMoves(ctx: StepContext, node: string, what: string, moves: Move[]): void {
  for (const mv of moves)
    ctx.event('kube-manifest', `${node}: ${mv.moved ? `moved ${mv.from} to ${mv.to}` : `${mv.to} was already there`} (${what})`, {
      from: mv.from,
      to: mv.to,
      moved: mv.moved,
    });
}

/**
 * The other members, to probe before anything moves: as this node's etcd lists
 * them while it still runs (etcd 3.4 answers MemberList without a quorum; the
 * first node kubeadm made has only itself in --initial-cluster), else as
 * --initial-cluster names them.
 */
export async function otherMembers(m: MemberConfig, ctx: StepContext): Promise<OldMember[]> {
  const self = new Set(m.initialAdvertisePeerUrls);
  const fromFlag = initialCluster(m)
    .filter((o) => o.name !== m.name && !self.has(o.peerUrl))
    .map((o) => ({ id: o.name, name: o.name, peerURLs: [o.peerUrl], clientURLs: [] }));
  try {
    const listed = await memberList(m.advertiseClientUrls, { ...ctx.connection, dialTimeoutMs: 2000 });
    const others = listed.filter((x) => !x.peerURLs.some((u) => self.has(u)));
    const names = new Set(others.map((x) => x.name));
    return [
      ...others.map((x) => ({ id: formatId(x.id), name: x.name, peerURLs: x.peerURLs, clientURLs: x.clientURLs })),
      ...fromFlag.filter((o) => !names.has(o.name)),
    ];
  } catch {
    return fromFlag; // this node's etcd does not answer (stopped, or crash-looping)
  }
}

/** Waits until no process holds the data dir and the member's URLs no longer answer; names what still holds them. */
export async function waitEtcdGone(
  m: MemberConfig,
  ctx: StepContext,
  timeoutMs: number,
  how = 'after its manifest was moved away (is the kubelet running?)',
): Promise<void> {
  const urls = [...m.advertiseClientUrls, ...m.initialAdvertisePeerUrls];
  let holder = '';
  try {
    await waitUntil(
      `etcd on ${m.hostDataDir} to stop`,
      timeoutMs,
      async () => {
        const pid = runtimeOfDataDir(m.hostDataDir) === 'etcd' ? memberPid(m.hostDataDir) : undefined;
        const open: string[] = [];
        for (const u of urls) if (await answers(u, 500)) open.push(u);
        holder = [pid ? `pid ${pid} holds ${m.hostDataDir}` : '', open.length ? `${open.join(', ')} still answer` : ''].filter(Boolean).join('; ');
        return holder ? undefined : true;
      },
      250,
      ctx.signal,
    );
  } catch (e) {
    if (ctx.signal.aborted || !holder) throw e;
    throw new Error(
      `etcd did not stop within ${timeoutMs / 1000}s ${how}: ${holder}; does something else (another etcd, a container) hold them? Stop it, then resume`,
    );
  }
}

/** The etcd binary's version, or the one-line reason it does not match the image's; undefined when there is no binary to check. */
function etcdBinCheck(m: EtcdManifest, etcdBin: string): { version?: string; problem?: string } {
  let bin: string;
  try {
    bin = etcdBinary(etcdBin || undefined);
  } catch (e) {
    return {
      problem: `${(e as Error).message} (kubeadm hosts have etcd only in the registry.k8s.io/etcd:${m.imageTag} image: copy its etcd and etcdctl out and give etcd-bin)`,
    };
  }
  const { version } = etcdVersionOf(bin);
  return { version, problem: imageVersionProblem(m.imageTag, version, bin) };
}

export const readKubeadmNode: StepDefinition = {
  type: 'read-kubeadm-node',
  description:
    "Read this node's etcd.yaml (its member name, URLs, data dir and the hostPath under it, TLS files, image tag) and check that etcd-bin is the image's etcd; the dry run shows every manifest the recovery moves and the change to etcd.yaml as a diff.",
  params: {
    'manifests-dir': manifestsDirParam,
    'data-dir': { type: 'string', default: '', description: 'the new data dir on the host (empty: the old one with -restored appended)' },
    source: {
      type: 'string',
      default: '',
      description: "the survivor's data dir, a snapshot or a backup point STORE@POINT (empty: etcd.yaml's data dir on the host)",
    },
    'etcd-bin': { type: 'string', default: '', description: 'the etcd binary matching the image (etcdctl beside it restores)' },
    also: { type: 'list', default: [], description: 'more manifests to stop with the API server (kube-controller-manager.yaml, kube-scheduler.yaml)' },
    ...lastRevisionParams,
  },
  preflight(p) {
    if (typeof p['manifests-dir'] !== 'string') return undefined;
    try {
      const m = readNodeEtcdManifest(p['manifests-dir']);
      return etcdBinCheck(m, str(p['etcd-bin'])).problem;
    } catch (e) {
      return (e as Error).message;
    }
  },
  describe(p) {
    const dir = String(p['manifests-dir']);
    let m: EtcdManifest;
    try {
      m = readNodeEtcdManifest(dir);
    } catch (e) {
      return [`read ${dir}/${ETCD_MANIFEST}: ${(e as Error).message}`];
    }
    const stash = stashDirFor(dir);
    const newDir = str(p['data-dir']) || restoredDataDir(m.hostDataDir);
    const after = rewriteEtcdManifest(m, { hostDataDir: newDir, initialCluster: `${m.name}=${m.initialAdvertisePeerUrls[0]}`, initialClusterState: 'new' });
    const stopped = [API_SERVER_MANIFEST, ...((p.also as string[] | undefined) ?? []), ETCD_MANIFEST];
    return [
      `read ${m.file}: member ${m.name}, data dir ${m.hostDataDir} on the host (${m.dataDir} in the pod), image ${m.image}`,
      ...stopped.map((f) => `move ${path.join(dir, f)} to ${path.join(stash, f)} (stops the pod; moved back at the end)`),
      `restore ${str(p.source) || m.hostDataDir} into ${newDir}; ${m.hostDataDir} stays, fenced`,
      ...revisionBumpPreview(m, p, `once etcd is healthy and before ${API_SERVER_MANIFEST} is moved back`),
      ...manifestDiff(path.join(dir, ETCD_MANIFEST), m.text, after),
    ];
  },
  async run(p, ctx) {
    const m = readNodeEtcdManifest(String(p['manifests-dir']));
    const bin = etcdBinCheck(m, str(p['etcd-bin']));
    if (bin.problem) throw new SafetyCheckError(bin.problem);
    const peerUrl = m.initialAdvertisePeerUrls[0] ?? '';
    const clientUrl = m.advertiseClientUrls[0] ?? '';
    if (!peerUrl || !clientUrl) throw new SafetyCheckError(`${m.file} has no --initial-advertise-peer-urls or --advertise-client-urls: fix the manifest first`);
    ctx.progress(`member ${m.name}: ${clientUrl}, data dir ${m.hostDataDir}, etcd ${m.imageTag} (etcd-bin ${bin.version ?? '?'})`);
    const { dataDir, source, oldDataDirs } = restoreDirs(m.hostDataDir, p);
    const lastRevision = await lastRevisionBeside(m, source, Number(p['last-revision'] ?? 0), ctx);
    if (lastRevision > 0 && olderSource(source)) ctx.progress(`the cluster's last recorded revision: ${lastRevision} (an older source gets the revision bump)`);
    return {
      name: m.name,
      peerUrl,
      clientUrl,
      hostDataDir: m.hostDataDir,
      containerDataDir: m.dataDir,
      dataDir,
      source,
      lastRevision,
      oldDataDirs,
      stashDir: stashDirFor(String(p['manifests-dir'])),
      imageTag: m.imageTag,
      etcdVersion: bin.version ?? '',
    };
  },
};

export const stopKubeadmControlPlane: StepDefinition = {
  type: 'stop-kubeadm-control-plane',
  description:
    "Refuse if another control-plane node's etcd still answers (assume-dead overrides); then move the API server's manifest (and the others asked for) and etcd.yaml to a directory of their own beside the manifests dir, and wait until etcd and its ports are gone.",
  recheckOnResume: { until: ['start-kubeadm-pods'] },
  params: {
    'manifests-dir': manifestsDirParam,
    also: { type: 'list', default: [], description: 'more manifests to stop (kube-controller-manager.yaml, kube-scheduler.yaml)' },
    'assume-dead': { type: 'list', default: [], description: 'members (names) to treat as dead even if they answer' },
    timeout: timeoutParam(60_000),
  },
  describe: (p) => [`move the control plane's manifests out of ${String(p['manifests-dir'])} and wait until etcd has stopped`],
  async run(p, ctx) {
    const dir = String(p['manifests-dir']);
    const m = readNodeEtcdManifest(dir);
    await refuseWhileOthersAnswer(await otherMembers(m, ctx), p['assume-dead'] as string[], ctx, {
      who: "other control-plane nodes' etcd",
      stop: 'move their etcd.yaml out of the manifests dir',
      nothing: 'nothing was moved',
    });
    const moves = moveManifests([API_SERVER_MANIFEST, ...(p.also as string[]), ETCD_MANIFEST], dir, stashDirFor(dir), {
      optional: [...KUBE_COMPONENT_MANIFESTS],
    });
    recordMoves(ctx, m.name, 'stop its pod', moves);
    ctx.progress(`moved ${moves.map((mv) => mv.file).join(', ')} to ${stashDirFor(dir)}; waiting for etcd to stop`);
    await waitEtcdGone(m, ctx, Number(p.timeout));
    return { stashDir: stashDirFor(dir), moved: moves.map((mv) => mv.file) };
  },
};

export const writeKubeadmEtcdManifest: StepDefinition = {
  type: 'write-kubeadm-etcd-manifest',
  description:
    "Rewrite the stopped etcd.yaml for the restored member: the data volume's hostPath, --initial-cluster and --initial-cluster-state, nothing else (text splices, re-read to check; never --force-new-cluster). The original is kept beside it.",
  params: {
    'manifests-dir': manifestsDirParam,
    'host-data-dir': { type: 'path', required: true, description: 'the new data dir on the host' },
    'initial-cluster': { type: 'string', required: true, description: 'name=peerURL,...' },
    state: { type: 'string', default: 'new', description: 'new (the restored member) or existing (a rejoining one)' },
  },
  describe: (p) => [
    `rewrite ${path.join(String(p['manifests-dir']), ETCD_MANIFEST)}: data volume ${String(p['host-data-dir'])}, --initial-cluster-state=${String(p.state)}`,
  ],
  async run(p, ctx) {
    await Promise.resolve();
    const dir = String(p['manifests-dir']);
    const stash = stashDirFor(dir);
    const file = path.join(stash, ETCD_MANIFEST);
    if (!fs.existsSync(file)) throw new Error(`${file} is not there: the control plane was not stopped by this run (stop-kubeadm-control-plane)`);
    const m = readNodeEtcdManifest(dir);
    const state = String(p.state) === 'existing' ? 'existing' : 'new';
    const text = rewriteEtcdManifest(m, { hostDataDir: String(p['host-data-dir']), initialCluster: String(p['initial-cluster']), initialClusterState: state });
    const original = path.join(stash, `${ETCD_MANIFEST}.before-lifeboat`);
    writeKeepingOriginal(ctx, 'kube-manifest', `${m.name}: rewrote ${ETCD_MANIFEST}`, {
      file,
      shownAs: path.join(dir, ETCD_MANIFEST),
      original,
      before: m.text,
      after: text,
    });
    return { file, original, changed: text !== m.text };
  },
};

/** A remote node's manifests moved back, as its operator runs it there. */
function remoteStartLine(p: Record<string, unknown>): string {
  const there = str(p['manifests-dir']) || str(p['node-manifests-dir']) || DEFAULT_MANIFESTS_DIR;
  return `on ${str(p.node) || 'the node'}'s host: mv ${(p.files as string[]).map((f) => path.join(stashDirFor(there), f)).join(' ')} ${there}/`;
}

export const startKubeadmPods: StepDefinition = {
  type: 'start-kubeadm-pods',
  description: 'Move stopped manifests back into the manifests dir, so the kubelet starts their pods again (an empty manifests dir: a remote node, printed).',
  params: {
    'manifests-dir': { type: 'string', default: '', description: "the node's manifests dir (not on this host, or empty: another host's, printed)" },
    'node-manifests-dir': { type: 'string', default: '', description: "a remote node's manifests dir when manifests-dir is empty" },
    files: { type: 'list', required: true, description: 'the manifests to move back (etcd.yaml, kube-apiserver.yaml, ...)' },
    node: { type: 'string', default: '', description: 'the node, for messages' },
  },
  describe: (p) => [
    onThisHost(str(p['manifests-dir'])) ? `move ${(p.files as string[]).join(', ')} back into ${str(p['manifests-dir'])}` : `print: ${remoteStartLine(p)}`,
  ],
  run(p, ctx) {
    const dir = str(p['manifests-dir']);
    const files = p.files as string[];
    if (!onThisHost(dir)) {
      const line = remoteStartLine(p);
      ctx.event('note', line);
      ctx.progress(line);
      return Promise.resolve({ moved: [] });
    }
    const moves = moveManifests(files, stashDirFor(dir), dir, { optional: KUBE_COMPONENT_MANIFESTS.filter((f) => f !== API_SERVER_MANIFEST) });
    recordMoves(ctx, str(p.node) || dir, 'start its pod', moves);
    ctx.progress(`moved ${moves.map((mv) => mv.file).join(', ')} back into ${dir}`);
    return Promise.resolve({ moved: moves.map((mv) => mv.file) });
  },
};

/**
 * The steps a rejoining node's operator runs on its host, in order, with its
 * manifests dir (as `members` gives it, else this node's: kubeadm lays every
 * node out alike) and its data dir (this node's: kubeadm-config's
 * etcd.local.dataDir is the cluster's).
 */
function remoteJoinSteps(p: Record<string, unknown>): string[] {
  const by = String(p['superseded-by']);
  const dir = str(p['manifests-dir']) || str(p['node-manifests-dir']) || DEFAULT_MANIFESTS_DIR;
  const dataDir = str(p['node-data-dir']) || '/var/lib/etcd';
  const stash = stashDirFor(dir);
  return [
    `mkdir -p ${stash} && mv ${path.join(dir, API_SERVER_MANIFEST)} ${path.join(dir, ETCD_MANIFEST)} ${stash}/`,
    `lifeboat datadir fence ${dataDir} --superseded-by ${by}`,
    `check ${path.join(path.dirname(path.resolve(dir)), 'pki/etcd/peer.crt')} (or its etcd.yaml's --peer-cert-file): not expired, its SANs name ${new URL(String(p['peer-url'])).hostname} (else: kubeadm init phase certs etcd-peer)`,
    `in ${path.join(stash, ETCD_MANIFEST)}: the etcd-data volume's hostPath to ${rejoinedDataDir(dataDir)} (new, empty), --initial-cluster=${String(p['initial-cluster'])}, --initial-cluster-state=existing`,
    `mv ${path.join(stash, ETCD_MANIFEST)} ${dir}/`,
  ];
}

/**
 * A stopped member about to rejoin: its old data dir fenced, and the new, empty
 * one (its old one with -rejoined appended) made. A config already naming the
 * new dir is a resumed run's: its old dir was fenced then.
 */
export function fenceForRejoin(m: MemberConfig, supersededBy: string, ctx: StepContext): string {
  const by = parseIdText(supersededBy);
  if (by === undefined || by === 0n) throw new Error(`superseded-by ${supersededBy} is not a cluster ID`);
  const resumed = m.hostDataDir.endsWith('-rejoined');
  const oldDir = resumed ? m.hostDataDir.slice(0, -'-rejoined'.length) : m.hostDataDir;
  if (fs.existsSync(oldDir) && fs.readdirSync(oldDir).length > 0) {
    const f = fenceDataDir(oldDir, by);
    ctx.event('fence', `fenced ${oldDir} (${f.runtime}, superseded by ${formatId(by)})`, { dataDir: oldDir, member: m.name });
  }
  const newDir = rejoinedDataDir(oldDir);
  if (!resumed && fs.existsSync(newDir) && fs.readdirSync(newDir).length > 0)
    throw new SafetyCheckError(`member ${m.name}: ${newDir} is not empty; move it aside, then resume`);
  fs.mkdirSync(newDir, { recursive: true, mode: 0o700 });
  return newDir;
}

export const joinKubeadmNode: StepDefinition = {
  type: 'join-kubeadm-node',
  description:
    'Rejoin a control-plane node as the learner add-learner made for it: on this host, stop its static pods, fence its old data dir, check its peer certificate, rewrite its etcd.yaml (a new data dir, the new cluster, --initial-cluster-state=existing) and move it back; on another host, print these steps. Then wait until it answers.',
  params: {
    'manifests-dir': {
      type: 'string',
      default: '',
      description: 'its manifests dir: on this host, its steps are run; not on this host (or empty), the node is remote and its steps are printed with it',
    },
    'node-manifests-dir': { type: 'string', default: '', description: "a remote node's manifests dir when manifests-dir is empty (this node's)" },
    'node-data-dir': { type: 'string', default: '', description: "a remote node's etcd data dir (this node's: kubeadm-config's etcd.local.dataDir)" },
    ...joinParams,
  },
  preflight: (p) => joinPreflight(p, str(p['manifests-dir']), readNodeEtcdManifest),
  describe: (p) =>
    onThisHost(str(p['manifests-dir']))
      ? [`on this host: stop ${String(p.name)}'s pods (${String(p['manifests-dir'])}), fence its data dir, rewrite its etcd.yaml to join, start it`]
      : [...remoteJoinSteps(p).map((l) => `on ${String(p.name)}'s host: ${l}`), `wait for ${String(p.name)} at ${String(p['client-url'])}`],
  run(p, ctx) {
    const dir = str(p['manifests-dir']);
    const joinHere = async () => {
      const m = readNodeEtcdManifest(dir);
      const cert = m.tls.peerCertFile ? peerCertProblem(m.tls.peerCertFile, String(p['peer-url'])) : undefined;
      if (cert) throw new SafetyCheckError(`member ${m.name}: ${cert}`);
      const stash = stashDirFor(dir);
      recordMoves(ctx, m.name, 'stop its pod', moveManifests([API_SERVER_MANIFEST, ETCD_MANIFEST], dir, stash, { optional: [API_SERVER_MANIFEST] }));
      await waitEtcdGone(m, ctx, 60_000);
      const newDir = fenceForRejoin(m, String(p['superseded-by']), ctx);
      const text = rewriteEtcdManifest(m, { hostDataDir: newDir, initialCluster: String(p['initial-cluster']), initialClusterState: 'existing' });
      const original = path.join(stash, `${ETCD_MANIFEST}.before-lifeboat`);
      if (!fs.existsSync(original)) writeManifestAtomic(original, m.text);
      writeManifestAtomic(path.join(stash, ETCD_MANIFEST), text);
      ctx.event('kube-manifest', `${m.name}: rewrote ${ETCD_MANIFEST} to join (the original kept as ${original})`, {
        diff: manifestDiff(m.file, m.text, text),
      });
      recordMoves(ctx, m.name, 'start its pod', moveManifests([ETCD_MANIFEST], stash, dir));
    };
    return joinMember(p, ctx, dir, joinHere, () => remoteJoinSteps(p));
  },
};

/**
 * Waits until this node's kube-apiserver answers 200 on /readyz. Etcd is
 * already recovered when this runs, so a timeout is a warning with what the
 * API server last said, not a failure.
 */
async function waitApiServerReady(dir: string, ctx: StepContext, timeoutMs: number): Promise<{ ready: boolean; url?: string }> {
  const api = apiServerOf(dir);
  if (!api) {
    ctx.progress(`no ${API_SERVER_MANIFEST} in ${dir}: no API server to wait for`);
    return { ready: false };
  }
  const started = Date.now();
  let last: { status: number; body: string } | undefined;
  try {
    await waitUntil(
      `kube-apiserver at ${api.url} to be ready`,
      timeoutMs,
      async () => {
        last = (await readyz(api)) ?? last;
        return last?.status === 200 ? true : undefined;
      },
      500,
      ctx.signal,
    );
  } catch (e) {
    if (ctx.signal.aborted) throw e;
    const said = last ? `its /readyz last answered ${last.status} ${last.body}` : 'it did not answer';
    ctx.event('warning', `kube-apiserver at ${api.url} not ready within ${timeoutMs / 1000}s (${said}): etcd is recovered; check the API server's log`, {
      url: api.url,
    });
    return { ready: false, url: api.url };
  }
  ctx.progress(`kube-apiserver at ${api.url} ready (/readyz 200 after ${((Date.now() - started) / 1000).toFixed(1)}s)`);
  ctx.event('note', `kube-apiserver at ${api.url} ready`, { url: api.url });
  return { ready: true, url: api.url };
}

export const waitApiServerReadyStep: StepDefinition = {
  type: 'wait-kube-apiserver-ready',
  description:
    "Wait until this node's kube-apiserver (its manifest's --advertise-address and --secure-port) answers 200 on /readyz; a node without kube-apiserver.yaml has nothing to wait for, and a timeout is a warning (etcd is already recovered).",
  params: {
    'manifests-dir': manifestsDirParam,
    timeout: timeoutParam(120_000),
  },
  describe: (p) => [`wait for ${apiServerOf(String(p['manifests-dir']))?.url ?? "this node's kube-apiserver"}/readyz to answer 200`],
  run: (p, ctx) => waitApiServerReady(String(p['manifests-dir']), ctx, Number(p.timeout)),
};

export const finishKubeadmRecovery: StepDefinition = {
  type: 'finish-kubeadm-recovery',
  description:
    "Say what Kubernetes needs after the restore: every kube-apiserver, controller manager, scheduler (and kubelet) restarted, their watch caches hold the old revisions (done on this host with restart-kube-components); and the kubeadm-config ConfigMap's etcd.local.dataDir change, without which `kubeadm upgrade` would put the old, fenced data dir back.",
  params: {
    'manifests-dir': manifestsDirParam,
    'old-data-dir': { type: 'path', required: true, description: 'the data dir etcd.yaml had' },
    'data-dir': { type: 'path', required: true, description: 'the restored data dir' },
    source: { type: 'string', default: '', description: 'the recovery source' },
    'bumped-to': { type: 'int', default: 0, description: 'the revision the bump raised the cluster to (0: none)' },
    'restart-kube-components': { type: 'bool', default: false, description: "restart this node's API server, controller manager and scheduler" },
    'restart-wait': { type: 'duration', default: 25_000, description: 'how long their manifests stay away (the kubelet reads the dir every 20 s)' },
    'ready-timeout': timeoutParam(120_000),
  },
  describe: (p) => [
    `${p['restart-kube-components'] ? 'restart' : 'say how to restart'} the kube components; print the kubeadm-config change (etcd.local.dataDir: ${String(p['old-data-dir'])} -> ${String(p['data-dir'])})`,
  ],
  async run(p, ctx) {
    const dir = String(p['manifests-dir']);
    const [oldDir, newDir] = [String(p['old-data-dir']), String(p['data-dir'])];
    const source = str(p.source);
    const bumpedTo = Number(p['bumped-to'] ?? 0);
    if (source && olderSource(source))
      ctx.event(
        'warning',
        bumpedTo > 0
          ? `restored from ${source}: the keys went back in time, the revision did not (raised to ${bumpedTo}, everything before compacted), so watchers relist; the watch caches still hold newer objects until the components below restart`
          : `restored from ${source}: the cluster went back in time, so resource versions went back too; every client of the API servers must relist (restarting the components below does it)`,
      );
    const kubectl = `kubectl -n kube-system edit cm kubeadm-config   # in ClusterConfiguration: etcd.local.dataDir: ${oldDir}  ->  ${newDir}`;
    ctx.event('kubeadm-config', `kubeadm upgrade regenerates etcd.yaml from the kubeadm-config ConfigMap; change its data dir with: ${kubectl}`, {
      oldDataDir: oldDir,
      dataDir: newDir,
      choice: 'print-configmap-change',
    });
    ctx.progress(`kubeadm-config: ${kubectl}`);
    const restart =
      'restart every kube-apiserver, kube-controller-manager, kube-scheduler and kubelet (their watch caches hold the old revisions): on each control-plane node move their manifests out of /etc/kubernetes/manifests and back after 20 s, then systemctl restart kubelet on every node';
    if (p['restart-kube-components']) {
      const here = KUBE_COMPONENT_MANIFESTS.filter((f) => fs.existsSync(path.join(dir, f)));
      recordMoves(ctx, 'this node', 'restart its pod', moveManifests(here, dir, stashDirFor(dir)));
      await new Promise((r) => setTimeout(r, Number(p['restart-wait'])));
      recordMoves(ctx, 'this node', 'restart its pod', moveManifests(here, stashDirFor(dir), dir));
      ctx.event('note', `restarted ${here.join(', ')} on this node; on the other nodes: ${restart}`);
      ctx.progress(`restarted ${here.join(', ')} on this node`);
      if (here.includes(API_SERVER_MANIFEST)) await waitApiServerReady(dir, ctx, Number(p['ready-timeout']));
    } else ctx.event('note', restart);
    ctx.progress(restart);
    return { restarted: !!p['restart-kube-components'] };
  },
};

export const KUBE_STEPS = [
  readKubeadmNode,
  stopKubeadmControlPlane,
  writeKubeadmEtcdManifest,
  startKubeadmPods,
  waitApiServerReadyStep,
  joinKubeadmNode,
  finishKubeadmRecovery,
];
