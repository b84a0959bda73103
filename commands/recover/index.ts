import { Flags } from '#oclif-core';
import { auditDbFlag } from '../../src/cli/auditFlags.js';
import { recoverSession } from '../../src/cli/recoverSession.js';
import { parseBackupSource } from '../../src/backup/backupSource.js';
import { BACKUP_SOURCE_FLAG_NAMES, BACKUP_SOURCE_FLAGS, backupSourceFlagValues, backupSourceSets } from '../../src/cli/backupSourceFlags.js';
import { terminalSessionIo } from '../../src/cli/sessionIo.js';
import type { EtcdFlags } from '../../src/cli/baseCommand.js';
import { InputError } from '../../src/common/errors.js';
import { DEFAULT_MANIFESTS_DIR, readNodeEtcdManifest, withNodeClientTls } from '../../src/kube/controlPlane.js';
import { DEFAULT_ETCD_ENV_FILE, readDebianEtcd, withDebianEtcdTls } from '../../src/ops/debianEtcd.js';
import { runPlaybookSession } from '../../src/playbook/session.js';
import {
  connectionFromFlags,
  flagGiven,
  playbookYesFlag,
  reasonFlag,
  runbookSettings,
  RUNBOOK_SKIP,
  SessionCommand,
  supervisorFlags,
  supervisorFromFlags,
} from '../../src/cli/sessionCommand.js';

/**
 * The one source of --kubeadm or --debian-etcd (none: the member's own data dir);
 * a backup point checked here, in one line, before anything is read.
 */
function oneRecoverySource(
  f: { 'from-data-dir'?: string[]; 'from-snapshot'?: string[]; 'from-backup'?: string[]; 'prefer-backup': boolean },
  flag: string,
  what: string,
): string[] {
  if (f['prefer-backup']) throw new InputError(`--prefer-backup does not go with ${flag}: it recovers from the one source given`);
  for (const b of f['from-backup'] ?? [])
    if (!parseBackupSource(b)) throw new InputError(`--from-backup ${b}: not a store point; give file:///dir@POINT or s3://bucket/prefix@POINT`);
  const sources = [...(f['from-data-dir'] ?? []), ...(f['from-snapshot'] ?? []), ...(f['from-backup'] ?? [])];
  if (sources.length > 1)
    throw new InputError(`${flag} restores one member from one source (${sources.join(', ')} given): every other ${what} rejoins from it`);
  return sources;
}

export default class Recover extends SessionCommand {
  static override description = `The recovery session for a cluster that has lost quorum for good: name the survivors you have, see the plan (which one loses the least, what is kept and lost), confirm, and the recover-from-quorum-loss playbook runs — restore into a new one-member cluster with a new cluster ID, fence the old members, re-add the others one at a time as learners and promote them — every step recorded in the audit log. A backup point is a source too (--from-backup file:///dir@POINT or s3://bucket/prefix@POINT, the store's settings as flags, secrets from the environment or files): it is replayed as 'backup restore --at' does and the recovery goes on from it; an older backup is refused beside a newer survivor unless --prefer-backup. A source older than the cluster's last recorded revision gets the revision bump (mark-compacted; on etcd 3.4 writes to one throwaway key, then a compaction). On a terminal it asks for what it needs; scripted, pass --from-data-dir (or --from-snapshot, --from-backup), --set and --yes. Survivors of different clusters are never offered as a default: it asks which cluster to recover (scripted: refused unless --cluster-id names it). With --kubeadm, on the control-plane node that holds the survivor: everything is read from the node's etcd.yaml (--manifests-dir) and the recover-kubeadm-control-plane playbook runs, over TLS with the node's own etcd client certificate; --dry-run shows every manifest it moves and the change to etcd.yaml as a diff. With --debian-etcd, the same for Debian's packaged etcd: the member is read from etcd.service's env file (--etcd-env-file, default /etc/default/etcd), stopped and started with systemctl, and the file's ETCD_DATA_DIR and ETCD_INITIAL_CLUSTER(_STATE) lines rewritten (the recover-debian-etcd playbook).`;

  static override examples = [
    '<%= config.bin %> recover',
    '<%= config.bin %> recover --from-data-dir /var/lib/lifeboat/m1 --from-data-dir /var/lib/lifeboat/m2',
    '<%= config.bin %> recover --from-data-dir /var/lib/lifeboat/m1 --yes --reason "INC-4711" --set data-dir=/var/lib/lifeboat/m1-new --set client-url=http://10.0.0.1:2379',
    '<%= config.bin %> recover --from-backup s3://backups/etcd@2026-12-01T14:05:00Z --s3-endpoint https://minio:9000 --identity-file key.txt --yes --reason "INC-4711" --set data-dir=/var/lib/lifeboat/m1 --set name=m1 --set peer-url=http://10.0.0.1:2380 --set client-url=http://10.0.0.1:2379',
    '<%= config.bin %> recover --kubeadm --yes --reason "INC-4711" --set members="cp2=https://10.0.0.12:2380,https://10.0.0.12:2379;cp3=https://10.0.0.13:2380,https://10.0.0.13:2379"',
    '<%= config.bin %> recover --debian-etcd --yes --reason "INC-4711" --set members="etcd2=http://10.0.0.12:2380,http://10.0.0.12:2379"',
  ];

  static override flags = {
    'from-data-dir': Flags.string({ description: "a stopped survivor's data dir (repeatable)", multiple: true }),
    'from-snapshot': Flags.string({ description: 'a snapshot file (repeatable)', multiple: true }),
    ...BACKUP_SOURCE_FLAGS,
    'cluster-id': Flags.string({
      description: 'the cluster to recover when the survivors are of different clusters: its ID in hex, as the plan prints it (asked on a terminal)',
    }),
    'discard-uncommitted': Flags.boolean({ description: "drop the entries past the survivor's commit index (by default they are applied)", default: false }),
    kubeadm: Flags.boolean({
      description:
        "a kubeadm control plane: read this node's etcd.yaml and run the recover-kubeadm-control-plane playbook (the source: etcd.yaml's data dir, or one --from-data-dir/--from-snapshot/--from-backup; an older one gets the revision bump before the API server starts)",
      default: false,
    }),
    'debian-etcd': Flags.boolean({
      description:
        "Debian's packaged etcd (etcd.service with --etcd-env-file): read this host's member from that file and run the recover-debian-etcd playbook (the source: its data dir, or one --from-data-dir/--from-snapshot/--from-backup; an older one gets the revision bump)",
      default: false,
      exclusive: ['kubeadm'],
    }),
    // Not --env-file: Node 20 takes that word anywhere on its command line as its own option.
    'etcd-env-file': Flags.string({ description: "with --debian-etcd: etcd.service's env file (default /etc/default/etcd)" }),
    'manifests-dir': Flags.string({ description: "with --kubeadm: this node's static pod manifests dir (default /etc/kubernetes/manifests)" }),
    'dry-run': Flags.boolean({
      description: 'with --kubeadm or --debian-etcd: print every step and every manifest or env file change as a diff; change nothing',
      default: false,
    }),
    'restart-kube-components': Flags.boolean({
      description:
        "with --kubeadm: at the end restart this node's kube-apiserver, controller manager and scheduler (their manifests moved out and back) and wait for /readyz; without it, how to restart them is printed",
      default: false,
    }),
    set: Flags.string({ description: 'a playbook variable, NAME=VALUE (repeatable)', multiple: true, multipleNonGreedy: true }),
    yes: playbookYesFlag,
    reason: reasonFlag,
    'audit-db': auditDbFlag,
    ...supervisorFlags,
  };

  async run(): Promise<void> {
    const { flags, metadata } = await this.parse(Recover);
    if (flags['debian-etcd']) {
      // Debian's etcd.service: its env file gives the playbook everything but the other members.
      if (flags['manifests-dir'] !== undefined || flags['restart-kube-components'])
        throw new InputError('--manifests-dir and --restart-kube-components go with --kubeadm, not --debian-etcd');
      const envFile = flags['etcd-env-file'] ?? DEFAULT_ETCD_ENV_FILE;
      const sources = oneRecoverySource(flags, '--debian-etcd', 'member');
      const sets = [`env-file=${envFile}`, ...sources.map((s) => `source=${s}`), ...backupSourceSets(flags)];
      const connection = withDebianEtcdTls(readDebianEtcd(envFile), connectionFromFlags(flags));
      await this.runHostPlaybook(flags, metadata, 'recover-debian-etcd', sets, connection, ['debian-etcd', 'etcd-env-file']);
      return;
    }
    if (flags['etcd-env-file'] !== undefined) throw new InputError('--etcd-env-file goes with --debian-etcd: add --debian-etcd');
    if (flags.kubeadm) {
      // The kubeadm recovery: the node's etcd.yaml gives the playbook everything but the other nodes, and the client TLS.
      const manifestsDir = flags['manifests-dir'] ?? DEFAULT_MANIFESTS_DIR;
      const sources = oneRecoverySource(flags, '--kubeadm', 'node');
      const manifest = readNodeEtcdManifest(manifestsDir);
      const connection = withNodeClientTls(manifest, connectionFromFlags(flags));
      const sets = [
        `manifests-dir=${manifestsDir}`,
        ...sources.map((s) => `source=${s}`),
        ...backupSourceSets(flags),
        ...(flags['restart-kube-components'] ? ['restart-kube-components=true'] : []),
      ];
      await this.runHostPlaybook(flags, metadata, 'recover-kubeadm-control-plane', sets, connection, ['kubeadm', 'manifests-dir', 'restart-kube-components']);
      return;
    }
    if (flags['manifests-dir'] !== undefined || flags['dry-run'] || flags['restart-kube-components'])
      throw new InputError('--manifests-dir, --dry-run and --restart-kube-components go with --kubeadm: add --kubeadm');
    await this.printSession(
      flags['write-out'],
      recoverSession({
        ...backupSourceFlagValues(flags),
        dataDirs: flags['from-data-dir'] ?? [],
        snapshots: flags['from-snapshot'] ?? [],
        discardUncommitted: flags['discard-uncommitted'],
        ...(flags['cluster-id'] !== undefined ? { clusterId: flags['cluster-id'] } : {}),
        sets: flags.set ?? [],
        yes: flags.yes,
        ...(flags.reason !== undefined ? { reason: flags.reason } : {}),
        ...(flags['audit-db'] !== undefined ? { auditDb: flags['audit-db'] } : {}),
        connection: connectionFromFlags(flags),
        endpoints: flags.endpoints,
        endpointsGiven: flagGiven(metadata, 'endpoints'),
        json: flags['write-out'] === 'json',
        supervisor: supervisorFromFlags(flags),
        runbook: runbookSettings(flags, metadata, [...RUNBOOK_SKIP, 'from-data-dir', 'from-snapshot', 'discard-uncommitted', ...BACKUP_SOURCE_FLAG_NAMES]),
      }),
    );
  }

  /**
   * The --kubeadm and --debian-etcd recoveries: their playbook with `sets`
   * before the operator's --set, over `connection` (the member's own TLS); the
   * runbook leaves out the flags that chose them (`skip`).
   */
  private async runHostPlaybook(
    flags: EtcdFlags<typeof Recover>,
    metadata: Parameters<typeof runbookSettings>[1],
    target: string,
    sets: string[],
    connection: ReturnType<typeof connectionFromFlags>,
    skip: string[],
  ): Promise<void> {
    await this.printSession(
      flags['write-out'],
      runPlaybookSession({
        target,
        sets: [...sets, ...(flags.set ?? [])],
        yes: flags.yes,
        dryRun: flags['dry-run'],
        ...(flags.reason !== undefined ? { reason: flags.reason } : {}),
        ...(flags['audit-db'] !== undefined ? { auditDb: flags['audit-db'] } : {}),
        connection,
        endpoints: flags.endpoints,
        endpointsGiven: flagGiven(metadata, 'endpoints'),
        json: flags['write-out'] === 'json',
        supervisor: supervisorFromFlags(flags),
        runbook: runbookSettings(flags, metadata, [...RUNBOOK_SKIP, 'from-data-dir', 'from-snapshot', ...skip, 'dry-run', ...BACKUP_SOURCE_FLAG_NAMES]),
        io: terminalSessionIo({ json: flags['write-out'] === 'json' }),
      }),
    );
  }
}
