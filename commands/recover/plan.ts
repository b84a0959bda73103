import { Flags } from '#oclif-core';
import { EtcdCommand } from '../../src/cli/baseCommand.js';
import { runbookSettings } from '../../src/cli/sessionCommand.js';
import { BACKUP_SOURCE_FLAG_NAMES, BACKUP_SOURCE_FLAGS, backupSourceSets, resolveBackupPoints } from '../../src/cli/backupSourceFlags.js';
import { shellQuote } from '../../src/common/memberCommand.js';
import { formatOverview, formatPlan, MixedClustersError, planRecovery, type PlanOverview, type RecoveryPlan } from '../../src/recovery/plan.js';

export default class RecoverPlan extends EtcdCommand {
  static override description = `Compare every survivor you have (Lifeboat or etcd data dirs), strictly read-only, and recommend the one that loses the least (highest last term, then index). Sources of different clusters (different cluster IDs) are never compared: the plan groups them by cluster and refuses to choose between clusters (exit 3, showing what each holds) until you name one with --cluster-id; it then compares only that cluster's sources, and Lost lists the other clusters' keys. For each source: cluster and member IDs, members, last term and index, commit and applied index, KV revision, key count and hash, and the entries past the commit index. A backup point (--from-backup STORE@POINT, read from the store's catalog) is compared with the survivors of its cluster by revision: which holds more and what each choice loses; it is recommended only when it holds more (or with --prefer-backup), and the revision bump an older source gets is shown. Says what is kept and what would be lost, and prints the command that applies the plan, with the connection flags given here (--user, --password-file, --cacert, --cert, --key, …; --user root when the source has etcd's auth enabled).`;

  static override examples = [
    '<%= config.bin %> recover plan --from-data-dir /var/lib/lifeboat/m1 --from-data-dir /var/lib/lifeboat/m2',
    '<%= config.bin %> recover plan --from-data-dir /var/lib/lifeboat/m1 --from-inspect m3.inspect.json --from-snapshot /backups/latest.db -w json',
    '<%= config.bin %> recover plan --from-data-dir /var/lib/lifeboat/m1 --from-data-dir /mnt/old-disk/m1 --cluster-id 8e9e05c52164694d',
    '<%= config.bin %> recover plan --from-data-dir /var/lib/lifeboat/m1 --from-backup s3://backups/etcd@latest',
  ];

  static override flags = {
    'from-data-dir': Flags.string({ description: "a stopped survivor's data dir (repeatable)", multiple: true }),
    'from-inspect': Flags.string({
      description: "the 'datadir inspect -w json' output of a survivor on another host (repeatable)",
      multiple: true,
    }),
    'wal-dir': Flags.string({
      description:
        'an etcd data dir\'s separate WAL directory (etcd\'s --wal-dir): one for the only --from-data-dir, or one per --from-data-dir in order ("" for none)',
      multiple: true,
    }),
    'from-snapshot': Flags.string({ description: 'a snapshot file (repeatable)', multiple: true }),
    ...BACKUP_SOURCE_FLAGS,
    'cluster-id': Flags.string({
      description: 'the cluster to recover, when the sources are of different clusters: its ID in hex, as the plan prints it (only its sources are compared)',
    }),
    'discard-uncommitted': Flags.boolean({
      description: "plan to drop the entries past the survivor's commit index (by default they are applied: the old leader may have acknowledged them)",
      default: false,
    }),
  };

  async run(): Promise<void> {
    const { flags, metadata } = await this.parse(RecoverPlan);
    let plan: RecoveryPlan;
    try {
      plan = await planRecovery({
        dataDirs: flags['from-data-dir'] ?? [],
        walDirs: flags['wal-dir'] ?? [],
        inspectFiles: flags['from-inspect'] ?? [],
        snapshots: flags['from-snapshot'] ?? [],
        backups: await resolveBackupPoints(flags, flags['cluster-id']),
        preferBackup: flags['prefer-backup'],
        discardUncommitted: flags['discard-uncommitted'],
        ...(flags['cluster-id'] !== undefined ? { clusterId: flags['cluster-id'] } : {}),
      });
    } catch (e) {
      // Refused (exit 3, one line on stderr) after showing what each cluster holds, to choose from.
      if (e instanceof MixedClustersError) this.print(flags['write-out'], { ...e.overview, refused: e.message }, (o: PlanOverview) => formatOverview(o));
      throw e;
    }
    // The command applying the plan connects as the run will: the connection flags given here, and root's where the source has auth.
    const runbook = runbookSettings(flags, metadata, [
      'from-data-dir',
      'from-inspect',
      'wal-dir',
      'from-snapshot',
      'discard-uncommitted',
      'cluster-id',
      'write-out',
      ...BACKUP_SOURCE_FLAG_NAMES,
    ]);
    const best = plan.sources[plan.recommended];
    if ((best?.report?.authEnabled || best?.snapshot?.etcd?.authEnabled) && flags.user === undefined) {
      runbook.flags.push('--user', 'root');
      runbook.env.push('LIFEBOAT_PASSWORD');
    }
    const storeSets = plan.sources[plan.recommended]?.backup ? backupSourceSets(flags) : [];
    if (storeSets.length > 0) plan.command = `${plan.command} ${storeSets.map((s) => `--set ${shellQuote(s)}`).join(' ')}`;
    if (runbook.flags.length > 0) plan.command = `${plan.command} ${runbook.flags.map((w) => shellQuote(w)).join(' ')}`;
    if (runbook.env.length > 0) plan.command = `${plan.command}   # secrets from the environment: ${runbook.env.join(', ')}`;
    this.print(flags['write-out'], plan, (p: RecoveryPlan) => formatPlan(p));
  }
}
