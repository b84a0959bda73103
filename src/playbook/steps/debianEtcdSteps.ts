// Steps for a member run by Debian's packaged etcd.service, whose settings are
// the ETCD_* variables of /etc/default/etcd: the kubeadm recovery's steps with
// that file instead of a static pod manifest, and `systemctl stop|start` instead
// of moving manifests. Every change to the file is recorded in the audit log;
// the original is kept beside it; nothing is deleted.
import fs from 'node:fs';
import { manifestDiff, peerCertProblem } from '../../kube/controlPlane.js';
import { DEFAULT_ETCD_ENV_FILE, readDebianEtcd, rewriteDebianEtcd, systemctl, type DebianEtcd } from '../../ops/debianEtcd.js';
import { etcdBinary } from '../../ops/runtime.js';
import { handOverDataDir, lookupServiceUser, type ServiceUser } from '../../ops/supervisor.js';
import { SafetyCheckError, type StepContext, type StepDefinition } from '../stepTypes.js';
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
import {
  fenceForRejoin,
  lastRevisionBeside,
  lastRevisionParams,
  olderSource,
  otherMembers,
  rejoinedDataDir,
  revisionBumpPreview,
  waitEtcdGone,
} from './kubeSteps.js';

const envFileParam = { type: 'path' as const, required: true, description: "the env file of Debian's etcd.service (/etc/default/etcd)" };

/** Debian's etcd.service runs etcd as user etcd: the data dirs it gets are handed to it (when this runs as root and the user exists). */
function etcdServiceUser(): ServiceUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    return lookupServiceUser('etcd');
  } catch {
    return undefined;
  }
}

/** The rewritten env file written (the original kept as FILE.before-lifeboat), the change recorded and shown. */
function writeEnvFile(d: DebianEtcd, text: string, ctx: StepContext, why: string): void {
  writeKeepingOriginal(ctx, 'debian-etcd', `${d.name}: rewrote ${d.file} ${why}`, {
    file: d.file,
    shownAs: d.file,
    original: `${d.file}.before-lifeboat`,
    before: d.text,
    after: text,
  });
}

async function stopUnit(d: DebianEtcd, ctx: StepContext, timeoutMs: number): Promise<void> {
  await systemctl('stop', d.unit);
  ctx.event('debian-etcd', `${d.name}: systemctl stop ${d.unit}`, { unit: d.unit });
  await waitEtcdGone(d, ctx, timeoutMs, `after systemctl stop ${d.unit}`);
}

async function startUnit(d: DebianEtcd, ctx: StepContext): Promise<void> {
  await systemctl('start', d.unit);
  ctx.event('debian-etcd', `${d.name}: systemctl start ${d.unit}`, { unit: d.unit });
  ctx.progress(`systemctl start ${d.unit}`);
}

export const readDebianEtcdStep: StepDefinition = {
  type: 'read-debian-etcd',
  description:
    "Read the member from Debian's etcd.service env file (its name, URLs, data dir, TLS files; the unit's defaults where it is silent); the dry run shows the change to the file as a diff.",
  params: {
    'env-file': envFileParam,
    'data-dir': { type: 'string', default: '', description: 'the new data dir (empty: the old one with -restored appended)' },
    source: { type: 'string', default: '', description: "the survivor's data dir, a snapshot or a backup point STORE@POINT (empty: the file's data dir)" },
    'etcd-bin': { type: 'string', default: '', description: 'the etcd binary (etcdctl beside it restores)' },
    ...lastRevisionParams,
  },
  preflight(p) {
    if (typeof p['env-file'] !== 'string') return undefined;
    try {
      readDebianEtcd(p['env-file']);
      etcdBinary(str(p['etcd-bin']) || undefined);
      return undefined;
    } catch (e) {
      return (e as Error).message;
    }
  },
  describe(p) {
    let d: DebianEtcd;
    try {
      d = readDebianEtcd(String(p['env-file']));
    } catch (e) {
      return [`read ${String(p['env-file'])}: ${(e as Error).message}`];
    }
    const newDir = str(p['data-dir']) || restoredDataDir(d.hostDataDir);
    const after = rewriteDebianEtcd(d, { dataDir: newDir, initialCluster: `${d.name}=${d.initialAdvertisePeerUrls[0]}`, initialClusterState: 'new' });
    return [
      `read ${d.file}: member ${d.name}, data dir ${d.hostDataDir}, unit ${d.unit}`,
      `systemctl stop ${d.unit}; restore ${str(p.source) || d.hostDataDir} into ${newDir} (${d.hostDataDir} stays, fenced); systemctl start ${d.unit}`,
      ...revisionBumpPreview(d, p, 'once etcd is healthy and before any other member rejoins'),
      ...manifestDiff(d.file, d.text, after),
    ];
  },
  async run(p, ctx) {
    const d = readDebianEtcd(String(p['env-file']));
    const { dataDir, source, oldDataDirs } = restoreDirs(d.hostDataDir, p);
    const lastRevision = await lastRevisionBeside(d, source, Number(p['last-revision'] ?? 0), ctx);
    if (lastRevision > 0 && olderSource(source)) ctx.progress(`the cluster's last recorded revision: ${lastRevision} (an older source gets the revision bump)`);
    return {
      name: d.name,
      peerUrl: d.initialAdvertisePeerUrls[0],
      clientUrl: d.advertiseClientUrls[0],
      hostDataDir: d.hostDataDir,
      dataDir,
      source,
      lastRevision,
      oldDataDirs,
      unit: d.unit,
    };
  },
};

export const stopDebianEtcd: StepDefinition = {
  type: 'stop-debian-etcd',
  description:
    "Refuse if another member still answers (assume-dead overrides); then `systemctl stop` the env file's unit and wait until etcd and its ports are gone.",
  params: {
    'env-file': envFileParam,
    'assume-dead': { type: 'list', default: [], description: 'members (names) to treat as dead even if they answer' },
    timeout: { type: 'duration', default: 60_000, description: 'give up after this long' },
  },
  describe: (p) => [`systemctl stop the unit of ${String(p['env-file'])} and wait until etcd has stopped`],
  async run(p, ctx) {
    const d = readDebianEtcd(String(p['env-file']));
    await refuseWhileOthersAnswer(await otherMembers(d, ctx), p['assume-dead'] as string[], ctx, {
      who: 'other members',
      stop: 'systemctl stop etcd on their hosts',
      nothing: 'nothing was stopped',
    });
    await stopUnit(d, ctx, Number(p.timeout));
    return { unit: d.unit };
  },
};

export const writeDebianEtcdEnv: StepDefinition = {
  type: 'write-debian-etcd-env',
  description:
    "Rewrite the env file for the restored member: ETCD_DATA_DIR, ETCD_INITIAL_CLUSTER and ETCD_INITIAL_CLUSTER_STATE, each on its own line, every other byte kept (ETCD_FORCE_NEW_CLUSTER removed); the original is kept beside it. The new data dir is handed to the unit's user etcd.",
  params: {
    'env-file': envFileParam,
    'data-dir': { type: 'path', required: true, description: 'the new data dir' },
    'initial-cluster': { type: 'string', required: true, description: 'name=peerURL,...' },
  },
  describe: (p) => [`rewrite ${String(p['env-file'])}: ETCD_DATA_DIR=${String(p['data-dir'])}, ETCD_INITIAL_CLUSTER_STATE=new`],
  run(p, ctx) {
    const d = readDebianEtcd(String(p['env-file']));
    const dataDir = String(p['data-dir']);
    const text = rewriteDebianEtcd(d, { dataDir, initialCluster: String(p['initial-cluster']), initialClusterState: 'new' });
    if (fs.existsSync(dataDir)) handOverDataDir(dataDir, etcdServiceUser());
    writeEnvFile(d, text, ctx, 'for the restored member');
    return Promise.resolve({ changed: text !== d.text });
  },
};

export const startDebianEtcd: StepDefinition = {
  type: 'start-debian-etcd',
  description: "`systemctl start` the env file's unit.",
  params: { 'env-file': envFileParam },
  describe: (p) => [`systemctl start the unit of ${String(p['env-file'])}`],
  async run(p, ctx) {
    const d = readDebianEtcd(String(p['env-file']));
    await startUnit(d, ctx);
    return { unit: d.unit };
  },
};

/** The steps a rejoining member's operator runs on its host, in order. */
function remoteSteps(p: Record<string, unknown>): string[] {
  const file = str(p['env-file']) || DEFAULT_ETCD_ENV_FILE;
  const dataDir = str(p['node-data-dir']) || '/var/lib/etcd/default';
  const unit = `${file.slice(file.lastIndexOf('/') + 1)}.service`;
  return [
    `systemctl stop ${unit}`,
    `lifeboat datadir fence ${dataDir} --superseded-by ${String(p['superseded-by'])}`,
    `check its ETCD_PEER_CERT_FILE (if any): not expired, its SANs name ${new URL(String(p['peer-url'])).hostname}`,
    `in ${file}: ETCD_DATA_DIR=${rejoinedDataDir(dataDir)} (new, empty, owned by etcd), ETCD_INITIAL_CLUSTER=${String(p['initial-cluster'])}, ETCD_INITIAL_CLUSTER_STATE=existing`,
    `systemctl start ${unit}`,
  ];
}

export const joinDebianEtcdNode: StepDefinition = {
  type: 'join-debian-etcd-node',
  description:
    'Rejoin a member as the learner add-learner made for it: on this host (its env file here), systemctl stop its unit, fence its old data dir, check its peer certificate, rewrite its env file (a new data dir, the new cluster, ETCD_INITIAL_CLUSTER_STATE=existing) and start it; on another host, print these steps. Then wait until it answers.',
  params: {
    'env-file': { type: 'string', default: '', description: 'its env file: on this host, its steps are run; elsewhere (or empty), printed' },
    'node-data-dir': { type: 'string', default: '', description: "a remote member's data dir (this member's: Debian's default is every host's)" },
    ...joinParams,
  },
  preflight: (p) => joinPreflight(p, str(p['env-file']), readDebianEtcd),
  describe: (p) =>
    onThisHost(str(p['env-file']))
      ? [`on this host: systemctl stop ${String(p.name)}'s unit, fence its data dir, rewrite ${String(p['env-file'])} to join, start it`]
      : [
          `print ${String(p.name)}'s steps for its host (its env file ${str(p['env-file']) || DEFAULT_ETCD_ENV_FILE}) and wait for it at ${String(p['client-url'])}`,
        ],
  run(p, ctx) {
    const file = str(p['env-file']);
    const joinHere = async () => {
      const d = readDebianEtcd(file);
      const renew = 'issue it a new one from the etcd CA';
      const cert = d.tls.peerCertFile ? peerCertProblem(d.tls.peerCertFile, String(p['peer-url']), renew) : undefined;
      if (cert) throw new SafetyCheckError(`member ${d.name}: ${cert}`);
      await stopUnit(d, ctx, 60_000);
      const newDir = fenceForRejoin(d, String(p['superseded-by']), ctx);
      handOverDataDir(newDir, etcdServiceUser());
      const text = rewriteDebianEtcd(d, { dataDir: newDir, initialCluster: String(p['initial-cluster']), initialClusterState: 'existing' });
      writeEnvFile(d, text, ctx, 'to join');
      await startUnit(d, ctx);
    };
    return joinMember(p, ctx, file, joinHere, () => remoteSteps(p));
  },
};

export const DEBIAN_ETCD_STEPS = [readDebianEtcdStep, stopDebianEtcd, writeDebianEtcdEnv, startDebianEtcd, joinDebianEtcdNode];
